"""Stalled pairs per rank side and per rank (diagnosis/tails.py) on hand-built pair
tables fitted by the real model, well under a second each, and one small synthetic run
through diagnose."""

import numpy as np

from diagnosis_layouts import AllPairsBandwidth, regular_layout
from synthetic import write_matrix_run

from fabscope_analysis.diagnose import diagnose
from fabscope_analysis.diagnosis import tails
from fabscope_analysis.diagnosis.model import PairData, fit
from fabscope_analysis.reader import open_result

Q = 0.01


def test_a_stalled_pair_of_a_four_rank_matching_leaves_too_few_sides_to_judge():
    """Four ranks on four hosts measured as two pairs (a bisection's round trips), one
    pair stalling 30 % of its samples: its ends are the first round's practical sides, the
    most stalled one is left out of the second round, and its peer, whose one pair is with
    it, has nothing left: three sides, too few to judge. Nothing named, no error (the
    diagnose command takes every fitted test through this)."""
    lay = regular_layout(4, 1, 1)
    s, r = np.array([0, 2, 1, 3]), np.array([2, 0, 3, 1])
    data = PairData(AllPairsBandwidth(), s, r, np.full(4, -10.0), np.full(4, 100), np.array([30, 30, 0, 0]),
                    symmetric=True, bandwidth=False)
    f = fit(data, lay)
    first, practical = tails._tail_round(f, set(), Q, lay.host)
    assert first == [] and sorted(practical) == [(0, "both"), (2, "both")], practical
    assert tails._tail_round(f, {(0, "both")}, Q, lay.host) == ([], {})
    assert tails.tail_sides(f, lay.host, Q) == []


def test_ranks_whose_every_peer_is_flagged_leave_the_typical_rate_at_zero():
    """tail_ranks' second round with ranks 0-3 flagged, on a test whose every pair joins
    one of them to one of ranks 4-19 (16 each), every pair stalling 5 of its 100 samples:
    ranks 4-19 have no pair left, so no unflagged rank says what a typical rank stalls.
    The typical rate is then 0: ranks 0-3, 32 stalled pairs each against 16 expected
    (the share with no reference pair is 0.5), are named, each 5 % of its samples."""
    lay = regular_layout(20, 1, 1)
    pairs = [(a, b) for a in range(4) for b in range(4, 20)]
    s, r = np.array(pairs + [(b, a) for a, b in pairs]).T
    data = PairData(AllPairsBandwidth(), s, r, np.full(len(s), -20.0), np.full(len(s), 100),
                    np.full(len(s), 5), symmetric=False, bandwidth=True)
    f = fit(data, lay)
    named, _ = tails._tail_ranks_round([f], lay.host, {0, 1, 2, 3}, Q)
    assert [e.key for e in named] == [(r, "both") for r in range(4)], [e.detail for e in named]
    assert all("32/32 of its pairs" in e.detail and "(16.0 expected" in e.detail
               and "5.00% of its samples (typical rank: 0.000%)" in e.detail for e in named), named[0].detail


def test_two_nics_stalling_every_pair_are_both_named_though_the_healthy_ranks_are_all_alike(tmp_path):
    """Ranks 0 and 4 of 8 (one a host) stall 30 % of the samples of every pair they are
    in: each healthy rank then has exactly its pairs with them stalled, six ranks alike,
    a robust sigma of 0. The two stand infinitely many sigmas beyond the median rank, are
    left out of each other's references, and are both named (the second round of
    tail_ranks had left out the most stalled one only, and named only the other)."""
    path = tmp_path / "run.h5"
    write_matrix_run(path, nranks=8, lossy={0: 0.3, 4: 0.3}, pair_noise=0.03, seed=3)
    with open_result(path, warn_incomplete=False) as result:
        d = diagnose(result)
    assert sorted(c.host for c in d.culprits) == ["fh0", "fh4"], d.lines()
    assert all(c.symptoms[0].startswith("tail: ") for c in d.culprits), d.lines()
