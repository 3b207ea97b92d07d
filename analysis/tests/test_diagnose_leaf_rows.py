"""A leaf named because every host in it stands out (diagnosis/leaf_rows.py), on a
hand-built all-pairs matrix fitted by the real model: well under a second each.

The fit's class terms are per ordered pair of leaves, so a shift of every send effect
of one leaf's ranks and the opposite shift of that leaf's row of class terms fit the
pairs between hosts alike. The polish can settle on such a split (the validation
world's clean fabric oversubscribed 2:1 did, in 4 runs of 10): both hosts of the leaf
then stand out while the leaf's raw pairs are typical. The same split applied by hand
here must name nothing; a leaf whose senders are slow in the raw pairs is the leaf.
Nor must collisions that slow just over half of one leaf's pairs and just under half of
the others': the leaf's class medians jump to the slow cluster, its means do not.
"""

import dataclasses

import numpy as np
import pytest
from scipy.stats import norm

from diagnosis_layouts import AllPairsBandwidth, regular_layout

from fabscope_analysis.diagnosis import evidence, leaf_rows, rules
from fabscope_analysis.diagnosis.model import Layout, PairData, fit
from fabscope_analysis.diagnosis.result import LEAF

Q = 0.01


def _layout(hosts=8, gpus=4, leaves=4) -> Layout:
    return regular_layout(hosts, gpus, leaves)


def _data(lay: Layout, slow_senders_of_leaf0: float = 0.0, seed: int = 3) -> PairData:
    """Every ordered pair between hosts (none within a host, so nothing pins the split):
    pairs inside a leaf 0.6 faster than between leaves, a 2 % noise, and leaf 0's senders
    slowed by `slow_senders_of_leaf0` (log) on every pair."""
    s, r = np.array([(i, j) for i in range(lay.n) for j in range(lay.n)
                     if lay.host[i] != lay.host[j]]).T
    rng = np.random.default_rng(seed)
    y = -20.0 - 0.6 * (lay.leaf[s] == lay.leaf[r]) + rng.normal(0.0, 0.02, len(s)) \
        + slow_senders_of_leaf0 * (lay.leaf[s] == 0)
    return PairData(AllPairsBandwidth(), s, r, y, np.full(len(s), 20), np.zeros(len(s)), symmetric=False,
                    bandwidth=True)


def _split(f, lay: Layout, shift: float):
    """The same fit with leaf 0's send effects raised by `shift` and its row of class
    terms lowered as much: every pair between hosts predicted as before."""
    nl = len(lay.leaf_names)
    send = f.send + shift * (lay.leaf == 0)
    cls = f.cls_effect.copy()
    cls[1:1 + nl] -= shift      # classes 1 + 0 * nl + x: leaf 0 to leaf x
    return dataclasses.replace(f, send=send, cls_effect=cls)


def _evidence(f, lay: Layout) -> rules.TestEvidence:
    sides, _ = evidence.side_effects(f, 1.0, Q, lay.leaf)
    return rules.TestEvidence(f, "centre", sides=sides, leaf_rows=leaf_rows.raw_rows(f, lay, 1.0, Q))


def test_a_split_of_the_fit_into_one_leafs_senders_names_no_leaf():
    lay = _layout()
    f = fit(_data(lay), lay)
    split = _split(f, lay, 0.25)
    pred = lambda g: g.mu + g.cls_effect[lay.classes()[g.data.s, g.data.r]] + g.send[g.data.s] \
        + g.recv[g.data.r]
    assert np.allclose(pred(split), pred(f))
    t = _evidence(split, lay)
    # the split makes every rank of leaf 0 stand out on send, none beyond its leaf
    flagged = {e.key for e in t.sides}
    assert flagged == {(r, "send") for r in np.flatnonzero(lay.leaf == 0)}, flagged
    assert not any(e.beyond_leaf for e in t.sides)
    ratio, z, _, stands_out, finds = t.leaf_rows["send"][0]
    assert abs(ratio - 1.0) < 0.01 and not stands_out and finds < 1.08, t.leaf_rows["send"][0]
    out = rules.name_components(lay, [t], Q)
    assert out.culprits == [], [c.subject() for c in out.culprits]
    assert any("every host of leaf0 stands out" in n and "not named" in n for n in out.notes), out.notes


def test_a_leaf_whose_senders_are_slow_in_its_raw_pairs_is_the_leaf():
    lay = _layout()
    f = fit(_data(lay, slow_senders_of_leaf0=0.25), lay)
    t = _evidence(f, lay)
    ratio, z, _, stands_out, _ = t.leaf_rows["send"][0]
    assert stands_out and abs(ratio - np.exp(0.25)) < 0.02, t.leaf_rows["send"][0]
    out = rules.name_components(lay, [t], Q)
    assert [(c.component, c.host) for c in out.culprits] == [(LEAF, "leaf0")], \
        [c.subject() for c in out.culprits]


def test_with_two_leaves_a_leaf_from_its_hosts_cannot_be_told():
    """Two leaves: nothing to compare one leaf's raw pairs with; the leaf is not named and
    the naming says it cannot tell."""
    lay = _layout(hosts=4, leaves=2)
    f = fit(_data(lay), lay)
    t = _evidence(_split(f, lay, 0.25), lay)
    assert t.leaf_rows == {"send": None, "receive": None}
    out = rules.name_components(lay, [t], Q)
    assert out.culprits == [], [c.subject() for c in out.culprits]
    assert len(out.cannot_tell) == 1 and "fewer than 3 leaves" in out.cannot_tell[0], out.cannot_tell


def test_a_leafs_raw_figure_is_judged_by_the_error_of_a_median_of_block_medians():
    """Four leaves, leaf 0's raw pairs to the others 0.06 (log) slower, the other leaves
    alike (no spread among them, so the error is the standard error alone): a block of n
    pairs has the median's error 1.2533 sigma / sqrt(n), the median of the leaf's k
    blocks 1.2533 times that over sqrt(k). z and the smallest shift the comparison finds
    (80 % power, Bonferroni over the leaves) follow from it."""
    nl, n, sigma, shift = 4, 16, 0.1, 0.06
    medians = np.zeros((nl, nl))
    medians[0, 1:] = shift
    counts = np.full((nl, nl), float(n))
    rows = leaf_rows._judge_side(medians, counts, "send", sigma, np.log(1.1), 1.0, Q)
    se = 1.2533 * (1.2533 * sigma / np.sqrt(n)) / np.sqrt(nl - 1)
    ratio, z, _, stands_out, finds = rows[0]
    assert ratio == pytest.approx(np.exp(shift)) and z == pytest.approx(shift / se), rows[0]
    assert finds == pytest.approx(np.exp((norm.isf(Q / nl) + evidence.POWER_Z) * se)), rows[0]
    assert not stands_out   # 1.06x: below the 1.1x margin whatever z says
    assert all(rows[x][:2] == (1.0, 0.0) for x in (1, 2, 3)), rows


def _collided(lay: Layout, slow_of_leaf0: int, slow_of_others: int, leaf0_senders: float = 0.0) -> PairData:
    """Every ordered pair between hosts, 2 % noise; of the pairs of each class between
    leaves, the first slow_of_leaf0 (leaf 0's senders) or slow_of_others (the others')
    2x slow (collisions under load); leaf 0's senders slowed by leaf0_senders (log)."""
    s, r = np.array([(i, j) for i in range(lay.n) for j in range(lay.n)
                     if lay.host[i] != lay.host[j]]).T
    y = -20.0 + np.random.default_rng(5).normal(0.0, 0.02, len(s)) + leaf0_senders * (lay.leaf[s] == 0)
    for a in range(len(lay.leaf_names)):
        for b in range(len(lay.leaf_names)):
            if a != b:
                block = np.flatnonzero((lay.leaf[s] == a) & (lay.leaf[r] == b))
                y[block[:slow_of_leaf0 if a == 0 else slow_of_others]] += np.log(2.0)
    return PairData(AllPairsBandwidth(), s, r, y, np.full(len(s), 20), np.zeros(len(s)), symmetric=False,
                    bandwidth=True)


def test_a_leaf_whose_class_medians_jump_with_collisions_does_not_stand_out_but_a_slow_one_does():
    """Four leaves of 2 hosts x 4 GPUs, 64 pairs a class between leaves: collisions slow 34
    of each of leaf 0's send classes and 30 of the others'. Leaf 0's class medians sit in
    the slow cluster (2x), the others' in the fast, and no spread among the other leaves:
    by its medians alone leaf 0 stands out. Its class means are 0.06 x log 2 apart, within
    their error: not the leaf. Its senders slowed 1.3x on every pair under the same
    collisions (30 everywhere) move the means too: the leaf."""
    lay = _layout()
    f = fit(_collided(lay, 34, 30), lay)
    ratio, _, _, stands_out, _ = leaf_rows.raw_rows(f, lay, 1.0, Q)["send"][0]
    assert ratio > 1.8 and not stands_out, (ratio, stands_out)
    f = fit(_collided(lay, 30, 30, leaf0_senders=np.log(1.3)), lay)
    ratio, _, _, stands_out, _ = leaf_rows.raw_rows(f, lay, 1.0, Q)["send"][0]
    assert ratio == pytest.approx(1.3, rel=0.03) and stands_out, (ratio, stands_out)
