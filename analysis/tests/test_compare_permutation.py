"""When compare's run-level permutation test can reach its level at all: its smallest p is
(2 at equal sizes, else 1) / C(a + b, b), exactly, for every split of sizes, two runs a
side included."""

import math

import numpy as np
import pytest

from fabscope_analysis.compare_stats import permutation_reaches, permutation_splits, runs_permutation_p


@pytest.mark.parametrize("a, b, reaches", [
    (2, 2, False),   # 2 / 6
    (3, 3, False),   # 2 / 20 = 0.1
    (4, 4, True),    # 2 / 70
    (2, 5, True),    # 1 / 21 = 0.048
    (5, 2, True),
    (2, 4, False),   # 1 / 15
    (1, 30, False),  # one run on a side: no run-to-run variation to test
    (30, 1, False),
])
def test_the_permutation_test_reaches_5_percent_only_with_enough_splits(a, b, reaches):
    assert permutation_splits(a, b) == math.comb(a + b, b)
    assert permutation_reaches(a, b, 0.95) is reaches


def test_archive_spread_is_the_sum_of_squares_about_the_mean_with_runs_minus_one_df():
    """A/A runs' log figures 1, 2, 3, 6 (mean 3): squares 4 + 1 + 0 + 9 = 14 on 3 degrees of
    freedom; figures that are not finite are left out; one run gives no spread."""
    from fabscope_analysis.compare_stats import archive_spread
    spread = archive_spread([1.0, 2.0, float("nan"), 3.0, 6.0], "aa.h5")
    assert (spread.ss, spread.df, spread.source) == (pytest.approx(14.0), 3, "aa.h5")
    assert archive_spread([1.0, float("inf")], "aa.h5") is None


@pytest.mark.parametrize("la, lb, p", [
    ([0.0, 0.1], [1.0, 1.1, 1.2, 1.3, 1.4], 1 / 21),    # the observed split alone: below 0.05
    ([0.0, 0.1, 0.2], [1.0, 1.1, 1.2, 1.3], 1 / 35),
    ([0.0, 0.1, 0.2], [1.0, 1.1, 1.2], 2 / 20),         # the observed split and its mirror
])
def test_runs_split_apart_have_the_smallest_permutation_p_of_their_sizes(la, lb, p):
    """Every split is counted once, the observed one among them: with B's runs all above A's,
    only it (and its mirror at equal sizes) is as extreme, so p is the smallest the sizes
    allow, and 2 runs against 5 confirm a difference at 5 %."""
    assert runs_permutation_p(np.array(la), np.array(lb), np.random.default_rng(1)) == \
        pytest.approx(p, rel=1e-12)
