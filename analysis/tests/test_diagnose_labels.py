"""Leaf structure from the latency test where /ranks has no leaf labels or wrong ones
(diagnosis/labels.py), on hand-built host-pair matrices of log round trips."""

import contextlib
import io
import math

import numpy as np
import pytest
from synthetic import write_matrix_run

from fabscope_analysis.diagnosis import diagnose, labels
from fabscope_analysis.diagnosis.model import Layout
from fabscope_analysis.reader import open_result


def _matrix(seed, leaves=(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2), between=0.3):
    """Per host pair: each host's own software time (additive, up to 0.4 in log, larger
    than the leaf step), the step between leaves, 1 % noise."""
    rng = np.random.default_rng(seed)
    leaf = np.asarray(leaves)
    own = rng.uniform(0.0, 0.4, len(leaf))
    m = own[:, None] + own[None, :] + between * (leaf[:, None] != leaf[None, :])
    m = m + rng.normal(0.0, 0.01, m.shape)
    m = (m + m.T) / 2.0
    np.fill_diagonal(m, np.nan)
    return m, leaf


def _layout(leaf_per_rank, hosts=12, gpus=2):
    n = hosts * gpus
    names = sorted(set(leaf_per_rank))
    return Layout(n, np.arange(n) // gpus, np.array([names.index(x) for x in leaf_per_rank]),
                  [f"host{h:02d}" for h in range(hosts)], names, {r: r % gpus for r in range(n)},
                  {r: f"mlx5_{r % gpus}" for r in range(n)}, gpus)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_leaves_are_inferred_from_the_step_between_leaves_whatever_each_hosts_own_time(seed):
    m, leaf = _matrix(seed)
    found = labels.leaves_from_matrix(m)
    assert found is not None
    assert all(np.array_equal(found == found[h], leaf == leaf[h]) for h in range(len(leaf))), found


def test_no_step_between_leaves_infers_nothing():
    m, _ = _matrix(4, between=0.0)
    assert labels.leaves_from_matrix(m) is None


def test_one_fast_host_pair_among_noisy_ones_is_no_leaf_structure():
    """Six hosts of one flat switch, one host pair 20 % faster than their own times
    predict: near is that pair alone and every other host would be a leaf of its own
    (it was [0 1 0 2 3 4]); a leaf needs two hosts, so nothing is inferred. Two real
    leaves of three hosts each are still found."""
    m, _ = _matrix(3, leaves=(0,) * 6, between=0.0)
    m[0, 2] = m[2, 0] = m[0, 2] - 0.2
    assert labels.leaves_from_matrix(m) is None
    m, leaf = _matrix(3, leaves=(0, 0, 0, 1, 1, 1))
    found = labels.leaves_from_matrix(m)
    assert found is not None and all(np.array_equal(found == found[h], leaf == leaf[h])
                                     for h in range(6)), found


def test_a_leaf_whose_own_hosts_are_far_apart_is_no_leaf_structure():
    """Two groups of four hosts, every pair between them far; inside the first, two of its
    six host pairs (0-3, 1-2) as far as the pairs between the groups. The near pairs still
    join its four hosts into one group, but a third of that group's pairs disagree with it
    (inside the two groups 83 % of pairs near, under the 90 % both sides must show): no leaves, although
    every pair between the groups agrees."""
    m, _ = _matrix(1, leaves=(0,) * 4 + (1,) * 4)
    m[0, 3] = m[3, 0] = m[0, 3] + 0.3
    m[1, 2] = m[2, 1] = m[1, 2] + 0.3
    assert labels.leaves_from_matrix(m) is None


def test_missing_labels_are_inferred_and_said_wrong_ones_replaced_and_named(monkeypatch):
    m, leaf = _matrix(5)
    monkeypatch.setattr(labels, "_host_matrix", lambda result, layout: m)
    missing = _layout([""] * 24)
    layout, notes, blind = labels.resolve(None, missing)
    assert len(layout.leaf_names) == 3 and not blind
    assert notes and notes[0].startswith("/ranks has no leaf labels: leaves inferred"), notes
    wrong = [f"leaf{leaf[r // 2]}" for r in range(24)]
    wrong[14] = wrong[15] = "leaf0"                       # host07 (leaf1) labelled leaf0
    layout, notes, _ = labels.resolve(None, _layout(wrong))
    assert layout.leaf[14] != layout.leaf[0] and layout.leaf[14] == layout.leaf[8], layout.leaf
    assert notes and "leaf labels of host07 disagree" in notes[0], notes
    right = [f"leaf{leaf[r // 2]}" for r in range(24)]
    layout, notes, _ = labels.resolve(None, _layout(right))
    assert layout.leaf_names == ["leaf0", "leaf1", "leaf2"] and not notes


def test_without_labels_or_structure_the_verdict_says_the_leaf_rules_had_no_leaves(monkeypatch):
    m, _ = _matrix(6, between=0.0)
    monkeypatch.setattr(labels, "_host_matrix", lambda result, layout: m)
    layout, notes, blind = labels.resolve(None, _layout([""] * 24))
    assert layout.leaf_names == [""] and not notes
    assert blind and "no leaf labels" in blind[0], blind


def test_a_run_on_one_host_has_no_host_pair_to_place(tmp_path):
    """Every pair inside one host (a one-node run, as on a single GPU machine): nothing
    for the inference to place, and diagnose still answers (it raised IndexError)."""
    path = tmp_path / "one-host.h5"
    write_matrix_run(path, nranks=4, ranks_per_host=4)
    with open_result(path) as result, contextlib.redirect_stdout(io.StringIO()):
        d = diagnose(result)
    assert d.verdict == "fit" and d.culprits == [], d.lines()


def test_near_and_far_host_pairs_must_stand_four_robust_spreads_apart():
    """_split: the threshold of largest between-group variance, kept only when the gap
    between the groups is at least 4 robust spreads (1.4826 x MAD of either group, the
    larger); the threshold is half-way across the gap."""
    near = np.array([-0.02, -0.01, 0.0, 0.0, 0.01, 0.02])
    spread = 1.4826 * 0.01
    for gaps, expected in ((5.0, True), (4.1, True), (3.9, False)):
        far = near + 0.04 + gaps * spread        # far.min() - near.max() = gaps x spread
        cut = labels._split(np.r_[near, far])
        if expected:
            assert cut == pytest.approx((0.02 + far.min()) / 2), gaps
        else:
            assert cut is None, gaps


def test_fewer_than_six_host_pairs_are_too_few_to_split_into_near_and_far():
    """_split needs at least 6 host pairs: five that stand far apart (three near, two
    far) give no threshold; a sixth, far, gives the one half-way across the gap."""
    near, far = [0.0, 0.01, 0.02], [10.0, 10.01]
    assert labels._split(np.array(near + far)) is None
    assert labels._split(np.array(near + far + [10.02])) == pytest.approx(5.01)


def test_a_group_of_one_host_pair_near_or_far_still_splits():
    """One near host pair among five far (two hosts of one leaf, the rest each alone), or
    one far among five near: a group of one has no spread of its own (MAD 0), the other
    group's sets the bar, and the threshold is half-way across the gap."""
    assert labels._split(np.array([0.0, 10.0, 10.1, 10.2, 10.3, 10.4])) == pytest.approx(5.0)
    assert labels._split(np.array([0.0, 0.1, 0.2, 0.3, 0.4, 10.0])) == pytest.approx(5.2)


def test_the_host_matrix_holds_each_host_pairs_median_on_both_sides_of_the_diagonal(tmp_path):
    """_host_matrix: one cell per pair of hosts, either way round (a < b and b < a alike),
    the median log round trip of the GPU pairs between them; a host with itself is NaN
    (its pairs inside one host are not between hosts). Host 2 (ranks 4, 5) is planted 1.5x."""
    path = tmp_path / "three-hosts.h5"
    write_matrix_run(path, nranks=6, ranks_per_host=2, latency_host={4: 1.5, 5: 1.5})
    with open_result(path) as result:
        m = labels._host_matrix(result, Layout.of(result))
    assert m.shape == (3, 3) and np.isnan(np.diag(m)).all()
    off = ~np.eye(3, dtype=bool)
    assert np.isfinite(m[off]).all() and np.array_equal(m, m.T, equal_nan=True)
    assert m[0, 2] - m[0, 1] == pytest.approx(math.log(1.5), abs=0.05)


def test_labels_with_a_quarter_of_the_hosts_in_another_leaf_are_a_stale_inventory():
    """_stale: as many labelled leaves as inferred, and at most a quarter of the hosts
    (STALE_SHARE) in another leaf than most of their labelled leaf: 2 of 8 moved is stale,
    3 of 8 is not, nor are labels of another number of leaves."""
    labelled = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    assert labels._stale(labelled, np.array([0, 0, 0, 1, 1, 1, 1, 0])) is True
    assert labels._stale(labelled, np.array([0, 0, 1, 1, 1, 1, 1, 0])) is False
    assert labels._stale(labelled, np.array([0, 0, 0, 0, 1, 1, 2, 2])) is False
