"""The effects of one fitted test (diagnosis/evidence.py) on hand-built all-pairs
matrices fitted by the real model: well under a second each."""

import numpy as np

from diagnosis_layouts import AllPairsBandwidth

from fabscope_analysis.diagnosis import evidence
from fabscope_analysis.diagnosis.model import Layout, PairData, fit

Q = 0.01


def _layout(leaf_of_host, gpus=2) -> Layout:
    n = len(leaf_of_host) * gpus
    host = np.arange(n) // gpus
    nl = max(leaf_of_host) + 1
    return Layout(n, host, np.asarray(leaf_of_host)[host], [f"host{h:03d}" for h in range(len(leaf_of_host))],
                  [f"leaf{x}" for x in range(nl)], {r: r % gpus for r in range(n)},
                  {r: f"mlx5_{r % gpus}" for r in range(n)}, gpus)


def test_a_slow_uplink_is_found_when_the_last_leaf_holds_one_host():
    """Leaves of 2, 2, 2, 2 and 1 hosts: no pair between hosts inside the last leaf, so
    the fit has no class term for it (its classes end one short of leaves x leaves), as
    on a cluster whose last leaf is not full. Leaf 0's uplink, 1.35x slow (log 0.3) on
    every pair through it, is still found by the leaves that have pairs inside."""
    lay = _layout([0, 0, 1, 1, 2, 2, 3, 3, 4])
    s, r = np.array([(i, j) for i in range(lay.n) for j in range(lay.n)
                     if lay.host[i] != lay.host[j]]).T
    rng = np.random.default_rng(4)
    through = (lay.leaf[s] == 0) != (lay.leaf[r] == 0)
    y = -20.0 - 0.6 * (lay.leaf[s] == lay.leaf[r]) + 0.3 * through + rng.normal(0.0, 0.02, len(s))
    data = PairData(AllPairsBandwidth(), s, r, y, np.full(len(s), 20), np.zeros(len(s)), symmetric=False,
                    bandwidth=True)
    f = fit(data, lay)
    nl = len(lay.leaf_names)
    assert len(f.cls_effect) == nl * nl   # class 0 (same host) and every leaf pair but 4 -> 4
    found = evidence.leaves(f, lay, 1.0, Q)
    assert [e.key for e in found] == [(0,)], [(e.key, e.ratio) for e in found]
    assert abs(found[0].ratio - np.exp(0.3)) < 0.03, found[0].ratio


def test_a_class_measured_by_one_pair_counts_in_the_leaf_contrasts():
    """Four leaves, every pair between leaf 0 and another leaf slow by log 0.3 (its uplink).
    A sparse design (a ring, a thinned matrix) can measure a class by one pair; such a
    class's term is its one pair, read like any other: leaf 0's contrast is the same 0.3
    from one pair a class as from ten, and only its standard error grows (sqrt(10))."""
    nl, shift, sigma = 4, 0.3, 0.05
    t = np.zeros((nl, nl))
    t[0, 1:] = t[1:, 0] = shift
    many, ses_many = evidence._leaf_contrasts(t, np.full((nl, nl), 10.0), sigma)
    one, ses_one = evidence._leaf_contrasts(t, np.ones((nl, nl)), sigma)
    assert np.allclose(one, [shift, 0.0, 0.0, 0.0]) and np.allclose(many, one), (one, many)
    assert np.allclose(ses_one, ses_many * np.sqrt(10.0)), (ses_one, ses_many)


def test_a_sides_deviations_at_its_effect_all_count_toward_the_count_tail():
    """The empirical test's count tail asks how many of a rank's deviations are at or above
    the bar (its effect, when that is below the practical margin), the same 'at or above'
    the null's share is counted with. A rank whose three pairs all deviate by exactly its
    effect (0.1, quantized times do that) has three such deviations against a null share
    at the floor (0.5 of the 20 others'): p = 2 x share^3, not the median tail's 2 x P(>= 2)."""
    others = np.zeros(20)
    mine = np.full(3, 0.1)
    values = np.r_[others, mine]
    owner = np.r_[np.zeros(20, dtype=np.int64), np.full(3, 5)]
    null = (np.sort(values), values, owner)
    share = 0.5 / 20
    p = evidence._median_tail_p(null, 0.1, 3, 5)
    assert np.isclose(p, 2 * share ** 3), p
