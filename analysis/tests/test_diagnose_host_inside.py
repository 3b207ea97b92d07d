"""Links inside one host named together (diagnosis/host_inside.py): at least half of a
host's inside GPU pairs slow is the host, once, not a link per pair; a latency-only
slowness is said to be a cost per message."""

import re

from fabscope_analysis.diagnose import diagnose
from fabscope_analysis.diagnosis.result import HOST, LINK
from fabscope_analysis.reader import open_result
from synthetic import write_matrix_run

# 4 hosts x 4 GPUs: host fh1 holds ranks 4-7, 6 GPU pairs inside it
INSIDE = [(a, b) for a in range(4, 8) for b in range(a + 1, 8)]


def _diagnose(tmp_path, **kw):
    path = tmp_path / "run.h5"
    write_matrix_run(path, nranks=16, ranks_per_host=4, pair_noise=0.03, seed=5, **kw)
    with open_result(path, warn_incomplete=False) as result:
        return diagnose(result)


def test_every_pair_inside_a_host_slow_in_latency_only_is_the_host_once(tmp_path):
    d = _diagnose(tmp_path, latency_link={pair: 1.6 for pair in INSIDE})
    inside = [c for c in d.culprits if c.component == LINK and c.host == c.peer_host]
    assert not inside, [c.line() for c in inside]
    hosts = [c for c in d.culprits if c.component == HOST]
    assert [c.host for c in hosts] == ["fh1"], d.lines()
    text = "; ".join(hosts[0].symptoms)
    assert "6 of the 6 GPU pairs inside the host slow" in text
    ratio = float(re.search(r"latency of its inside pairs ([\d.]+)x", text).group(1))
    assert 1.45 <= ratio <= 1.65, text   # planted 1.6x, less what the ranks' effects take
    assert "a cost per message on the host" in text and "bandwidth of its inside pairs typical" in text
    assert hosts[0].ranks == [4, 5, 6, 7] and hosts[0].direction == "both"


def test_inside_pairs_slow_in_bandwidth_too_are_the_host_without_the_per_message_word(tmp_path):
    link = {}
    for a, b in INSIDE:
        link[(a, b)] = link[(b, a)] = 0.5
    d = _diagnose(tmp_path, link=link)
    hosts = [c for c in d.culprits if c.component == HOST]
    assert [c.host for c in hosts] == ["fh1"], d.lines()
    assert "a cost per message" not in "; ".join(hosts[0].symptoms)
    assert not [c for c in d.culprits if c.component == LINK], d.lines()


def test_two_slow_pairs_inside_a_host_stay_links(tmp_path):
    d = _diagnose(tmp_path, latency_link={(4, 5): 1.6, (6, 7): 1.6})
    links = sorted(tuple(sorted(c.ranks)) for c in d.culprits if c.component == LINK)
    assert links == [(4, 5), (6, 7)], d.lines()
    assert not [c for c in d.culprits if c.component == HOST]
