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

from fabscope_analysis.diagnosis import core, counter_tests, evidence, labels, paths, retest, rules, \
    supporting, systemic
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
                           heavy_links=[], tail_power=None)


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
