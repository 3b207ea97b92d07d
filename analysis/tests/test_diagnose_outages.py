"""diagnose dates an outage or a flap from the samples' own timestamps (outages.py).

Hand-built: a clean synthetic run of 8 hosts x 2 GPUs (all-pairs, 20 iterations), then
samples stalled in the file as a port down would stall them: the sample in flight when
the port went down ends when it is back. One 1.5 s stall is a `link` finding dated to
the stalled sample's span; three stalls of one rank with three peers, seconds apart, a
flapping NIC of that rank; the untouched run has no outage finding; and 60 stalls of
0.2 s spread over the run (a lossy path's retransmission timeouts, not a port down)
make a tail in which the longest is no outage.
"""
import contextlib
import dataclasses
import io
import math

import h5py
import numpy as np
import pandas as pd
import pytest

from diagnosis_layouts import regular_layout

from fabscope_analysis.diagnose import diagnose
from fabscope_analysis.diagnosis import outages
from fabscope_analysis.reader import open_result
from fabscope_analysis.synth import Cluster, generate


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    path = tmp_path_factory.mktemp("outages") / "clean.h5"
    generate(path, Cluster(8, 2, 2), noise="realistic", seed=4)
    return path


def _bandwidth_group(f):
    for name, g in f["tests"].items():
        if g.attrs.get("metric") in (b"bandwidth", "bandwidth") and \
                g.attrs.get("pass") in (b"parallel", "parallel"):
            return g
    raise AssertionError("no parallel bandwidth pass")


def _stall(path, out, picks):
    """Copy `path` to `out` with each (row picker, seconds) stalling one sample: its
    t_done moves later by the seconds. Returns the stalled rows (rank, peer, post, done)."""
    out.write_bytes(path.read_bytes())
    stalled = []
    with h5py.File(out, "r+") as f:
        samples = _bandwidth_group(f)["samples"]
        rows = samples[...]
        for pick, seconds in picks:
            i = pick(rows)
            rows["t_done_ns"][i] += int(seconds * 1e9)
            stalled.append((int(rows["rank"][i]), int(rows["peer"][i]), int(rows["t_post_ns"][i]),
                            int(rows["t_done_ns"][i])))
        samples[...] = rows
    return stalled


def _diagnose(path):
    with open_result(path) as result, contextlib.redirect_stdout(io.StringIO()):
        d = diagnose(result)
        _, _, zero = outages.stalls_of(result)
    return d, zero


def _dated(d):
    return [c for c in d.culprits if c.window_s]


def test_a_clean_run_has_no_outage(clean):
    d, _ = _diagnose(clean)
    assert not _dated(d), d.lines()


def test_one_stalled_sample_is_a_link_down_dated_to_its_span(clean, tmp_path):
    stalled = _stall(clean, tmp_path / "one.h5", [(lambda r: len(r) // 2, 1.5)])
    d, zero = _diagnose(tmp_path / "one.h5")
    found = _dated(d)
    assert len(found) == 1, d.lines()
    c = found[0]
    rank, peer, post, done = stalled[0]
    assert c.component == "link" and sorted(c.ranks) == sorted([rank, peer]), c.line()
    assert abs(c.window_s[0] - (post - zero) / 1e9) < 1e-6
    assert abs(c.window_s[1] - (done - zero) / 1e9) < 1e-6
    assert "down from +" in c.symptoms[0] and "1 sample stalled" in c.symptoms[0]
    assert d.verdict == "not fit"


def test_an_outage_start_is_known_from_when_either_end_was_last_seen_up(clean, tmp_path):
    """A sample stalled in the middle of the pass: `window_error_s` is the span its start
    is known to, from the last completion of a sample with either rank at either end (the
    port was up then) to the stalled sample's post plus its pair's typical time."""
    def middle(rows):
        return int(np.argsort(rows["t_post_ns"], kind="stable")[len(rows) // 2])
    stalled = _stall(clean, tmp_path / "middle.h5", [(middle, 1.5)])
    d, zero = _diagnose(tmp_path / "middle.h5")
    found = _dated(d)
    assert len(found) == 1, d.lines()
    c = found[0]
    rank, peer, post, _ = stalled[0]
    seen_up, typical = _last_seen_up_and_typical(tmp_path / "middle.h5", rank, peer, post)
    assert 0 < post - seen_up < 1e9
    assert c.window_error_s == pytest.approx((post - seen_up) / 1e9 + typical, rel=1e-9)
    assert f"the start between +{(seen_up - zero) / 1e9:.4f} s (last seen up)" in c.symptoms[0], c.line()


def _last_seen_up_and_typical(path, rank, peer, post):
    """Recomputed from the bandwidth pass's measured samples: the last completion before
    `post` of a sample with either rank at either end, and the median time of the pair's
    samples of the stalled one's size."""
    with h5py.File(path, "r") as f:
        rows = _bandwidth_group(f)["samples"][...]
    rows = rows[rows["peer"] >= 0]
    ends = np.isin(rows["rank"], [rank, peer]) | np.isin(rows["peer"], [rank, peer])
    seen_up = int(rows["t_done_ns"][ends & (rows["t_done_ns"] <= post)].max())
    mine = (rows["rank"] == rank) & (rows["peer"] == peer)
    size = rows["bytes"][mine & (rows["t_post_ns"] == post)][0]
    own = rows[mine & (rows["bytes"] == size)]
    return seen_up, float(np.median(own["t_done_ns"] - own["t_post_ns"])) / 1e9


def test_stalls_of_one_rank_with_several_peers_are_a_flapping_nic(clean, tmp_path):
    with h5py.File(clean, "r") as f:
        rows = _bandwidth_group(f)["samples"][...]
    victim = 3
    mine = np.flatnonzero((rows["rank"] == victim) | (rows["peer"] == victim))
    peers = {}
    for i in mine:  # the first sample with each of three peers, apart in time
        other = int(rows["peer"][i] if rows["rank"][i] == victim else rows["rank"][i])
        if other not in peers and len(peers) < 3:
            peers[other] = int(i)
    picks = [(lambda r, i=i: i, 0.4) for i in peers.values()]
    _stall(clean, tmp_path / "flap.h5", picks)
    d, _ = _diagnose(tmp_path / "flap.h5")
    found = _dated(d)
    assert len(found) == 1, d.lines()
    c = found[0]
    assert c.component == "nic" and c.ranks == [victim], c.line()
    assert "flapping" in c.symptoms[0] and "3 samples stalled" in c.symptoms[0], c.line()


def test_many_long_stalls_make_a_tail_in_which_the_longest_is_no_outage(clean, tmp_path):
    rng = np.random.default_rng(7)
    with h5py.File(clean, "r") as f:
        n = len(_bandwidth_group(f)["samples"])
    picks = [(lambda r, i=int(i): i, float(s))
             for i, s in zip(rng.choice(n, 60, replace=False), rng.uniform(0.2, 0.6, 60))]
    _stall(clean, tmp_path / "tail.h5", picks)
    d, _ = _diagnose(tmp_path / "tail.h5")
    assert not _dated(d), d.lines()


def test_tail_p_is_small_only_for_a_stall_far_beyond_the_tail():
    body = list(np.linspace(2e-4, 1e-4, outages.REFERENCE + 1))  # a light tail below 0.2 ms
    p = outages.tail_p([1.0] + [5e-4] * (outages.CANDIDATES - 1) + body, 100_000)
    assert p[0] < 1e-4 and np.all(p[1:] > 0.05), p


def test_tail_p_is_the_hill_fitted_pareto_tails_count_of_samples_at_or_beyond_each_stall():
    """The 32 stalls below the 8 candidates, over the smallest of them u, give the Pareto
    index alpha = 32 / sum(ln(x / u)) (Hill; at most 3); a candidate's p is how many of
    the 40 stalls such a tail puts at or beyond it, (8 + 32) x (x / u)^-alpha, at most 1.
    No tail without more samples than stalls."""
    # a heavy tail: ln(x / u) = ln 100 x (1 - i / 32) for i = 0..31, sum 16.5 ln 100; alpha 0.421
    body = np.geomspace(1e-2, 1e-4, outages.REFERENCE + 1)
    stalls = [10.0, 5.0] + [0.02] * (outages.CANDIDATES - 2) + list(body)
    alpha = outages.REFERENCE / float(np.sum(np.log(body[:-1] / 1e-4)))
    assert alpha == pytest.approx(32 / (16.5 * math.log(100)))
    p = outages.tail_p(stalls, 100_000)
    x = np.array(stalls[:outages.CANDIDATES])
    assert p == pytest.approx(np.minimum(1.0, 40 * (x / 1e-4) ** -alpha))
    assert p[0] == pytest.approx(40 * 1e5 ** -alpha) and p[-1] == 1.0
    assert np.isnan(outages.tail_p(stalls, len(stalls))).all()
    assert np.isfinite(outages.tail_p(stalls, len(stalls) + 1)).all()


def test_a_hole_with_no_sample_in_flight_is_the_whole_run_stopped(clean, tmp_path):
    """Every sample from the middle of the pass on starts 2 s later: the ranks waited for
    each other between rounds with nothing in flight (a port down while they synchronised,
    or a rank stopped), which stalls no sample. The hole is a finding of the whole run,
    dated to the hole."""
    out = tmp_path / "hole.h5"
    out.write_bytes(clean.read_bytes())
    with h5py.File(out, "r+") as f:
        samples = _bandwidth_group(f)["samples"]
        rows = samples[...]
        cut = int(np.median(rows["t_post_ns"]))
        before = rows["t_done_ns"][rows["t_post_ns"] < cut].max()
        later = rows["t_post_ns"] >= cut
        rows["t_post_ns"][later] += 2_000_000_000
        rows["t_done_ns"][later] += 2_000_000_000
        resumed = rows["t_post_ns"][later].min()
        samples[...] = rows
    d, zero = _diagnose(out)
    found = _dated(d)
    assert len(found) == 1 and found[0].component == "fabric", d.lines()
    assert abs(found[0].window_s[0] - (before - zero) / 1e9) < 1e-6, found[0].line()
    assert abs(found[0].window_s[1] - (resumed - zero) / 1e9) < 1e-6, found[0].line()
    assert "no sample was in flight on any rank" in found[0].symptoms[0]


def test_a_hole_of_one_nanosecond_is_a_hole_of_the_timeline():
    """_gaps: every span with nothing in flight counts, down to one nanosecond, and the
    largest is reported beyond the median hole: holes of 1, 1 and 968 ns give the 968 ns
    one as 967 ns beyond a typical 1 ns (from its last completion, 32, to the next post)."""
    post = np.array([0, 11, 22, 1000], dtype=np.int64)
    done = np.array([10, 21, 32, 1010], dtype=np.int64)
    gaps = sorted(outages._gaps(post, done, "0001 lat", 0), key=lambda g: -g.excess_s)
    assert len(gaps) == 3
    big = gaps[0]
    assert (big.rank, big.t_post_ns, big.t_done_ns, big.seen_up_ns) == (-1, 32, 1000, 32)
    assert big.typical_s == pytest.approx(1e-9) and big.excess_s == pytest.approx(967e-9)


def test_a_stall_is_an_outage_from_50_ms_beyond_its_pairs_typical_time(clean, tmp_path):
    """MIN_STALL_S: a sample stalled 70 ms (far beyond the run's tail, and past 50 ms) is
    a link down; 30 ms, as far beyond the tail, is a hiccup and names nothing."""
    for seconds, named in ((0.07, 1), (0.03, 0)):
        _stall(clean, tmp_path / "short.h5", [(lambda r: len(r) // 2, seconds)])
        d, _ = _diagnose(tmp_path / "short.h5")
        assert len(_dated(d)) == named, (seconds, d.lines())


class _NoStartInstance:
    """A test instance of a file without t_start_ns: pair (0, 1) from 0 ns, then pair
    (2, 3), whose first sample (posted at 500 ns) stalls 1 ms."""
    index = 1

    def get(self, key, default=None):
        return {"name": "lat"}.get(key, default)

    def samples(self):
        post = np.r_[np.arange(0, 500, 50), np.arange(500, 1500, 100)]
        done = post + 40
        done[10] += 1_000_000
        rank, peer = np.r_[np.zeros(10), np.full(10, 2)], np.r_[np.ones(10), np.full(10, 3)]
        return pd.DataFrame({"rank": rank.astype(int), "peer": peer.astype(int), "flags": 0,
                             "bytes": 8, "t_post_ns": post, "t_done_ns": done})


def test_without_a_test_start_a_stall_on_its_ends_first_sample_was_last_seen_up_at_the_first_post(monkeypatch):
    """stalls_of: with no earlier completion on either end, a candidate's ends were last
    known up when the test began; without t_start_ns that is its first sample's post (0),
    not the stalled sample's own post (500)."""
    monkeypatch.setattr(outages, "_pair_instances", lambda result: [_NoStartInstance()])
    stalls, count, zero = outages.stalls_of(None)
    top = stalls[0]
    assert (top.rank, top.peer, top.t_post_ns, top.seen_up_ns) == (2, 3, 500, 0)
    assert zero == 0 and count == 20 + 10    # 20 samples, and the 10 holes of 10 ns before the stall


class _ThreePairsInstance:
    """Pairs 4 -> 0 (1 us a sample), 0 -> 1 (100 ns) and 1 -> 3 (40 ns), 10 samples each,
    one after the other. Peers up to 3: a pair's key rank x 4 + peer keeps 4 -> 0 (16)
    and 0 -> 1 (1) apart, as rank / 4 + peer would not (1 both)."""
    index = 1

    def get(self, key, default=None):
        return {"name": "lat"}.get(key, default)

    def samples(self):
        took = np.repeat([1000, 100, 40], 10)
        post = np.r_[0, np.cumsum(took + 10)[:-1]]
        rank, peer = np.repeat([4, 0, 1], 10), np.repeat([0, 1, 3], 10)
        return pd.DataFrame({"rank": rank, "peer": peer, "flags": 0, "bytes": 8, "t_post_ns": post,
                             "t_done_ns": post + took})


def test_a_samples_stall_is_measured_from_its_own_pairs_median_time(monkeypatch):
    """stalls_of: every sample of a pair that always takes the same time stalls by nothing,
    its typical time its own pair's, never another pair's."""
    monkeypatch.setattr(outages, "_pair_instances", lambda result: [_ThreePairsInstance()])
    stalls, _, _ = outages.stalls_of(None)
    own = {(4, 0): 1e-6, (0, 1): 1e-7, (1, 3): 4e-8}
    samples = [x for x in stalls if x.rank >= 0]
    assert samples
    for x in samples:
        assert (x.typical_s, x.excess_s) == (pytest.approx(own[(x.rank, x.peer)]), 0.0), x


def test_a_link_down_lists_each_ends_gpu_and_minus_one_for_an_end_without_one():
    """One stalled pair (ranks 4 -> 9) is the link between them: both ends' GPUs from
    /ranks, -1 (as every finding writes it) for rank 4 whose GPU /ranks does not give."""
    full = regular_layout(8, 2, 2)
    lay = dataclasses.replace(full, gpu={r: g for r, g in full.gpu.items() if r != 4})
    stall = outages.Stall(4, 9, 3_000_000_000, 4_500_000_000, 1.5, 1e-5, "0001 bw", 2_900_000_000, p=1e-9)
    c = outages._event_culprit([stall], lay, 1_000_000_000, None)
    assert (c.component, c.ranks, c.gpus, c.nics) == ("link", [4, 9], [-1, 1], ["mlx5_0", "mlx5_1"])
    assert (c.host, c.peer_host, c.window_s) == ("host002", "host004", [2.0, 3.5])


def test_a_flapping_nic_lists_minus_one_for_a_rank_without_a_gpu():
    """Rank 4 stalls with two peers: the NIC of rank 4, whose GPU /ranks does not give,
    listed as -1 as every finding writes it; with the GPU given, that GPU."""
    full = regular_layout(8, 2, 2)
    lay = dataclasses.replace(full, gpu={r: g for r, g in full.gpu.items() if r != 4})
    flap = [outages.Stall(4, peer, start, start + 500_000_000, 0.5, 1e-5, "0001 bw", start - 1, p=1e-9)
            for peer, start in ((9, 3_000_000_000), (12, 5_000_000_000))]
    c = outages._event_culprit(flap, lay, 1_000_000_000, None)
    assert (c.component, c.ranks, c.gpus, c.nics) == ("nic", [4], [-1], ["mlx5_0"])
    assert outages._event_culprit(flap, full, 1_000_000_000, None).gpus == [full.gpu[4]]


def test_a_flap_is_one_event_while_each_stall_follows_the_last_within_the_gap():
    """Rank 3's stalls with three peers, each posted 7 s after the one before it ended
    (FLAP_GAP_S is 10 s), the last 16 s after the first ended: one flapping event of three,
    the gap measured from the group's latest end, not its first."""
    s = 1_000_000_000

    def stall(peer, start_s):
        return outages.Stall(3, peer, start_s * s, (start_s + 1) * s, 1.0, 1e-5, "t", start_s * s)

    chain = [stall(1, 0), stall(5, 8), stall(6, 17)]
    assert outages._events(chain) == [chain]
    # the same stalls with the last one 11 s after the second ended: two events
    apart = [stall(1, 0), stall(5, 8), stall(6, 20)]
    assert outages._events(apart) == [apart[:2], apart[2:]]
