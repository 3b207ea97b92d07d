"""The diagnosis's derived figures, each checked by its value on a small input worked out
by hand: the bars, shares, spreads and counts the rules compare against. The end-to-end
tests judge outcomes on fixtures far from every limit, where a factor of two, a flipped
sign or a bound off by one in these figures changes no outcome."""
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm, poisson

from fabscope_analysis.diagnosis import core, evidence, model, pair_tails, retest, rules, supporting, tails
from fabscope_analysis.inference import PRACTICAL_MARGIN


# ------------------------------------------------------------------ over-dispersed blocks

def test_block_p_pools_the_share_and_measures_over_dispersion_by_value():
    # 5 blocks of 10 GPU pairs, one of them all slow: pooled share 10/50 = 0.2, each
    # block expects 2; the quiet blocks' (0-2)^2 / (2 * 0.8) = 2.5 is the median, so the
    # over-dispersion is 2.5 / 0.455 (the chi-square(1) median)
    k, m = np.array([0, 0, 0, 0, 10]), np.full(5, 10)
    p, pooled, phi = evidence._block_p(k, m)
    assert pooled == pytest.approx(0.2)
    assert phi == pytest.approx(2.5 / 0.455)
    # the slow block: 10 / phi = 1.82 trials round to 2, 2 hits needed of 2 at 0.2: 0.04
    assert p[4] == pytest.approx(0.04)
    # a block with no slow pair needs no hit: p 1
    assert p[0] == pytest.approx(1.0)
    # a block too small for its share of trials keeps one: 1 hit of 1 trial at 0.2
    assert float(evidence.overdispersed_sf(1, 1, 3.0, 0.2)) == pytest.approx(0.2)


def test_block_p_never_over_dispersion_below_one():
    # counts exactly as expected: the dispersion statistic is 0, phi stays 1 (plain binomial)
    k, m = np.array([2, 2, 2, 2]), np.full(4, 10)
    _, pooled, phi = evidence._block_p(k, m)
    assert (pooled, phi) == (pytest.approx(0.2), 1.0)


# ------------------------------------------------------------------ host pairs' power

def _host_pair_fit(block_sizes, slow_share_blocks=()):
    """A fit over 2 ranks per host whose host pairs hold the given numbers of GPU pairs;
    the blocks listed in slow_share_blocks have every pair slow, the rest none."""
    hosts = 1 + max(max(a, b) for a, b in block_sizes)
    s, r, resid = [], [], []
    for index, ((a, b), size) in enumerate(block_sizes.items()):
        for j in range(size):
            s.append(2 * a + j % 2)
            r.append(2 * b + (j // 2) % 2)
            resid.append(math.log(PRACTICAL_MARGIN) + 1.0 if index in slow_share_blocks else 0.0)
    fit = SimpleNamespace(data=SimpleNamespace(s=np.array(s), r=np.array(r)), resid=np.array(resid))
    layout = SimpleNamespace(host=np.repeat(np.arange(hosts), 2), ranks_per_host=2,
                             host_names=[f"h{i}" for i in range(hosts)])
    return fit, layout


def test_host_pair_power_needs_four_host_pairs():
    three = {(0, 1): 6, (0, 2): 6, (1, 2): 6}
    assert evidence.host_pair_power(*_host_pair_fit(three)) is None
    four = {(0, 1): 6, (0, 2): 6, (1, 2): 6, (2, 3): 6}
    assert evidence.host_pair_power(*_host_pair_fit(four)) is not None


def test_host_pair_power_with_a_rare_slow_share_needs_four_pairs_a_block():
    # no slow pair: the pooled share is its floor 0.5 / 27 pairs; 4 of 4 slow already
    # passes q / 6 blocks, so a block needs 4 and only the one of 3 pairs is too thin
    # (a block of exactly 4 is not)
    blocks = {(0, 1): 3, (0, 2): 4, (0, 3): 4, (1, 2): 5, (1, 3): 5, (2, 3): 6}
    thin, measured, need = evidence.host_pair_power(*_host_pair_fit(blocks))
    assert (thin, measured, need) == (1, 6, 4)


def test_host_pair_power_with_half_the_pairs_slow_needs_the_first_m_with_half_to_the_m_below_the_bar():
    # 3 of 6 blocks all slow, 18 of 36 pairs: share 0.5; m of m slow has p 0.5^m, the bar
    # is 0.05 / 6 = 0.0083: 0.5^6 = 0.0156 fails, 0.5^7 = 0.0078 passes, so a block needs 7
    # pairs, more than any has (6): every block is too thin
    blocks = {(0, 1): 6, (0, 2): 6, (0, 3): 6, (1, 2): 6, (1, 3): 6, (2, 3): 6}
    fit, layout = _host_pair_fit(blocks, slow_share_blocks=(0, 1, 2))
    assert evidence.host_pair_power(fit, layout) == (6, 6, 7)


def test_host_pair_power_when_no_block_size_searched_passes_needs_one_more_than_the_largest():
    # blocks of 5, half the pairs slow: the search stops at one pair more than the largest
    # block (6), and 0.5^6 = 0.0156 is still over the bar 0.05 / 6: every block is too
    # thin, and a block needs more than any has, said as that one more (6)
    blocks = {(0, 1): 5, (0, 2): 5, (0, 3): 5, (1, 2): 5, (1, 3): 5, (2, 3): 5}
    fit, layout = _host_pair_fit(blocks, slow_share_blocks=(0, 1, 2))
    assert evidence.host_pair_power(fit, layout) == (6, 6, 6)
    # a pair exactly at the margin is slow: the same answer with the slow ones at 1.25x
    fit.resid = np.where(fit.resid > 0, math.log(evidence.MARGIN), 0.0)
    assert evidence.host_pair_power(fit, layout) == (6, 6, 6)


def test_host_pair_power_a_block_whose_all_slow_p_is_exactly_the_bar_passes():
    """Half the pairs slow over 4 blocks, at a family level of 1/4: the bar is 1/16, and
    4 of 4 slow has p 0.5^4 = 1/16 exactly: a block of 4 is enough (p at the bar passes,
    as in Benjamini-Hochberg), so only the block of 3 is too thin."""
    blocks = {(0, 1): 3, (0, 2): 4, (0, 3): 5, (1, 2): 4}
    fit, layout = _host_pair_fit(blocks, slow_share_blocks=(0, 2))     # 3 + 5 of 16 pairs slow
    assert evidence.host_pair_power(fit, layout, q_family=0.25) == (1, 4, 4)


def test_blocks_are_host_pairs_with_their_slow_and_measured_gpu_pairs_and_whether_they_cross_leaves():
    """Hosts 0-1 on leaf 0, 2-3 on leaf 1, two ranks each, every pair between hosts: each
    host pair (a < b, key a x 4 + b) holds 8 GPU pairs (both directions); those of host pair
    (0, 2) are all at least the margin slow."""
    from fabscope_analysis.diagnosis.model import Layout
    layout = Layout(8, np.repeat(np.arange(4), 2), np.repeat([0, 0, 1, 1], 2), list("abcd"), ["L0", "L1"], {}, {}, 2)
    s, r = np.nonzero(layout.host[:, None] != layout.host[None, :])
    slow = np.isin(layout.host[s], [0, 2]) & np.isin(layout.host[r], [0, 2])
    resid = np.where(slow, math.log(2.0), 0.0)
    fit = SimpleNamespace(data=SimpleNamespace(s=s, r=r), resid=resid)
    keys, k, m, med, between = evidence._blocks(fit, layout)
    assert keys.tolist() == [1, 2, 3, 6, 7, 11]          # (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)
    assert between.tolist() == [False, True, True, True, True, False]
    assert k.tolist() == [0, 8, 0, 0, 0, 0] and m.tolist() == [8] * 6
    assert med.tolist() == pytest.approx([0.0, math.log(2.0), 0.0, 0.0, 0.0, 0.0])


# ------------------------------------------------------------------ leaf contrasts

def test_leaf_contrasts_by_value():
    # C[L, x] = T[L, x] + T[x, L] - T[L, L] - T[x, x]; a leaf's value is half the median
    # over the other leaves, its standard error 0.5 * 1.2533 * sigma * sqrt(median var)
    t = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]])
    counts = np.array([[1.0, 4.0, 4.0], [4.0, 1.0, 4.0], [4.0, 4.0, 2.0]])
    values, ses = evidence._leaf_contrasts(t, counts, sigma=2.0)
    # leaf 0: C01 = 2+4-1-5 = 0, C02 = 3+7-1-10 = -1; leaf 2: C20 = -1, C21 = 6+8-5-10 = -1
    assert values == pytest.approx([-0.25, 0.5 * np.median([0.0, -4.0 + 3.0]), -0.5])
    # var[L, x] = 1/n[L, x] + 1/n[x, L] + 1/n[L, L] + 1/n[x, x]
    var0 = np.median([0.25 + 0.25 + 1 + 1, 0.25 + 0.25 + 1 + 0.5])
    var2 = np.median([0.25 + 0.25 + 0.5 + 1, 0.25 + 0.25 + 0.5 + 1])
    assert ses[0] == pytest.approx(0.5 * 1.2533 * 2.0 * math.sqrt(var0))
    assert ses[2] == pytest.approx(0.5 * 1.2533 * 2.0 * math.sqrt(var2))


def test_leaf_contrasts_need_two_other_leaves():
    t = np.array([[1.0, 2.0], [3.0, 5.0]])
    values, ses = evidence._leaf_contrasts(t, np.ones((2, 2)), sigma=1.0)
    assert np.isnan(values).all() and np.isnan(ses).all()
    # three leaves, one class unmeasured: the leaves beside it keep one contrast each
    t3 = np.arange(9, dtype=float).reshape(3, 3)
    counts = np.ones((3, 3))
    counts[0, 1] = counts[1, 0] = 0
    values, _ = evidence._leaf_contrasts(t3, counts, sigma=1.0)
    assert np.isnan(values[0]) and np.isnan(values[1]) and np.isfinite(values[2])


# ------------------------------------------------------------------ tails

def test_share_upper_is_the_poisson_upper_bound():
    # no event in 1,000: the 95 % upper bound is -ln(0.05) / 1000 (the "rule of three")
    assert float(tails.share_upper(np.array([0]), 1000.0, 0.05)[0]) == pytest.approx(-math.log(0.05) / 1000)
    # 1 event: the bound solves P(Poisson(mu) <= 1) = 0.05, mu = 4.7439
    assert float(tails.share_upper(np.array([1]), 10.0, 0.05)[0]) == pytest.approx(0.47439, rel=1e-4)


def test_tail_power_by_value():
    # 4 ranks, one fit of 6 pairs (each rank in 3), 2 of them beyond the tail: pooled
    # share 2 * 2 / 12 = 1/3; the median rank's 3 pairs expect 1 stalled; the bar is
    # 0.05 / 4; k is the first count with P(Poisson(1) >= k) <= 0.0125: 4 (0.019 at 3,
    # 0.0037 at 4); the power P(Binomial(3, share + 1/3) >= 4) is 0 (3 pairs cannot reach 4)
    s, r = np.array([0, 0, 0, 1, 1, 2]), np.array([1, 2, 3, 2, 3, 3])
    data = SimpleNamespace(s=s, r=r, beyond=np.array([1, 0, 0, 0, 0, 1]), samples=np.full(6, 100))
    power, pairs = tails.tail_power([SimpleNamespace(data=data)], 4)
    assert pairs == 3.0
    assert power == 0.0
    # 12 ranks in pairs of every rank (66 pairs, 11 a rank), one stalled: pooled 2 / 132;
    # 11 pairs expect 1/6 stalled, k = 3 (P(Poisson(1/6) >= 2) = 0.0118 > 0.05 / 12)
    n = 12
    s, r = np.triu_indices(n, 1)
    beyond = np.zeros(len(s))
    beyond[0] = 1
    data = SimpleNamespace(s=s, r=r, beyond=beyond, samples=np.full(len(s), 100))
    power, pairs = tails.tail_power([SimpleNamespace(data=data)], n)
    pooled = 2 / 132
    share = 1 - (1 - tails.TAIL_DETECT) ** 100
    from scipy.stats import binom, poisson
    k = next(k for k in range(13) if poisson.sf(k - 1, pooled * 11) <= 0.05 / 12)
    assert k == 3
    assert pairs == 11.0
    assert power == pytest.approx(float(binom.sf(k - 1, 11, min(share + pooled, 1.0))))


def test_a_tail_sides_ratio_is_its_stalled_share_over_the_upper_share_of_pairs_away_from_its_host():
    """6 ranks on 6 hosts, every ordered pair of 100 samples; every pair of rank 0 stalls
    (5 samples), no other. Rank 0's sides: 5 of 5 pairs stalled, against the 20 pairs
    touching neither its host, none stalled, at their 95 % upper bound ln 20 / 20: a ratio
    of 20 / ln 20 = 6.68, among the figures a follow-up of its other side takes (too few
    pairs for either side to pass the false-discovery bar here)."""
    s, r = np.nonzero(~np.eye(6, dtype=bool))
    beyond = np.where((s == 0) | (r == 0), 5.0, 0.0)
    data = SimpleNamespace(s=s, r=r, beyond=beyond, samples=np.full(len(s), 100.0), symmetric=False)
    fit = SimpleNamespace(data=data, send=np.zeros(6))
    _, figures = tails._tail_round(fit, set(), 0.05, np.arange(6))
    assert set(figures) == {(0, "send"), (0, "receive")}
    for key in figures:
        assert figures[key][1] == pytest.approx(20 / math.log(20)), key
        assert figures[key][2] == 5


def test_tail_counts_keep_a_side_of_one_pair():
    """A ring gives each side one pair: every side is counted (pairs with a stall, pairs,
    stalled samples, samples), the pairs with flagged ends left out."""
    data = SimpleNamespace(s=np.arange(4), r=(np.arange(4) + 1) % 4, beyond=np.array([0.0, 3.0, 0.0, 0.0]),
                           samples=np.full(4, 50.0), symmetric=False)
    keys, rows = tails._tail_counts(SimpleNamespace(data=data, send=np.zeros(4)), set())
    assert keys == [(r, "send") for r in range(4)] + [(r, "receive") for r in range(4)]
    assert rows[1].tolist() == [1.0, 1.0, 3.0, 50.0] and rows[6].tolist() == [1.0, 1.0, 3.0, 50.0]
    keys, _ = tails._tail_counts(SimpleNamespace(data=data, send=np.zeros(4)), {(2, "send")})
    assert (1, "send") not in keys and (3, "receive") not in keys and len(keys) == 6


def test_tail_ranks_count_a_ranks_stalled_pairs_in_both_directions_against_the_pairs_away_from_it():
    """8 ranks on 8 hosts, every ordered pair of 100 samples: rank 0's 14 pairs (7 each way)
    stall 3 samples each, and one pair elsewhere (5 -> 6) once. Rank 0: 14 of 14 stalled,
    against 14 x the share among the 42 pairs away from its host (1 of 42): 1/3 expected,
    a ratio of 42; 42 of its 1,400 samples stalled."""
    s, r = np.nonzero(~np.eye(8, dtype=bool))
    beyond = np.where((s == 0) | (r == 0), 3.0, 0.0)
    beyond[(s == 5) & (r == 6)] = 1.0
    data = SimpleNamespace(s=s, r=r, beyond=beyond, samples=np.full(len(s), 100.0))
    found = tails.tail_ranks([SimpleNamespace(data=data)], np.arange(8))
    assert [(e.key, e.pairs) for e in found] == [((0, "both"), 14)]
    assert found[0].ratio == pytest.approx(42.0)
    assert found[0].detail.startswith("14/14 of its pairs over 1 test(s), both directions, stalled beyond 5x their "
                                      "median (0.3 expected from the other pairs), 3.00% of its samples")



def test_a_rank_measured_in_a_single_pair_can_stand_out_of_the_others_references():
    """A round-trip matching of 8 ranks on 8 hosts: each rank in one pair (M = 1), the
    pair 0 <-> 1 stalled. Ranks 0 and 1: 1 stalled pair against 0.5 / 3 expected (none
    stalled among the 3 pairs away from them, floored at half a pair), log 6; the other
    six 0.5 against 1 / 3, log 1.5. Six alike leave a robust sigma of 0: both stand out,
    those of them that are practical candidates (p_rank) returned."""
    data = SimpleNamespace(s=np.array([0, 2, 4, 6]), r=np.array([1, 3, 5, 7]),
                           beyond=np.array([3.0, 0.0, 0.0, 0.0]), samples=np.full(4, 100.0), symmetric=True)
    fit = SimpleNamespace(data=data)
    k, m, e, _, _ = tails._rank_counts([fit], np.arange(8), set())
    assert m.tolist() == [1.0] * 8 and k.tolist() == [1.0, 1.0] + [0.0] * 6
    assert e == pytest.approx([0.5 / 3] * 2 + [1 / 3] * 6)
    p_rank = {(r, "both"): (0.01, 6.0, 1, "") for r in range(8)}
    assert tails._outlying([fit], np.arange(8), p_rank) == {0, 1}
    assert tails._outlying([fit], np.arange(8), {(1, "both"): (0.01, 6.0, 1, "")}) == {1}


def test_a_lossy_rank_whose_stalls_fill_the_others_references_is_found():
    """Six emulated hosts, one dropping 3 % of its packets: its stalled pairs, as a run
    measured them (stalled samples per pair of a round-trip latency test of 100 and a
    bandwidth test of 12). In the others' references (pairs away from their host) its
    stalls made each look stalled less than expected, which the median Pearson residual
    read as over-dispersion (3.96): 11 of its 15 pairs stalled against 0.75 expected gave
    p = 0.001, short of the first bar, and nothing was named. The most stalled rank is
    left out of the others' references in a second round: the others' median Pearson
    residual is 1.0, an over-dispersion of 1 / 0.455 = 2.20, so its 11 stalled pairs count as
    ceil(11 / 2.20) = 6 against 0.75 / 2.20 expected."""
    lat = [(0, 2, 0), (0, 4, 0), (0, 5, 7), (1, 0, 0), (1, 2, 0), (1, 3, 0), (1, 5, 4), (2, 3, 0),
           (2, 5, 5), (3, 0, 0), (3, 5, 7), (4, 1, 0), (4, 2, 0), (4, 3, 0), (4, 5, 8)]
    s, r = np.nonzero(~np.eye(6, dtype=bool))
    beyond = np.zeros(len(s))
    for a, b, k in ((1, 2, 1), (1, 5, 3), (4, 5, 1), (5, 0, 1), (5, 1, 1), (5, 2, 2), (5, 3, 1)):
        beyond[(s == a) & (r == b)] = k
    fits = [SimpleNamespace(data=SimpleNamespace(
                s=np.array([p[0] for p in lat]), r=np.array([p[1] for p in lat]),
                beyond=np.array([p[2] for p in lat], dtype=float), samples=np.full(15, 100.0),
                symmetric=True)),
            SimpleNamespace(data=SimpleNamespace(s=s, r=r, beyond=beyond, samples=np.full(30, 12.0),
                                                 symmetric=False))]
    q_family = evidence.Q / (core.FAMILIES_PER_TEST * 2 + core.RUN_FAMILIES)   # a run of two tests
    found = tails.tail_ranks(fits, np.arange(6), q_family)
    assert [(e.key, e.pairs) for e in found] == [((5, "both"), 15)]
    assert found[0].detail.startswith("11/15 of its pairs over 2 test(s)"), found[0].detail
    phi = 1.0 / 0.455
    assert found[0].ratio == pytest.approx(11 / 0.75)
    assert found[0].z == pytest.approx(float(norm.isf(poisson.sf(math.ceil(11 / phi) - 1, 0.75 / phi))))
    assert round(found[0].z, 2) == 4.65

# ------------------------------------------------------------------ retest bar

def test_retest_bar_adds_the_controls_median_uncertainty():
    # 5 controls, sigma from the floor (0.1 > their own spread): the bar is
    # z(pool) * sigma * sqrt(1 + 1.2533^2 / 5), z the 95 % quantile of the largest of 20
    controls = [100.0, 101.0, 99.0, 100.5, 99.5]
    out = retest.judge_retest({"p": 100.0}, controls, pool=20, bandwidth=False, sigma_floor=0.1)
    z = float(norm.isf(1 - 0.95 ** (1 / 20)))
    bar = z * 0.1 * math.sqrt(1 + 1.2533 ** 2 / 5)
    assert out[0].sigma == pytest.approx(0.1)
    assert bar > math.log(PRACTICAL_MARGIN)
    assert out[0].bar_ratio == pytest.approx(math.exp(bar))


def test_retest_from_three_controls_alone_takes_their_spread_at_its_chi_square_upper_bound():
    """Three controls are usable (fewer are inconclusive); without a floor from the pass,
    their robust sigma (1.4826 x the MAD of their logs: ln(1.1 / 1.0)) is raised to its
    95 % upper bound, x sqrt(2 / chi2(0.05, 2 df)) = x 4.42."""
    from scipy.stats import chi2
    out = retest.judge_retest({"p": 3.0}, [1.0, 1.1, 0.9], pool=20, bandwidth=False)
    sigma = 1.4826 * math.log(1.1) * math.sqrt(2 / float(chi2.ppf(0.05, 2)))
    assert math.sqrt(2 / float(chi2.ppf(0.05, 2))) == pytest.approx(4.415, abs=1e-3)
    assert (out[0].controls, out[0].sigma) == (3, pytest.approx(sigma))
    z = float(norm.isf(1 - 0.95 ** (1 / 20)))
    assert out[0].bar_ratio == pytest.approx(math.exp(z * sigma * math.sqrt(1 + 1.2533 ** 2 / 3)))
    assert out[0].ratio == pytest.approx(3.0) and out[0].outcome == retest.SELECTION


def test_retest_ratio_against_too_few_controls_is_nan_without_a_usable_control():
    out = retest.judge_retest({"p": 2.0}, [], pool=4, bandwidth=False)
    assert out[0].outcome == retest.INCONCLUSIVE
    assert isinstance(out[0].ratio, float) and math.isnan(out[0].ratio)
    # with two controls (fewer than usable) the ratio is against their median
    out = retest.judge_retest({"p": 3.0}, [1.0, 2.0], pool=4, bandwidth=False)
    assert out[0].ratio == pytest.approx(3.0 / math.sqrt(2.0))


# ------------------------------------------------------------------ confidence

def _effects(*qz, details=("t",)):
    return [SimpleNamespace(q=q, z=z, detail=d) for (q, z), d in zip(qz, details * len(qz))]


def test_confidence_score_and_words_by_value():
    # 0.4 + 0.04 z, + 0.1 when two tests saw it, at most 1; high needs q < 1e-4 and 0.75
    assert rules._confidence(_effects((1e-5, 9.1))) == ("high", 0.764)
    assert rules._confidence(_effects((1e-5, 5.0), (1e-3, 2.0), details=("a", "b"))) == ("medium", 0.7)
    assert rules._confidence(_effects((5e-3, 30.0))) == ("medium", 1.0)
    assert rules._confidence(_effects((2e-2, 1.0))) == ("low", 0.44)
    assert rules._confidence(_effects((1e-5, 8.0))) == ("medium", 0.72)
    # the boundaries: q of exactly 1e-4 is not high, of exactly 1e-2 low; a score of exactly 0.75 is high
    assert rules._confidence(_effects((1e-4, 20.0))) == ("medium", 1.0)
    assert rules._confidence(_effects((1e-2, 20.0))) == ("low", 1.0)
    assert rules._confidence(_effects((1e-5, 8.75))) == ("high", 0.75)



def test_a_link_only_the_serial_retest_found_is_named_at_medium_confidence_0_6():
    """No residual effect in the parallel pass (e None), slow alone in the retest: a link
    at the fixed medium confidence and score 0.6 (a score lies in 0..1, docs/analysis.md's
    fabscope_culprit_score), its symptom and evidence the retest's."""
    layout = SimpleNamespace(host_of=lambda r: f"h{r}", gpu={0: 1}, nic={3: "eth3"})
    out = rules.Naming()
    rules._add_link(layout, SimpleNamespace(label="0001 ap-bw"), 0, 3, "retest: slow alone", None, out)
    c, = out.culprits
    assert (c.component, c.host, c.peer_host, c.ranks, c.gpus, c.nics) == \
        (rules.LINK, "h0", "h3", [0, 3], [1, -1], ["", "eth3"])
    assert (c.confidence, c.score) == ("medium", 0.6)
    assert c.symptoms == ["slow alone in the serial retest of 0001 ap-bw"] and c.evidence == ["retest: slow alone"]


def test_a_host_pair_from_links_keeps_only_each_links_first_evidence_line():
    """The host pair's evidence: why, then each link's first line (its residual), not the
    retest or other tests' lines a link gathered; its confidence the links' highest."""
    links = [rules.Culprit(host="h0", ranks=[i, 8 + i], gpus=[], nics=[], direction="link",
                           symptoms=[f"link {i}"], evidence=[f"residual {i}", f"retest {i}"],
                           confidence=conf, score=score, peer_host="h1", component=rules.LINK)
             for i, conf, score in ((0, "low", 0.5), (1, "medium", 0.7))]
    out = rules.Naming(culprits=list(links))
    rules._add_host_pair_from_links(SimpleNamespace(host_names=["h0", "h1"]), out, 0, 1, links, 2, 2, None)
    pair, = out.culprits
    assert pair.evidence == ["2 slow GPU pairs between the two hosts, each a link by itself",
                             "residual 0", "residual 1"]
    assert (pair.confidence, pair.score) == ("medium", 0.7) and pair.symptoms[1:] == ["link 0", "link 1"]



def test_a_test_has_the_power_a_fit_verdict_needs_only_with_a_detectable_side_of_1_5x_or_less():
    """docs/analysis.md: fit needs a test that would have found a side 1.5x slow with 80 %
    power; a test of fewer than 4 rank sides has no such figure and cannot give it."""
    assert evidence.side_power({"sides": 3}) == (True, math.inf)
    weak, mde = evidence.side_power({"sides": 8, "mde": math.log(1.5)})
    assert not weak and mde == pytest.approx(1.5)
    assert evidence.side_power({"sides": 8, "mde": math.log(1.51)})[0]



def test_a_hosts_retransmission_rate_is_over_at_least_one_segment_sent():
    """Retransmitted segments over the segments sent, per host (TCP counters' deltas): 1
    of 1,000 on four hosts, 0.1 %; a fifth that counted 5 retransmissions and no segment
    sent is read over one segment (500 %), a finite figure that stands out, not an
    infinite one."""
    rows = [(h, name, value) for h in ("a", "b", "c", "d")
            for name, value in (("OutSegs", 1000), ("RetransSegs", 1))]
    rows += [("e", "OutSegs", 0), ("e", "RetransSegs", 5)]
    c = pd.DataFrame([dict(source="snmp:Tcp", host=h, name=n, delta=v) for h, n, v in rows])
    found = supporting._retransmissions(c, {"e": 4})
    assert [(f.rank, f.symptom) for f in found] == [
        (4, "retransmissions 500.00% of its segments (median host 0.10%)")]
    assert found[0].ratio == pytest.approx(5.0 / 0.001)


# ------------------------------------------------------------------ incast senders

class _Incast:
    index = 3

    def __init__(self, frame):
        self.frame = frame

    def get(self, key, default=None):
        return {"kind": "incast", "name": "fan-in"}.get(key, default)

    def samples(self):
        return self.frame


def _incast_frame(rates):
    """One sample per (rank, peer 0) with rate bytes/ns as given; rank 0 is the receiver."""
    rows = [dict(rank=rank, peer=0, flags=0, t_post_ns=0, t_done_ns=1000, bytes=int(rate * 1000))
            for rank, rate in rates.items()]
    return pd.DataFrame(rows)


def test_incast_names_a_sender_at_half_the_median_rate_or_below():
    # rates below one byte per ns (a slow link's), peer 0 for every sender; three senders
    # are enough, and exactly half the median is slow
    findings, _ = supporting.incast([_Incast(_incast_frame({1: 0.4, 2: 0.4, 3: 0.2}))])
    assert [(f.rank, f.side, f.measure) for f in findings] == [(3, "send", "incast")]
    assert findings[0].ratio == pytest.approx(2.0)
    assert "50% of the median sender" in findings[0].symptom
    # two senders: no median to judge against
    assert supporting.incast([_Incast(_incast_frame({1: 0.4, 2: 0.1}))])[0] == []
    # the rate is over each send's own time, posted to done: a sender that posted later
    # (here 1 ms) is as fast as its time says, and half as fast when it took twice as long
    later = _incast_frame({1: 0.4, 2: 0.4, 3: 0.4}).assign(t_post_ns=[0, 0, 10 ** 6])
    later["t_done_ns"] += later["t_post_ns"]
    assert supporting.incast([_Incast(later)])[0] == []
    later.loc[2, "t_done_ns"] += 1000
    findings, _ = supporting.incast([_Incast(later)])
    assert [f.rank for f in findings] == [3] and findings[0].ratio == pytest.approx(2.0)


# ------------------------------------------------------------------ collectives' last arrivals

class _AllReduce(_Incast):
    def get(self, key, default=None):
        return {"kind": "allreduce", "name": "ar"}.get(key, default)


def _arrivals(last_iterations, iterations=12):
    """4 ranks post every iteration 0, 100, 200 ns after its start; rank 3 posts 10 us late
    in `last_iterations` of them (the last to arrive), else 50 ns after the start."""
    rows = []
    for it in range(iterations):
        start = 1_000_000 * it
        for rank, late in enumerate((0, 100, 200, 10_000 if it < last_iterations else 50)):
            rows.append(dict(rank=rank, iter=it, peer=-1, flags=0, bytes=1 << 20,
                             t_post_ns=start + late, t_done_ns=start + 20_000))
    return pd.DataFrame(rows)


def test_a_rank_arriving_last_in_three_quarters_of_the_iterations_is_supporting_evidence():
    """A collective's rank that arrives last in at least 75 % of 10 or more iterations, its
    median lateness over 4x the median rank's: supporting evidence on both its sides."""
    found = supporting.collectives([_AllReduce(_arrivals(9))])
    assert [(f.rank, f.side, f.measure, f.primary) for f in found] == [(3, "both", "collective", False)]
    assert found[0].symptom == ("collective 0003 ar: arrives last in 75% of 12 iterations "
                                "(median 10.0 us after the first rank)")
    # the median rank is 150 ns late (between 100 and 200): 10,000 / 150
    assert found[0].ratio == pytest.approx(10_000 / 150)
    assert supporting.collectives([_AllReduce(_arrivals(8))]) == []      # 67 %
    assert supporting.collectives([_AllReduce(_arrivals(9, iterations=9))]) == []   # 9 iterations


# ------------------------------------------------------------------ pairs from the raw samples

class _Samples:
    index, metric = 2, "bandwidth"

    def __init__(self, rows):
        self.frame = pd.DataFrame(rows, columns=["rank", "peer", "iter", "bytes", "t_post_ns", "t_done_ns", "flags"])

    def get(self, key, default=None):
        return {"name": "bw"}.get(key, default)

    def samples(self):
        return self.frame


def test_pair_data_takes_each_pairs_median_stalls_and_stalled_blocks_from_its_own_samples():
    """Per measured (rank, peer): the median of its log seconds per byte (of the two middle
    samples for an even count), its samples beyond 5x that median, and its blocks of
    consecutive iterations (block length round(8^(1/3)) = 2 for the median pair's 8
    samples) measured and stalled. Left out: auxiliary samples, no peer, a rank with
    itself, a rank outside the run, no time, no bytes."""
    rows = []
    for it, t in enumerate((100, 110, 120, 130, 140, 150, 160, 1000)):     # 1000 > 5 x 134.9
        rows.append((0, 1, it, 1000, 10_000 * it, 10_000 * it + t, 0))
    for it in range(8):                                                       # its stall in block 3
        rows.append((1, 0, it, 1000, 10_000 * it, 10_000 * it + (3000 if it == 7 else 300), 0))
    for it, t in enumerate((240, 200, 230, 210, 220)):
        rows.append((2, 0, it, 1000, 10_000 * it, 10_000 * it + t, 0))
    rows += [(0, 2, 0, 1000, 0, 500, 0x100), (0, -1, 0, 1000, 0, 500, 0), (1, 1, 0, 1000, 0, 500, 0),
             (5, 0, 0, 1000, 0, 500, 0), (2, 1, 0, 1000, 700, 700, 0), (2, 1, 1, 0, 0, 500, 0)]
    d = model.pair_data(_Samples(rows), 3)
    assert (d.s.tolist(), d.r.tolist()) == ([0, 1, 2], [1, 0, 0])
    assert d.logt == pytest.approx([0.5 * (math.log(0.13) + math.log(0.14)), math.log(0.3), math.log(0.22)])
    assert d.samples.tolist() == [8, 8, 5]
    assert d.beyond.tolist() == [1, 1, 0]
    assert d.blocks.tolist() == [4, 4, 3]
    assert d.stalled_blocks.tolist() == [1, 1, 0]
    assert d.bandwidth and not d.symmetric


def test_layout_takes_every_ranks_host_leaf_gpu_and_nic_from_ranks():
    ranks = pd.DataFrame(dict(rank=[0, 1, 2, 3], host=["b", "b", "a", "c"], leaf=["L1", "L1", "L0", "L0"],
                              gpu=[0, 1, 0, 0], nic=["m0", "m1", "m0", "m0"]))
    result = SimpleNamespace(ranks=lambda: ranks, attrs={"nranks": 4})
    lay = model.Layout.of(result)
    assert (lay.n, lay.host_names, lay.host.tolist()) == (4, ["a", "b", "c"], [1, 1, 0, 2])
    assert (lay.leaf_names, lay.leaf.tolist()) == (["L0", "L1"], [1, 1, 0, 0])
    assert lay.gpu == {0: 0, 1: 1, 2: 0, 3: 0} and lay.nic[1] == "m1" and lay.ranks_per_host == 2
    assert [lay.host_of(r) for r in (0, 3, 4)] == ["b", "c", "rank 4"]


def test_a_fit_with_fewer_pairs_than_terms_keeps_a_finite_spread():
    """A ring of 4 ranks measures 4 pairs for 9 fitted terms: the degrees-of-freedom
    correction is capped at sqrt(cells / 1), not a division by zero or a negative."""
    lay = model.Layout(4, np.arange(4), np.zeros(4, dtype=np.int64), list("abcd"), [""], {}, {}, 1)
    s, r = np.arange(4), (np.arange(4) + 1) % 4
    y = np.log([1.0, 1.1, 1.3, 1.2])
    data = model.PairData(None, s, r, y, np.full(4, 20), np.zeros(4), symmetric=False, bandwidth=True)
    f = model.fit(data, lay)
    assert f.sigma_e == pytest.approx(1.4826 * float(np.median(np.abs(f.resid))) * math.sqrt(4 / 1))


# ------------------------------------------------------------------ the median polish

def test_fit_terms_add_back_to_each_pairs_log_time_and_rank_effects_are_centred():
    # 6 ranks on 3 hosts of one leaf, every ordered pair: y = mu + T[class] + a[s] + b[r] + e.
    # Centring the rank effects on their medians moves their level into the class terms,
    # so the terms still add up to each pair's log time
    from fabscope_analysis.diagnosis.model import Layout, PairData, fit
    layout = Layout(6, np.repeat(np.arange(3), 2), np.zeros(6, dtype=np.int64), ["a", "b", "c"], [""],
                    {}, {}, 2)
    s, r = np.array([(i, j) for i in range(6) for j in range(6) if i != j]).T
    rng = np.random.default_rng(5)
    cls = layout.classes()[s, r]
    y = -20.0 + np.array([0.0, 0.4])[cls] + 0.1 * np.arange(6)[s] + 0.05 * np.arange(6)[r] \
        + rng.normal(0.0, 0.01, len(s))
    data = PairData(None, s, r, y, np.full(len(s), 50), np.zeros(len(s)), symmetric=False, bandwidth=False)
    f = fit(data, layout)
    assert f.mu + f.cls_effect[cls] + f.send[s] + f.recv[r] + f.resid == pytest.approx(y, abs=1e-12)
    assert float(np.median(f.send)) == pytest.approx(0.0, abs=1e-12)
    assert float(np.median(f.recv)) == pytest.approx(0.0, abs=1e-12)
    # the residuals' sigma: 1.4826 x their MAD about 0, x sqrt(30 / (30 - 14 fitted terms))
    assert f.sigma_e == pytest.approx(1.4826 * float(np.median(np.abs(f.resid))) * math.sqrt(30 / 16))


def test_a_rank_that_never_sends_has_no_send_effect_and_the_others_are_centred_without_it():
    """Rank 5 only receives and rank 0 only sends: their missing sides are NaN, not a 0
    that would count in the median the other ranks' effects are centred on."""
    from fabscope_analysis.diagnosis.model import Layout, PairData, fit
    layout = Layout(6, np.repeat(np.arange(3), 2), np.zeros(6, dtype=np.int64), ["a", "b", "c"], [""],
                    {}, {}, 2)
    s, r = np.array([(i, j) for i in range(5) for j in range(1, 6) if i != j]).T
    y = -20.0 + 0.1 * np.arange(6)[s] + 0.05 * np.arange(6)[r] + np.random.default_rng(5).normal(0.0, 0.01, len(s))
    f = fit(PairData(None, s, r, y, np.full(len(s), 50), np.zeros(len(s)), symmetric=False, bandwidth=False),
            layout)
    assert np.isnan(f.send[5]) and np.isnan(f.recv[0]), (f.send, f.recv)
    assert float(np.median(f.send[:5])) == pytest.approx(0.0, abs=1e-12)
    assert float(np.median(f.recv[1:])) == pytest.approx(0.0, abs=1e-12)
    cls = layout.classes()[s, r]
    assert f.mu + f.cls_effect[cls] + f.send[s] + f.recv[r] + f.resid == pytest.approx(y, abs=1e-12)


def test_a_link_exactly_the_margin_slower_than_its_class_before_its_ends_effects_is_named():
    """links: a pair is named when it stands out after its ends' effects and its time is at
    least log(1.25) over its class's median before them. Six hosts, every ordered pair, a
    1 % noise; rank 0 sends and rank 1 receives 0.2 fast, and the pair 0 -> 1 takes exactly
    log(1.25) over the class median (0.0: the two middle values set to -t and +t): at the
    margin counts as past it, so the link is named (1.84x after its fast ends)."""
    from fabscope_analysis.diagnosis.model import Layout, PairData, fit, raw_classes
    margin = math.log(evidence.MARGIN)
    layout = Layout(6, np.arange(6), np.zeros(6, dtype=np.int64), list("abcdef"), [""], {}, {}, 1)
    s, r = np.array([(i, j) for i in range(6) for j in range(6) if i != j]).T
    y = np.random.default_rng(3).normal(0.0, 0.01, 30) - 0.2 * (s == 0) - 0.2 * (r == 1)
    pair = int(np.flatnonzero((s == 0) & (r == 1))[0])
    y[pair] = margin
    order = np.argsort(y)
    y -= (y[order[14]] + y[order[15]]) / 2
    y[pair] = margin
    t = min(-y[order[13]], y[order[16]]) / 2
    y[order[14]], y[order[15]] = -t, t
    data = PairData(None, s, r, y, np.full(30, 50), np.zeros(30), symmetric=False, bandwidth=False)
    assert raw_classes(data, layout).deviation[pair] == margin     # exactly at the margin
    found, tested = evidence.links(fit(data, layout), 1.0, 0.05, layout)
    assert [(e.key, round(e.ratio, 2)) for e in found] == [((0, 1), 1.84)] and tested == 30, found


def test_four_pairs_are_enough_to_name_a_link():
    """links needs at least 4 pairs: four round trips among 4 ranks (0 <-> 1 measured from
    both ends) with 0 -> 1 e^1 slower name that link (2.69x after its ends' effects)."""
    from fabscope_analysis.diagnosis.model import Layout, PairData, fit
    layout = Layout(4, np.arange(4), np.zeros(4, dtype=np.int64), list("abcd"), [""], {}, {}, 1)
    s, r = np.array([0, 0, 1, 1]), np.array([1, 2, 0, 3])
    y = np.array([1.0, 0.01, -0.01, 0.02])
    f = fit(PairData(None, s, r, y, np.full(4, 50), np.zeros(4), symmetric=True, bandwidth=False), layout)
    found, tested = evidence.links(f, 1.0, 0.05, layout)
    assert [(e.key, round(e.ratio, 3)) for e in found] == [((0, 1), 2.691)] and tested == 4, found


# ------------------------------------------------------------------ the tail test's power note

def test_a_run_with_few_iterations_says_how_much_power_its_tail_test_has(tmp_path):
    """Six ranks all-pairs: with 5 iterations a NIC stalling 1 % of its samples stalls a pair
    with 1 - 0.99^5 = 4.9 %, too rare to find with 80 % power, and the blind spots say so with
    the power; with 30 iterations (26 %) the tail test has the power and says nothing."""
    import re
    from fabscope_analysis import open_result
    from fabscope_analysis.diagnose import diagnose
    from synthetic import write_matrix_run
    found = {}
    for iterations in (5, 30):
        path = tmp_path / f"six-{iterations}.h5"
        write_matrix_run(path, nranks=6, iterations=iterations)
        with open_result(str(path), warn_incomplete=False) as result:
            out = diagnose(result)
        found[iterations] = [n for n in out.cannot_tell_for if n.startswith("lossy or flapping NICs")]
    assert found[30] == []
    assert len(found[5]) == 1, found
    power, pairs = (float(x) for x in re.search(r"with (\d+) % power from (\d+) pairs per rank",
                                                found[5][0]).groups())
    assert 0 <= power < 80 and pairs >= 5


def test_block_share_counts_a_host_pairs_gpu_pairs_both_ways_over_the_centre_tests():
    """Hosts 0 and 1 (ranks 0-1 and 2-3): the pairs between them in either direction, over
    every centre test; a tail test's pairs are not counted."""
    pairs = [(0, 2), (3, 1), (1, 2), (0, 1), (2, 3), (0, 4)]
    resid = np.array([1.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    fit = SimpleNamespace(data=SimpleNamespace(s=np.array([a for a, _ in pairs]), r=np.array([b for _, b in pairs])),
                          resid=resid)
    layout = SimpleNamespace(host=np.array([0, 0, 1, 1, 2, 2]))
    centre = SimpleNamespace(measure="centre", fit=fit)
    tail = SimpleNamespace(measure="tail", fit=fit)
    assert rules._block_share(layout, [centre, tail, centre], 0, 1) == (4, 6)
    assert rules._block_share(layout, [centre], 1, 0) == (2, 3)


def test_iterations_to_tell_scales_the_iterations_by_the_square_of_the_error_ratio():
    """The minimum detectable effect is (z_crit + z_power) x se; to bring it to ln 1.5 the
    standard error must shrink to ln 1.5 / (z_crit + z_power), which takes (se / that)^2 the
    iterations (an error falls with the square root of the samples), at least 2x."""
    target = math.log(1.5) / (2.0 + evidence.POWER_Z)
    for se, times in ((0.2, math.ceil((0.2 / target) ** 2)), (0.5, math.ceil((0.5 / target) ** 2)),
                      (0.1, 2)):
        text = evidence.iterations_to_tell({"z_crit": 2.0, "tau": 0.0, "se": se})
        assert text.startswith(f"about {times}x the iterations"), (se, text)
    assert math.ceil((0.2 / target) ** 2) == 2 and math.ceil((0.5 / target) ** 2) == 13
    # a spread tau between the ranks leaves sqrt(target^2 - tau^2) for the error: 4x here
    needed = math.sqrt(target ** 2 - 0.1 ** 2)
    assert math.ceil((0.2 / needed) ** 2) == 4
    assert evidence.iterations_to_tell({"z_crit": 2.0, "tau": 0.1, "se": 0.2}).startswith("about 4x")
    # a spread between the ranks beyond the target: more iterations cannot tell
    assert "more iterations will not separate" in evidence.iterations_to_tell(
        {"z_crit": 2.0, "tau": target, "se": 0.2})


def test_pass_sigma_of_the_fast_half_and_none_from_fewer_than_four_pairs():
    """(median - 25th percentile) / 0.6745 of the log pair values; 0 (no floor) from fewer
    than 4 usable pairs (non-finite and non-positive values dropped)."""
    assert retest.pass_sigma([1.0, 2.0, 3.0, float("nan"), 0.0], bandwidth=False) == 0.0
    logs = np.log([1.0, 2.0, 3.0, 4.0, 5.0])
    assert retest.pass_sigma([1.0, 2.0, 3.0, 4.0, 5.0], bandwidth=False) == \
        pytest.approx((np.median(logs) - np.percentile(logs, 25)) / 0.6745)
    assert retest.pass_sigma([1.0, 2.0, 3.0, 4.0, 5.0], bandwidth=True) == \
        pytest.approx((np.median(-logs) - np.percentile(-logs, 25)) / 0.6745)


# ------------------------------------------------------------------ host-pair tails

def _host_pair_tail_fit(stalled_blocks, blocks=20, hosts=6, samples=400):
    """One GPU pair per host pair (a < b, in order), one rank per host; each pair stalls
    in the given number of its `blocks` blocks of iterations, 3 samples per stalled block."""
    pairs = [(a, b) for a in range(hosts) for b in range(a + 1, hosts)]
    k = np.asarray(stalled_blocks, dtype=np.float64)
    data = SimpleNamespace(s=np.array([a for a, _ in pairs]), r=np.array([b for _, b in pairs]),
                           blocks=np.full(len(pairs), float(blocks)), stalled_blocks=k, beyond=3 * k,
                           samples=np.full(len(pairs), float(samples)))
    layout = SimpleNamespace(host=np.arange(hosts), host_names=[f"h{i}" for i in range(hosts)])
    return SimpleNamespace(data=data), layout


def test_host_pair_tails_expect_the_other_pairs_upper_share_and_divide_by_the_over_dispersion():
    """6 hosts, 15 host pairs of 20 blocks; (0, 1) stalls in 10, the rest in none.
    (0, 1) expects 20 x the 95 % upper bound of host 0's (or 1's) other 80 blocks, none
    stalled: 20 x ln 20 / 80 = 0.749. A quiet pair expects 20 x the largest bound among its
    hosts' other pairs and the rest: 4.24 next to host 0 or 1 (10 of 80 stalled), 2.83
    elsewhere (10 of 120); its Pearson term (0 - e)^2 / e is e, so the median of the 15 is
    4.24 and the over-dispersion 4.24 / 0.455 (the chi-square(1) median) = 9.3. The pair's
    p: 10 / 9.3 rounds up to 2 blocks needed against 0.749 / 9.3 expected."""
    from scipy.stats import chi2, poisson
    fit, layout = _host_pair_tail_fit([10] + [0] * 14)
    found = pair_tails.host_pair_tails(fit, layout)
    assert [e.key for e in found] == [(0, 1)]
    e = found[0]
    expected = 20 * math.log(20) / 80
    assert e.ratio == pytest.approx(10 / expected)
    near = 20 * float(chi2.ppf(0.95, 22)) / 2 / 80
    phi = near / 0.455
    assert near == pytest.approx(4.2406, abs=1e-4) and phi == pytest.approx(9.320, abs=1e-3)
    p = float(poisson.sf(1, expected / phi))
    assert e.z == pytest.approx(float(norm.isf(p)))
    assert e.q == pytest.approx(15 * p)
    assert e.pairs == 400
    assert e.detail.startswith("30 of their 400 samples stalled beyond 5x their pair's median, in 10 of 20 "
                               "blocks of iterations (0.7 expected")


def test_host_pair_tails_measure_over_dispersion_from_each_pairs_distance_to_what_it_expects():
    """8 hosts, 28 host pairs of 20 blocks: (0, 1) stalls in all 20, every other in one.
    Each pair expects 20 x the largest 95 % upper share of host a's other pairs, host b's
    and those touching neither; its Pearson term is (k - expected)^2 / expected with its own
    one stalled block counted, and the over-dispersion the median of the 28 / 0.455."""
    from scipy.stats import chi2
    k = np.array([20.0] + [1.0] * 27)
    fit, layout = _host_pair_tail_fit(k, hosts=8)
    pairs = [(a, b) for a in range(8) for b in range(a + 1, 8)]

    def upper(members):
        return float(chi2.ppf(0.95, 2 * (k[members].sum() + 1))) / 2 / (20 * len(members))
    expected = np.array([20 * max(upper([j for j, p in enumerate(pairs) if a in p and j != i]),
                                  upper([j for j, p in enumerate(pairs) if b in p and j != i]),
                                  upper([j for j, p in enumerate(pairs) if a not in p and b not in p]))
                         for i, (a, b) in enumerate(pairs)])
    phi = float(np.median((k - expected) ** 2 / expected)) / 0.455
    assert expected[0] == pytest.approx(20 * float(chi2.ppf(0.95, 14)) / 2 / 120) and phi > 1
    p = float(poisson.sf(math.ceil(20 / phi) - 1, expected[0] / phi))
    found = pair_tails.host_pair_tails(fit, layout)
    assert [e.key for e in found] == [(0, 1)], found
    assert found[0].ratio == pytest.approx(20 / expected[0]) and found[0].z == pytest.approx(float(norm.isf(p)))
    assert round(found[0].z, 2) == 4.36
    # the typical host pair's stall rate: 3 of its 400 samples (one stalled block), a share
    assert found[0].detail.endswith("typical host pair: 0.750% of samples)"), found[0].detail


# ------------------------------------------------------------------ supporting counters

def test_ip_local_drops_are_listed_from_two_per_mille_of_the_packets():
    """Packets the host's IP layer received but did not deliver (or was asked to send and
    did not): listed from 0.2 % of InReceives (OutRequests) up, with the count and side."""
    def frame(per_host):
        return pd.DataFrame([dict(source="snmp:Ip", host=h, name=n, delta=v) for h, counts in per_host.items()
                             for n, v in zip(("InReceives", "InDelivers", "OutRequests", "OutTransmits"), counts)])
    c = frame({"a": (10_000, 9_980, 10_000, 10_000),    # 20 lost of 10,000 in: 0.2 %
               "b": (10_000, 9_981, 10_000, 10_000),    # 19: below
               "c": (10_000, 10_000, 500, 499)})        # 1 of 500 out: 0.2 %
    assert supporting._ip_local_drops(c) == [("a", "ip local drops in", 20, "receive"),
                                             ("c", "ip local drops out", 1, "send")]


# ------------------------------------------------------------------ error counters

def test_a_physical_counter_names_a_host_whose_count_stands_out_by_value():
    """4 symbol errors on one host of six, none elsewhere. The other hosts' mean is 0 for
    it, its 95 % upper bound chi2(0.95, 2) / 2 / 5 = 0.599; a quiet host's Pearson term is
    (0 - 0.8)^2 / 0.8 (its others' mean 4/5, floored at 0.5) = 0.8, the median, so the
    over-dispersion is 0.8 / 0.455 = 1.76: 4 / 1.76 rounds up to 3 events against
    0.599 / 1.76 expected, p = 0.0051, under the first Benjamini-Hochberg bar 0.05 / 6."""
    from fabscope_analysis.diagnosis import counter_tests
    from scipy.stats import chi2, poisson
    counts = {f"h{i}": (4 if i == 0 else 0) for i in range(6)}
    phi = 0.8 / 0.455
    p = float(poisson.sf(math.ceil(4 / phi) - 1, float(chi2.ppf(0.95, 2)) / 2 / 5 / phi))
    assert p == pytest.approx(0.0051, abs=1e-4) and p < 0.05 / 6
    assert counter_tests.standing_out({("port", "symbol_error"): counts}, 0.05) == {"h0": ["port symbol_error"]}
    # one more error elsewhere and two more hosts: the bar falls to 0.05 / 8 and nobody is named
    counts.update(h6=0, h7=1)
    assert counter_tests.standing_out({("port", "symbol_error"): counts}, 0.05) == {}


def test_a_congestion_counter_or_one_read_on_three_hosts_names_nobody():
    """Discards and drops count the fabric's load, not a broken part; a counter read on
    fewer than 4 hosts has no rate to compare against."""
    from fabscope_analysis.diagnosis import counter_tests
    loud = {f"h{i}": (400 if i == 0 else 0) for i in range(8)}
    assert counter_tests.standing_out({("port", "symbol_error"): loud}, 0.05) == {"h0": ["port symbol_error"]}
    assert counter_tests.standing_out({("port", "rx_discards"): loud}, 0.05) == {}
    three = {h: loud[h] for h in ("h0", "h1", "h2")}
    assert counter_tests.standing_out({("port", "symbol_error"): three}, 0.05) == {}


# ------------------------------------------------------------------ local ranks

def _four_hosts_of_four(gpu):
    from fabscope_analysis.diagnosis.model import Layout
    return Layout(16, np.repeat(np.arange(4), 4), np.zeros(16, dtype=np.int64), list("abcd"), [""], gpu,
                  {r: f"mlx5_{r % 4}" for r in range(16)}, 4)


def test_a_ranks_local_rank_is_its_gpu_index_else_its_place_on_its_host():
    from fabscope_analysis.diagnosis import systemic
    labelled = _four_hosts_of_four({r: 3 - r % 4 for r in range(16)})     # GPUs listed in reverse
    assert systemic.local_index(labelled).tolist() == [3, 2, 1, 0] * 4
    unlabelled = _four_hosts_of_four({})
    assert systemic.local_index(unlabelled).tolist() == [0, 1, 2, 3] * 4


def test_a_local_rank_slow_in_round_trips_is_its_ranks_effect_not_half_of_it():
    """8 hosts x 4 GPUs, every round trip between hosts once, 1 % noise; local rank 3 adds
    log(1.4) to each round trip it takes part in. A round trip's fit gives a rank equal
    send and receive effects (both log 1.4), and the local rank's effect is their mean:
    1.40x, over its 8 ranks."""
    from fabscope_analysis.diagnosis import systemic
    from fabscope_analysis.diagnosis.model import Layout, PairData, fit
    host = np.arange(32) // 4
    layout = Layout(32, host, host // 4, [f"host{h}" for h in range(8)], ["leaf0", "leaf1"],
                    {r: r % 4 for r in range(32)}, {r: f"mlx5_{r % 4}" for r in range(32)}, 4)
    s, r = np.nonzero(np.triu(host[:, None] != host[None, :]))
    slot = np.arange(32) % 4 == 3
    logt = np.random.default_rng(4).normal(0.0, 0.01, len(s)) + math.log(1.4) * (slot[s].astype(float) + slot[r])
    f = fit(PairData(None, s, r, logt, np.full(len(s), 20.0), np.zeros(len(s)), symmetric=True, bandwidth=False),
            layout)
    found = systemic.local_ranks(f, layout, 1.0, 0.05 / 11)
    assert [(e.key, round(e.ratio, 2), e.pairs) for e in found] == [((3, "both"), 1.4, 8)], found


def test_a_local_rank_culprit_is_scored_and_worded_from_its_effect():
    """Local rank 3 on 4 hosts, sending at 1 / 1.4 of the typical, z 8.6 and q 1e-5: score
    round(0.4 + 0.04 x 8.6, 3) = 0.744, under 0.75, so 'medium' for all its small q; a
    local rank named on one side explains that side and the round trips (`both`) of its
    ranks, not the other side."""
    from fabscope_analysis.diagnosis import systemic
    from fabscope_analysis.diagnosis.evidence import Effect
    layout = _four_hosts_of_four({})
    e = Effect("local-rank", (3, "send"), 1.4, 8.6, 1e-5, 4, "the median of local rank 3's send effects")
    t = SimpleNamespace(local_ranks=[e], label="0002 bw", fit=SimpleNamespace(data=SimpleNamespace(bandwidth=True)))
    out = SimpleNamespace(local_ranks=set(), culprits=[])
    systemic.name_local_ranks(layout, [t], out)
    c = out.culprits[0]
    assert (c.host, c.ranks, c.direction, c.score, c.confidence) == \
        ("local rank 3", [3, 7, 11, 15], "send", 0.744, "medium")
    assert c.symptoms == ["send: bandwidth 71% of the typical [0002 bw]"]
    assert c.evidence[0] == "0002 bw: the median of local rank 3's send effects, z=8.6, q=1e-05 against the other " \
        "local ranks'"
    assert [systemic.explains(layout, out, 7, side) for side in ("send", "both", "receive")] == [True, True, False]
    assert not systemic.explains(layout, out, 6, "both")


# ------------------------------------------------------------------ naming

def test_every_host_of_a_leaf_of_two_or_more_standing_out_is_the_leaf():
    """Leaves of 2, 2 and 1 hosts (one rank each): both hosts of leaf 0 standing out are its
    switch or uplink; the lone host of leaf 2 is a host, not a leaf; one leaf is no leaf."""
    from fabscope_analysis.diagnosis.model import Layout
    layout = Layout(5, np.arange(5), np.array([0, 0, 1, 1, 2]), list("abcde"), ["L0", "L1", "L2"], {}, {}, 1)
    assert rules._leaves_of_hosts(layout, {0, 1, 4}) == [0]
    assert rules._leaves_of_hosts(layout, {0, 1, 2, 3}) == [0, 1]
    assert rules._leaves_of_hosts(layout, {1, 2, 3, 4}) == [1]
    one = Layout(5, np.arange(5), np.zeros(5, dtype=np.int64), list("abcde"), ["L0"], {}, {}, 1)
    assert rules._leaves_of_hosts(one, set(range(5))) == []


def test_host_pair_tails_judge_from_four_gpu_pairs_between_hosts_on_three_host_pairs():
    """The smallest test judged: 3 hosts, 4 GPU pairs between hosts (both directions of
    0-1, one each of 0-2 and 1-2). 0-1 stalls in all its 40 blocks, the others in none of
    their 1,000: it expects 40 x ln 20 / 1000 (host 0's other pair, none stalled), a ratio
    of 1000 / ln 20 = 334. One GPU pair fewer is too few to judge."""
    data = SimpleNamespace(s=np.array([0, 1, 0, 1]), r=np.array([1, 0, 2, 2]),
                           blocks=np.array([20.0, 20.0, 1000.0, 1000.0]),
                           stalled_blocks=np.array([20.0, 20.0, 0.0, 0.0]), beyond=np.array([40.0, 40.0, 0.0, 0.0]),
                           samples=np.array([400.0, 400.0, 20_000.0, 20_000.0]))
    layout = SimpleNamespace(host=np.arange(3), host_names=["a", "b", "c"])
    found = pair_tails.host_pair_tails(SimpleNamespace(data=data), layout)
    assert [(e.key, e.pairs) for e in found] == [((0, 1), 800)]
    assert found[0].ratio == pytest.approx(1000 / math.log(20))
    three = SimpleNamespace(**{k: v[1:] for k, v in vars(data).items()})
    assert pair_tails.host_pair_tails(SimpleNamespace(data=three), layout) == []


def test_a_sides_pairs_inside_its_leaf_are_judged_against_the_centre_by_the_margin():
    """_inside_leaf_too: a side is slow inside its own leaf too when the median of its pairs
    there, less the centre, reaches log(1.25) = 0.223: 0.40 - 0.10 = 0.30 does, 0.20 - 0.10
    does not (nor would 0.20 + 0.10 = 0.30 make it); one pair inside the leaf tells nothing
    (None); a side whose pairs are all inside its leaf is slow there by definition."""
    leaf = np.array([0, 0, 0, 1, 1])
    def null(values, peers):
        owner = np.zeros(len(peers), dtype=int)
        return (None, None, owner, np.asarray(values, dtype=float), np.asarray(peers))
    # rank 0: two peers inside its leaf (1, 2), two between leaves (3, 4)
    assert evidence._inside_leaf_too(null([0.40, 0.40, 0.9, 0.9], [1, 2, 3, 4]), 0, leaf, 0.10,
                                     1.25) is True
    assert evidence._inside_leaf_too(null([0.20, 0.20, 0.9, 0.9], [1, 2, 3, 4]), 0, leaf, 0.10,
                                     1.25) is False
    assert evidence._inside_leaf_too(null([0.40, 0.9, 0.9], [1, 3, 4]), 0, leaf, 0.10, 1.25) is None
    assert evidence._inside_leaf_too(null([0.0, 0.0], [1, 2]), 0, leaf, 0.10, 1.25) is True


def test_a_retested_pairs_short_last_block_is_folded_into_the_one_before():
    """retest_levels: a retested pair's level is its fastest block's median, blocks of
    block_length(n) samples in iteration order (3 for 16 and 17); a last block shorter than
    half a block (1 of 3) is folded into the one before, so one fast last sample is not a
    block of its own; a last block of 2 of 3 stands."""
    from fabscope_analysis.diagnosis.persistence import retest_levels

    def level(values):
        frame = pd.DataFrame({"rank": 0, "peer": 1, "iter": np.arange(len(values)), "v": values,
                              "control": False})
        return float(retest_levels(frame).loc[(0, 1, False, 1)])

    assert level([1.0] * 15 + [0.0]) == 1.0
    assert level([1.0] * 15 + [0.0, 0.0]) == 0.0
    # the fold leaves the other blocks as they were: a fast fourth block (iterations 9-11)
    # before the fifth, into which the 16th is folded, is still the fastest
    assert level([5.0] * 9 + [1.0] * 3 + [5.0] * 4) == 1.0
    # and the fifth block (12-14) is the one the 16th joins: 1, 1, 1, 5 have the median 1
    assert level([5.0] * 12 + [1.0] * 3 + [5.0]) == 1.0


def test_a_pair_is_explained_by_its_senders_send_side_or_its_receivers_receive_side_or_either_both():
    """_explained on a one-way test: a named (rank, side) explains the pair (s -> r) when it
    is s sending, r receiving, or either on both sides; s receiving or r sending does not.
    Ranks 0 and 2 on hosts a and b of one leaf, nothing else named."""
    from fabscope_analysis.diagnosis.model import Layout
    layout = Layout(8, np.repeat(np.arange(4), 2), np.repeat([0, 0, 1, 1], 2), list("abcd"), ["L0", "L1"], {}, {}, 2)
    one_way = SimpleNamespace(fit=SimpleNamespace(data=SimpleNamespace(symmetric=False)))
    explained = {side: rules._explained(layout, one_way, 0, 2, rules.Naming(sides={side}))
                 for side in ((0, "send"), (0, "receive"), (0, "both"), (2, "send"), (2, "receive"),
                              (2, "both"))}
    assert explained == {(0, "send"): True, (0, "receive"): False, (0, "both"): True,
                         (2, "send"): False, (2, "receive"): True, (2, "both"): True}


def test_a_host_pair_made_of_links_takes_their_highest_confidence_and_score():
    """_add_host_pair_from_links: the host pair replaces its links as one culprit, as
    confident as the most confident link (the order low < medium < high, not the
    alphabet's) and with the largest score."""
    from fabscope_analysis.diagnosis.model import Layout
    layout = Layout(8, np.repeat(np.arange(4), 2), np.repeat([0, 0, 1, 1], 2), list("abcd"), ["L0", "L1"], {}, {}, 2)
    links = [SimpleNamespace(confidence=c, score=s, symptoms=[f"link {c}"], evidence=[f"why {c}"])
             for c, s in (("medium", 3.0), ("high", 2.0), ("low", 5.0))]
    out = rules.Naming(culprits=list(links))
    rules._add_host_pair_from_links(layout, out, 0, 1, links, slow=3, measured=8, rest=None)
    [pair] = out.culprits
    assert (pair.host, pair.peer_host, pair.confidence, pair.score) == ("a", "b", "high", 5.0)
    assert out.host_pairs == {(0, 1)}


def _one_round(pairs, host):
    """tail ranks' first round over one test of (sender, receiver, stalled, samples)."""
    s, r, beyond, samples = (np.array(column, dtype=float) for column in zip(*pairs))
    data = SimpleNamespace(s=s.astype(int), r=r.astype(int), beyond=beyond, samples=samples)
    return tails._tail_ranks_round([SimpleNamespace(data=data)], np.asarray(host), set(), 0.05)


def test_tail_ranks_need_four_ranks_and_count_a_single_samples_stall():
    """_tail_ranks_round: fewer than 4 measured ranks give no finding and no candidate;
    a rank whose one sample stalled has a stall rate of 1, the others' 0 (its candidate
    stands however few samples it has: the count test, not the rate, judges it)."""
    three = [(0, 1, 50, 100), (0, 2, 50, 100), (1, 2, 0, 100)]     # rank 0 at 50 %, the others 25 %
    assert _one_round(three, [0, 1, 2]) == ([], {})
    once = [(0, 1, 1, 1), (2, 3, 0, 100), (4, 5, 0, 100), (6, 7, 0, 100)]
    _, candidates = _one_round(once, np.arange(8))
    assert sorted(candidates) == [(0, "both"), (1, "both")]
