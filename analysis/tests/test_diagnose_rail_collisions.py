"""A leaf on a rail-optimized fabric: collision spread is not a slow leaf
(diagnosis/evidence.py, leaves and _shifted_in_mean), on a hand-built all-pairs matrix
fitted by the real model: under a second each.

On a rail-optimized fabric NIC g of every host sits on leaf (rail) g, so nearly every
pair between leaves crosses a spine, and ECMP collisions slow close to half of them.
A class of pairs (one ordered pair of leaves) then has its median in the fast cluster
or in the slow one as its share of collided pairs falls either side of one half. In the
validation world (8 hosts x 8 GPUs, rails, clean) three rails whose classes drew a few
more collisions than the others read 1.3x by their class medians and were named. Here
every class between leaves has 25 of its 56 pairs collided (1.8x), except the classes
of leaves 3, 5 and 6, which have 29: their medians are slow, their means a little so.
A slow leaf, whose every pair moves and the mean with them, is still named
(test_diagnose_sparse.py's slow uplink through the raw class medians). On a rail a
leaf is one local rank on every host: a leaf slow between leaves is mostly its ranks'
effect in the fit there (systemic.py's finding).
"""

import math

import numpy as np

from diagnosis_layouts import AllPairsBandwidth

from fabscope_analysis.diagnosis import evidence
from fabscope_analysis.diagnosis.model import Layout, PairData, fit

HOSTS, GPUS = 8, 8
COLLIDED = math.log(1.8)
HOT = (3, 5, 6)


def _rail_layout() -> Layout:
    n = HOSTS * GPUS
    host, local = np.arange(n) // GPUS, np.arange(n) % GPUS
    return Layout(n, host, local, [f"host{h:03d}" for h in range(HOSTS)],
                  [f"leaf{x}" for x in range(GPUS)], {r: r % GPUS for r in range(n)},
                  {r: f"mlx5_{r % GPUS}" for r in range(n)}, GPUS)


def _data(lay: Layout, slow_leaf=None, factor: float = 1.0) -> PairData:
    """Every ordered rank pair: within a host fast (NVLink), inside a leaf typical,
    between leaves 25 or 29 of each 56 pairs of a class collided (45 % or 52 %: see the
    module), and every pair between `slow_leaf` and another leaf slowed `factor`."""
    s, r = np.array([(i, j) for i in range(lay.n) for j in range(lay.n) if i != j]).T
    rng = np.random.default_rng(11)
    y = -20.0 + rng.normal(0.0, 0.01, len(s)) - 1.0 * (lay.host[s] == lay.host[r])
    leaf_s, leaf_r = lay.leaf[s], lay.leaf[r]
    between = (leaf_s != leaf_r) & (lay.host[s] != lay.host[r])
    nl = len(lay.leaf_names)
    for a in range(nl):
        for b in range(nl):
            cell = np.flatnonzero(between & (leaf_s == a) & (leaf_r == b))
            if len(cell):
                hot = a in HOT or b in HOT
                share = 29 / 56 if hot else 25 / 56
                y[rng.permutation(cell)[:int(round(share * len(cell)))]] += COLLIDED
    if slow_leaf is not None:
        y[between & ((leaf_s == slow_leaf) | (leaf_r == slow_leaf))] += math.log(factor)
    return PairData(AllPairsBandwidth(), s, r, y, np.full(len(s), 20), np.zeros(len(s)), symmetric=False,
                    bandwidth=True)


def test_rails_that_drew_a_few_more_collisions_are_no_slow_leaves():
    lay = _rail_layout()
    data = _data(lay)
    hot_class = (lay.leaf[data.s] == 3) & (lay.leaf[data.r] == 0) & (lay.host[data.s] != lay.host[data.r])
    assert np.median(data.logt[hot_class]) > -20.0 + 0.5 * COLLIDED   # in the slow cluster
    assert evidence.leaves(fit(data, lay), lay, 1.0, 0.05) == []
