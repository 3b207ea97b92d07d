"""diagnose against noise that is not a fault, and the faults that hide in it: a host
pair whose samples stall (loss on one path) is a culprit; the same stalls in one slot
(a burst of another tenant) are not; every decision inside the false-discovery budget.
Hand-built files (synthetic.write_matrix_run) and hand-built fits."""

import numpy as np

from fabscope_analysis.diagnose import diagnose
from fabscope_analysis.diagnosis import tails
from fabscope_analysis.diagnosis.model import Fit, PairData
from fabscope_analysis.reader import open_result
from synthetic import write_matrix_run

# The emulated case: 8 hosts of one rank, a host pair stalling 7 of its 60 samples.
SPREAD = [3, 11, 19, 27, 38, 45, 52]        # over the pass: a lossy path
IN_A_ROW = list(range(20, 27))              # one slot: a burst


def _diagnose(path):
    with open_result(path, warn_incomplete=False) as result:
        return diagnose(result)


def test_a_host_pair_whose_samples_stall_over_the_pass_is_named(tmp_path):
    path = tmp_path / "lossy-path.h5"
    write_matrix_run(path, nranks=8, iterations=60, seed=4, stall_iters={(2, 5): SPREAD})
    d = _diagnose(path)
    pairs = [c for c in d.culprits if c.component == "host-pair"]
    assert d.verdict == "not fit" and len(d.culprits) == 1, d.lines()
    assert {pairs[0].host, pairs[0].peer_host} == {"fh2", "fh5"}, d.lines()
    assert any("stall" in s for s in pairs[0].symptoms), d.lines()


def test_the_same_stalls_in_one_slot_name_nobody(tmp_path):
    path = tmp_path / "burst.h5"
    write_matrix_run(path, nranks=8, iterations=60, seed=4, stall_iters={(2, 5): IN_A_ROW})
    d = _diagnose(path)
    assert not d.culprits, d.lines()


def _one_way_lossy_fit(n=40, seed=3):
    """A bandwidth test of n ranks: rank 0 stalls on every pair it sends (a lossy send
    side), 5 of its 39 pairs stall as it receives, the fabric stalls 3 % of the pairs."""
    rng = np.random.default_rng(seed)
    s, r = np.nonzero(~np.eye(n, dtype=bool))
    beyond = np.zeros(len(s), dtype=np.int64)
    beyond[s == 0] = 3
    rest = np.flatnonzero((s != 0) & (r != 0))
    beyond[rng.choice(rest, 45, replace=False)] = 1
    beyond[np.flatnonzero(r == 0)[:5]] = 3
    data = PairData(None, s, r, np.zeros(len(s)), np.full(len(s), 20), beyond, symmetric=False,
                    bandwidth=True)
    zero = np.zeros(n)
    return Fit(data, 0.0, np.zeros(2), zero, zero.copy(), np.zeros(len(s)), 0.1,
               np.bincount(s, minlength=n), np.bincount(r, minlength=n))


def test_the_other_side_of_a_lossy_nic_is_inside_the_budget():
    # its receive side's p (about 0.02) passes an unadjusted 5 % but not the family's
    # Benjamini-Hochberg bar of a run of two tests (0.05 / 16)
    fit = _one_way_lossy_fit()
    found = {e.key for e in tails.tail_sides(fit, np.arange(40), 0.05 / 16)}
    assert found == {(0, "send")}
    # a follow-up strong enough still joins: every pair it receives stalls too
    fit.data.beyond[fit.data.r == 0] = 3
    found = {e.key for e in tails.tail_sides(fit, np.arange(40), 0.05 / 16)}
    assert found == {(0, "send"), (0, "receive")}


def _counted(tmp_path, name, counts):
    """8 healthy hosts of one rank whose counter `name` rose by counts[host] in the run."""
    path = tmp_path / f"{name}.h5"
    rows = [(r, "sysfs:mlx5_0/1", name, 100, 100 + counts.get(r, 0)) for r in range(8)]
    write_matrix_run(path, nranks=8, iterations=30, seed=6, counters=rows)
    return _diagnose(path)


def test_error_counters_name_a_host_only_by_a_rate_test_against_the_others(tmp_path):
    # one symbol error on each of two hosts of eight: nothing stands out
    d = _counted(tmp_path, "symbol_error", {2: 1, 5: 1})
    assert d.verdict == "fit" and not d.culprits, d.lines()
    # forty on one host, at most one on the others: that host
    d = _counted(tmp_path, "symbol_error", {3: 40, 1: 1, 6: 1})
    assert [c.host for c in d.culprits] == ["fh3"], d.lines()
    # a congestion counter (discards) as high names nobody: the fabric's load, not a part
    d = _counted(tmp_path, "port_rcv_discards", {3: 40, 1: 1, 6: 1})
    assert not d.culprits, d.lines()


def test_a_retest_slow_only_while_a_burst_lasts_confirms_nothing(tmp_path):
    # the pair is slow in the parallel pass and in the first 8 of its 10 retest
    # iterations (another tenant's burst), then as fast as the controls: not a fault
    controls = [(s, d) for s in range(8) for d in range(8) if s != d and 0 not in (s, d)
                and 3 not in (s, d)][:12]
    path = tmp_path / "burst-retest.h5"
    write_matrix_run(path, nranks=8, link={(0, 3): 0.25}, seed=3, retest=[(0, 3)],
                     controls=controls, retest_burst={(0, 3): 8})
    d = _diagnose(path)
    assert not any("ap-bw" in s for c in d.culprits for s in c.symptoms), d.lines()
    bw = [c for c in d.congestion if c.test.endswith("ap-bw")]
    assert bw and bw[0].cleared_alone == 1, d.lines()
