"""Local ranks slow on most hosts (diagnosis/systemic.py) on hand-built pair tables
fitted by the real model: well under a second each."""

import numpy as np

from diagnosis_layouts import AllPairsBandwidth

from fabscope_analysis.diagnosis import systemic
from fabscope_analysis.diagnosis.model import Layout, PairData, fit

Q = 0.01


def test_with_one_rank_per_host_a_gpu_index_is_no_local_rank():
    """Nine hosts, one rank each, the ranks on GPUs 0, 1, 2, 0, 1, 2, ... (as FABSCOPE_GPU
    said), the three ranks on GPU 2 sending at 60 %. With one rank per host a GPU index
    groups hosts, not positions on a host: those are three slow hosts, each its own
    finding, never a local rank's placement."""
    n = 9
    lay = Layout(n, np.arange(n), np.zeros(n, dtype=np.int64), [f"host{h}" for h in range(n)], ["leaf0"],
                 {r: r % 3 for r in range(n)}, {r: "mlx5_0" for r in range(n)}, 1)
    s, r = np.array([(i, j) for i in range(n) for j in range(n) if i != j]).T
    rng = np.random.default_rng(2)
    y = -20.0 + np.log(1 / 0.6) * (s % 3 == 2) + rng.normal(0.0, 0.02, len(s))
    f = fit(PairData(AllPairsBandwidth(), s, r, y, np.full(len(s), 20), np.zeros(len(s)), symmetric=False,
                     bandwidth=True), lay)
    assert np.allclose(f.send[[2, 5, 8]] - np.median(f.send), np.log(1 / 0.6), atol=0.05), f.send
    assert systemic.local_ranks(f, lay, 1.0, Q) == []



def test_two_ranks_per_host_are_enough_for_a_local_rank_of_a_one_way_test():
    """Nine ranks on five hosts of two slots (the last host holds one), every second rank
    of a host sending at 60 %. A one-way test's effects are judged per side, two local
    ranks a side: four groups, of which local rank 1's send stands out of the other three
    (local rank 0 holds most ranks, so the median is its level). At two ranks a host the
    placement is still one local-rank finding over its four hosts."""
    hosts, per_host, n = 5, 2, 9
    lay = Layout(n, np.arange(n) // per_host, np.zeros(n, dtype=np.int64),
                 [f"host{h}" for h in range(hosts)], ["leaf0"],
                 {r: r % per_host for r in range(n)}, {r: "mlx5_0" for r in range(n)}, per_host)
    s, r = np.array([(i, j) for i in range(n) for j in range(n) if i != j]).T
    rng = np.random.default_rng(2)
    y = -20.0 + np.log(1 / 0.6) * (s % per_host == 1) + rng.normal(0.0, 0.02, len(s))
    f = fit(PairData(AllPairsBandwidth(), s, r, y, np.full(len(s), 20), np.zeros(len(s)), symmetric=False,
                     bandwidth=True), lay)
    found = systemic.local_ranks(f, lay, 1.0, Q)
    assert [e.key for e in found] == [(1, "send")], found
    assert found[0].pairs == 4 and abs(found[0].ratio - 1 / 0.6) < 0.05, found
