"""Links inside one host named together (diagnosis/host_inside.py): at least half of a
host's inside GPU pairs slow is the host, once, not a link per pair; a latency-only
slowness is said to be a cost per message."""

import dataclasses
import re
from types import SimpleNamespace

import numpy as np

from diagnosis_layouts import regular_layout

from fabscope_analysis.diagnose import diagnose
from fabscope_analysis.diagnosis.host_inside import name_hosts_from_inside_links
from fabscope_analysis.diagnosis.result import HOST, LINK, Culprit
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
    # the count alone is no evidence: the statistics of one of the host's links come with it
    assert len(hosts[0].evidence) == 2, hosts[0].evidence
    assert re.fullmatch(r"residual z=[\d.]+, q=\S+ after both ends' effects", hosts[0].evidence[1]), \
        hosts[0].evidence


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


def test_the_host_lists_each_ranks_gpu_and_minus_one_for_a_rank_without_one():
    """Three of host 1's GPU pairs named as links, of the three it measured: the host,
    its ranks' GPUs from /ranks, -1 (as every finding writes it) for rank 5 whose GPU
    /ranks does not give."""
    full = regular_layout(4, 4, 1)
    lay = dataclasses.replace(full, gpu={r: g for r, g in full.gpu.items() if r != 5})
    pairs = [(4, 5), (4, 6), (5, 7)]
    s, r = np.array(pairs).T
    test = SimpleNamespace(measure="centre", label="0001 lat", fit=SimpleNamespace(
        data=SimpleNamespace(s=s, r=r, bandwidth=False), resid=np.full(3, 0.5)))
    links = [Culprit(host="host001", ranks=[a, b], gpus=[], nics=[], direction="link", symptoms=[],
                     evidence=[f"residual of {a}-{b}"], confidence="medium", score=0.8, component=LINK)
             for a, b in pairs]
    out = SimpleNamespace(culprits=list(links), hosts=set())
    name_hosts_from_inside_links(lay, [test], out)
    [host] = out.culprits
    assert (host.component, host.host, host.ranks, host.gpus) == (HOST, "host001", [4, 5, 6, 7], [0, -1, 2, 3])
    assert host.evidence[1:] == ["residual of 4-5"] and out.hosts == {1}


# 12 hosts x 4 GPUs; hosts differ in their cost per message: each host's inside pairs
# slower by its own factor, the slowest host's 1.45x about two of the hosts' spreads
# out (a fleet, not a fault)
HOST_LEVEL = [0.8, 0.85, 0.9, 0.95, 1.0, 1.0, 1.05, 1.1, 1.15, 1.2, 1.3, 1.45]


def _fleet(tmp_path, level, extra=None):
    inside = {}
    for h, f in enumerate(level):
        for a in range(4 * h, 4 * h + 4):
            for b in range(a + 1, 4 * h + 4):
                inside[(a, b)] = f * (extra or {}).get((a, b), 1.0)
    path = tmp_path / "fleet.h5"
    write_matrix_run(path, nranks=48, ranks_per_host=4, pair_noise=0.03, seed=7, iterations=10,
                     latency_link=inside)
    with open_result(path, warn_incomplete=False) as result:
        return diagnose(result)


def test_a_host_within_the_spread_of_hosts_inside_levels_is_not_named_its_bad_pair_is(tmp_path):
    """The slowest host of a spread fleet is a note with its level against the hosts',
    not a host or six links; a pair slower than its own host's inside pairs (ranks 12-13
    on host 3, 2.2x its host) is still a link. Without the hosts' spread the slowest hosts
    are named, host by host."""
    d = _fleet(tmp_path, HOST_LEVEL, extra={(12, 13): 2.2})
    hosts = [c.host for c in d.culprits if c.component == HOST]
    assert not hosts, d.lines()
    links = sorted(tuple(sorted(c.ranks)) for c in d.culprits if c.component == LINK)
    assert links == [(12, 13)], d.lines()
    [note] = [n for n in d.notes if n.startswith("fh11: ")]
    level = float(re.search(r"their level ([\d.]+)x the typical host's in \S+ ap-lat", note).group(1))
    assert 1.3 <= level <= 1.5, note      # 1.45 over the fleet's typical 1.0-1.05
    assert "over the 12 hosts" in note and "not named" in note


def test_a_host_far_outside_the_spread_of_hosts_inside_levels_is_named_once(tmp_path):
    d = _fleet(tmp_path, HOST_LEVEL[:-1] + [2.6])
    hosts = [c for c in d.culprits if c.component == HOST]
    assert [c.host for c in hosts] == ["fh11"], d.lines()
    assert not [c for c in d.culprits if c.component == LINK], d.lines()
