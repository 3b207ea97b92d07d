"""The diagnosis's figures, words and decisions at the edges of their rules, each on a small
input built by hand: a rank without a GPU among ranks with one, a round trip's named side,
exactly the fewest pairs a rule takes, every pair slow, a latency test's words. The
end-to-end tests never reach these edges, where a bound off by one, a flipped branch or a
default changed alters an answer."""
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from fabscope_analysis.diagnosis import core, counter_tests, evidence, retest, rules, supporting, systemic
from fabscope_analysis.diagnosis.evidence import Effect
from fabscope_analysis.diagnosis.model import Layout
from fabscope_analysis.diagnosis.result import Finding
from fabscope_analysis.inference import PRACTICAL_MARGIN


def _layout(n, host, leaf, host_names, leaf_names, gpu=None, nic=None, per_host=1):
    return Layout(n, np.asarray(host), np.asarray(leaf), list(host_names), list(leaf_names), gpu or {},
                  nic or {}, per_host)


# ------------------------------------------------------------------ naming

def test_a_round_trip_is_explained_by_either_ends_named_side_of_any_direction():
    """_explained on a round-trip test (symmetric): a round trip cannot tell sending from
    receiving, so any named side of either end explains the pair, one named side is enough."""
    layout = _layout(8, np.repeat(np.arange(4), 2), np.repeat([0, 0, 1, 1], 2), "abcd", ["L0", "L1"], per_host=2)
    round_trip = SimpleNamespace(fit=SimpleNamespace(data=SimpleNamespace(symmetric=True)))
    for named in ((0, "send"), (0, "receive"), (2, "both"), (2, "send")):
        assert rules._explained(layout, round_trip, 0, 2, rules.Naming(sides={named})) is True
    assert rules._explained(layout, round_trip, 0, 2, rules.Naming(sides={(1, "send")})) is False


def test_a_leaf_culprit_words_each_tests_strongest_effect_among_its_hosts():
    """_add_leaf_from_hosts: both hosts of leaf 0 stand out in one latency test, 1.30x at
    z 5 and 1.60x at z 9: the leaf's symptom is the stronger one's, once per test."""
    layout = _layout(4, np.arange(4), [0, 0, 1, 1], "abcd", ["L0", "L1"])
    t = SimpleNamespace(label="0001 lat", fit=SimpleNamespace(data=SimpleNamespace(bandwidth=False)))
    weak = Effect("side", (0, "both"), 1.3, 5.0, 1e-3, 6, "weak")
    strong = Effect("side", (1, "both"), 1.6, 9.0, 1e-6, 6, "strong")
    out = rules.Naming()
    rules._add_leaf_from_hosts(layout, 0, {0: {"centre": [(t, weak)]}, 1: {"centre": [(t, strong)]}}, out)
    [leaf] = out.culprits
    assert leaf.host == "L0" and leaf.symptoms == ["every host in it: latency 1.60x the typical [0001 lat]"]
    assert out.leaves == {0} and out.hosts == {0, 1}


def test_a_local_rank_slow_in_a_latency_test_is_worded_as_times_the_typical():
    layout = _layout(16, np.repeat(np.arange(4), 4), np.zeros(16, dtype=np.int64), "abcd", [""], per_host=4)
    e = Effect("local-rank", (2, "both"), 1.5, 8.0, 1e-5, 4, "the median of local rank 2's effects")
    t = SimpleNamespace(local_ranks=[e], label="0003 lat", fit=SimpleNamespace(data=SimpleNamespace(bandwidth=False)))
    out = SimpleNamespace(local_ranks=set(), culprits=[])
    systemic.name_local_ranks(layout, [t], out)
    assert out.culprits[0].symptoms == ["both: latency 1.50x the typical [0003 lat]"]


def test_one_rank_without_a_gpu_index_makes_every_local_rank_its_place_on_its_host():
    """GPU indices of some ranks only cannot say the local rank of the others: all take
    their place on their host (ranks 2 and 3 on host 1, the GPU of rank 3 unknown)."""
    layout = _layout(4, [0, 0, 1, 1], [0, 0, 0, 0], "ab", [""], gpu={0: 1, 1: 0, 2: 1}, per_host=2)
    assert systemic.local_index(layout).tolist() == [0, 1, 0, 1]


def test_a_counter_culprit_on_a_rank_without_a_gpu_index_lists_gpu_minus_one():
    layout = _layout(4, [0, 0, 1, 1], [0, 0, 0, 0], "ab", [""], gpu={0: 0, 1: 1}, nic={2: "mlx5_0"}, per_host=2)
    support = [Finding(2, "receive", -1, "counters", "counters", "errors: port symbol_error +9", 1.0, 0.0)]
    [c] = core._counter_culprits(layout, support, [])
    assert (c.host, c.ranks, c.gpus, c.nics, c.direction) == ("b", [2], [-1], ["mlx5_0"], "receive")


# ------------------------------------------------------------------ blind spots

def _run(n, host, leaf, leaf_names, measured, host_pair_power=()):
    layout = _layout(n, host, leaf, [f"h{h}" for h in range(max(host) + 1)], leaf_names)
    return SimpleNamespace(label_blind=[], one_visit=[], layout=layout, measured=np.asarray(measured),
                           host_pair_power=list(host_pair_power), small_sides=[], path_blind=[],
                           between_slow=[], heavy_links=[], tail_power=None)


def test_blind_spots_name_host_pairs_only_when_one_was_never_measured():
    """3 hosts of 2 ranks (rank pair a*6 + b): 3 host pairs. Measuring 0-2 and 2-4 covers
    host pairs 0-1 and 1-2 only, so a cable fault between hosts 0 and 2 cannot be seen;
    adding 0-4 covers all three and only single GPU pairs stay unseen."""
    host, leaf = [0, 0, 1, 1, 2, 2], [0] * 6
    two = core._blind_spots(_run(6, host, leaf, ["L0"], [0 * 6 + 2, 2 * 6 + 4]))
    assert two[0].startswith("single GPU pairs and host pairs (cables): the tests measured 2 of 15 rank pairs")
    assert "and 2 of 3 host pairs" in two[0]
    three = core._blind_spots(_run(6, host, leaf, ["L0"], [0 * 6 + 2, 2 * 6 + 4, 0 * 6 + 4]))
    assert three[0].startswith("single GPU pairs: the tests measured 3 of 15 rank pairs")


def test_blind_spots_say_two_leaves_cannot_compare_uplinks_and_three_can():
    full = [a * 4 + b for a in range(4) for b in range(a + 1, 4)]
    two = core._blind_spots(_run(4, [0, 1, 2, 3], [0, 0, 1, 1], ["L0", "L1"], full))
    assert [x for x in two if x.startswith("leaf uplinks: with two leaves")]
    three = core._blind_spots(_run(4, [0, 1, 2, 3], [0, 0, 1, 2], ["L0", "L1", "L2"], full))
    assert not [x for x in three if x.startswith("leaf uplinks")]


def test_blind_spots_name_cables_too_thin_only_when_every_test_is():
    full = [a * 4 + b for a in range(4) for b in range(a + 1, 4)]
    one_thin = core._blind_spots(_run(4, [0, 1, 2, 3], [0] * 4, ["L0"], full, [(3, 6, 4), (0, 6, 4)]))
    assert not [x for x in one_thin if x.startswith("host pairs (cables)")]
    both = core._blind_spots(_run(4, [0, 1, 2, 3], [0] * 4, ["L0"], full, [(3, 6, 4), (5, 6, 4)]))
    assert [x for x in both if x.startswith("host pairs (cables)")] == [
        "host pairs (cables): 3 of the 6 host pairs measured have fewer than the 4 GPU pairs a block "
        "needs for even all of them slow to stand out at the false-discovery bar (all-pairs, or a "
        "larger budget, measures more)"]


# ------------------------------------------------------------------ retests

def test_a_retested_pair_without_a_positive_finite_value_is_inconclusive():
    """A retested pair measured 0, a negative or an infinite time says nothing of its
    pair: inconclusive, no ratio, against ten usable controls (the bar is still given)."""
    controls = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.03, 0.97, 1.01, 0.99]
    judged = retest.judge_retest({"zero": 0.0, "negative": -1.0, "infinite": math.inf, "slow": 3.0},
                                 controls, pool=100, bandwidth=False)
    by_pair = {j.pair: j for j in judged}
    for pair in ("zero", "negative", "infinite"):
        assert by_pair[pair].outcome == retest.INCONCLUSIVE and math.isnan(by_pair[pair].ratio)
    assert by_pair["slow"].outcome == retest.CONFIRMED and by_pair["slow"].ratio == pytest.approx(3.0)


# ------------------------------------------------------------------ sides beyond their leaf

def test_a_side_beyond_its_leaf_is_at_least_the_margin_past_its_leafs_median_and_significant():
    """_beyond_leaf: five send sides of one leaf, four at 0 (log) and one at x, each with a
    spread of 0.01: x = log 1.25 exactly is beyond (z 22), 0.01 under it is not (however
    significant), and a side without four peers in its leaf is beyond by default."""
    keys = [(r, "send") for r in range(5)]
    leaf, scale = np.zeros(5, dtype=np.int64), np.full(5, 0.01)
    at = np.array([0.0, 0.0, 0.0, 0.0, math.log(PRACTICAL_MARGIN)])
    assert bool(evidence._beyond_leaf(4, keys, at, scale, leaf, 0.05)) is True
    under = at - np.array([0, 0, 0, 0, 0.01])
    assert bool(evidence._beyond_leaf(4, keys, under, scale, leaf, 0.05)) is False
    assert evidence._beyond_leaf(2, keys[2:], under[2:], scale[2:], leaf, 0.05) is True


# ------------------------------------------------------------------ host pairs (cables)

def _cross_fit(sizes, slow_blocks=()):
    """A fit of 2 ranks per host: host pair (0, i + 1) holds sizes[i] GPU pairs (rank 0 ->
    rank 2 (i + 1), repeated), every one slow in the blocks listed in slow_blocks."""
    s, r, resid = [], [], []
    for i, size in enumerate(sizes):
        s += [0] * size
        r += [2 * (i + 1)] * size
        resid += [math.log(PRACTICAL_MARGIN) + 1.0 if i in slow_blocks else 0.0] * size
    hosts = len(sizes) + 1
    fit = SimpleNamespace(data=SimpleNamespace(s=np.array(s), r=np.array(r)), resid=np.array(resid))
    layout = _layout(2 * hosts, np.repeat(np.arange(hosts), 2), np.zeros(2 * hosts, dtype=np.int64),
                     [f"h{h}" for h in range(hosts)], ["L0"], per_host=2)
    return fit, layout


def test_host_pair_power_without_slow_pairs_takes_half_a_pair_as_the_pooled_share():
    """No slow pair among 8: the pooled share is 0.5 / 8 = 1/16, and at a bar of 2e-4 / 4
    host pairs a block of 4 all slow ((1/16)^4 = 1.5e-5) would stand out: 4 pairs needed,
    the three blocks of one pair are thin."""
    fit, layout = _cross_fit([1, 1, 1, 5])
    assert evidence.host_pair_power(fit, layout, 2e-4) == (3, 4, 4)


def test_host_pair_power_with_every_pair_slow_caps_the_pooled_share_below_one():
    """Every GPU pair slow: the pooled share is capped at 0.999, where a block of m all slow
    has p 0.999^m; at 0.05 / 4 host pairs that takes m = 4,380 (a share of exactly 1 would
    never let a block stand out)."""
    need = math.ceil(math.log(0.05 / 4) / math.log(0.999))
    assert need == 4380
    fit, layout = _cross_fit([4400] * 4, slow_blocks=(0, 1, 2, 3))
    assert evidence.host_pair_power(fit, layout) == (0, 4, need)


def test_a_host_pair_all_slow_has_the_binomial_p_of_all_its_trials_slow():
    """block_rest_p: host pair 0-1 has its 4 GPU pairs slow, the 4 other host pairs 1 of 4
    each, 8 of 20 pooled (share 0.4); the blocks' Pearson terms (0.6^2 / 0.96 for the quiet
    ones, the median) stay under 0.455, so no over-dispersion: all 4 trials slow, p 0.4^4."""
    fit, layout = _cross_fit([4] * 5, slow_blocks=(0,))
    fit.resid[4:] = 0.0
    fit.resid[4::4] = math.log(PRACTICAL_MARGIN) + 1.0       # one pair of each other block
    p, slow, measured = evidence.block_rest_p([fit], layout, (0, 1), set())
    assert (slow, measured) == (4, 4)
    assert p == pytest.approx(0.4 ** 4)
    assert p == pytest.approx(float(binom.sf(3, 4, 0.4)))


# ------------------------------------------------------------------ counters

def test_a_physical_counter_under_twice_the_other_hosts_mean_names_nobody_however_unlikely():
    """8 hosts: 180 symbol errors on one, 100 on each other: far beyond what the others'
    rate explains (Poisson), but under the rule's factor 2 of their mean: nobody; 250 is."""
    counts = {f"h{i}": (180 if i == 0 else 100) for i in range(8)}
    assert counter_tests.standing_out({("port", "symbol_error"): counts}, 0.05) == {}
    counts["h0"] = 250
    assert counter_tests.standing_out({("port", "symbol_error"): counts}, 0.05) == {"h0": ["port symbol_error"]}


def test_a_hosts_counter_finding_lists_its_first_four_counters():
    layout = _layout(8, np.arange(8), np.zeros(8, dtype=np.int64), [f"h{h}" for h in range(8)], ["L0"])
    moved = [("port", "link_downed", 4), ("port", "rx_crc_errors", 1), ("port", "symbol_error", 2),
             ("port", "tx_discards", 3), ("port", "xmit_overrun", 5)]
    frame = pd.DataFrame({"test": 0, "rank": 3, "source": [m[0] for m in moved], "name": [m[1] for m in moved],
                          "delta": [m[2] for m in moved]})
    findings, notes = supporting.counters(SimpleNamespace(all_counters=lambda: frame), layout)
    assert notes == []
    [f] = findings
    assert (f.rank, f.side, f.primary) == (3, "both", False)
    assert f.symptom == "errors: port link_downed +4, port rx_crc_errors +1, port symbol_error +2, " \
        "port tx_discards +3"


# ------------------------------------------------------------------ the median polish's spread

def test_a_class_of_one_pair_counts_as_a_fitted_term_of_the_spread():
    """6 ranks on 3 hosts: every pair between hosts (24) and one inside a host (0 -> 1), the
    only pair of its class. Fitted terms: 6 send, 6 receive and 2 class effects, so the
    residuals' sigma is 1.4826 x their MAD x sqrt(25 / (25 - 14))."""
    from fabscope_analysis.diagnosis.model import PairData, fit
    layout = _layout(6, np.repeat(np.arange(3), 2), np.zeros(6, dtype=np.int64), "abc", [""], per_host=2)
    pairs = [(i, j) for i in range(6) for j in range(6) if i // 2 != j // 2] + [(0, 1)]
    s, r = np.array(pairs).T
    assert np.bincount(layout.classes()[s, r]).tolist() == [1, 24]
    y = -20.0 + 0.1 * np.arange(6)[s] + 0.05 * np.arange(6)[r] + np.random.default_rng(7).normal(0.0, 0.01, len(s))
    f = fit(PairData(None, s, r, y, np.full(len(s), 50), np.zeros(len(s)), symmetric=False, bandwidth=False), layout)
    assert f.sigma_e == pytest.approx(1.4826 * float(np.median(np.abs(f.resid))) * math.sqrt(25 / 11))


class _Instance(dict):
    def __init__(self, index, **attrs):
        super().__init__(attrs)
        self.index = index


def test_a_serial_retest_is_judged_against_the_parallel_pass_it_names_and_none_without_one(monkeypatch):
    """_Run.retests: a serial retest is referred to the pass its retest_of names (test 0
    here); one without retest_of belongs to no pass and is not judged, not test 0's."""
    judged = []
    monkeypatch.setattr(core, "_judge_retest", lambda inst, parent, *rest: judged.append((inst.index, parent)))
    centre = SimpleNamespace(measure="centre", fit=SimpleNamespace(data=SimpleNamespace(inst=_Instance(0))),
                             label="0000 bw")
    run = SimpleNamespace(tests=[centre], widen=1.0, layout=None, notes=[], one_visit=[])
    core._Run.retests(run, [_Instance(0, name="bw"), _Instance(5, name="retest", **{"pass": "serial-retest"})])
    assert judged == [] and run.notes == []
    core._Run.retests(run, [_Instance(6, name="retest", retest_of=0, **{"pass": "serial-retest"})])
    assert judged == [(6, centre.fit)]
