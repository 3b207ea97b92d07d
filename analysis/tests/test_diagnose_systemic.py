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
