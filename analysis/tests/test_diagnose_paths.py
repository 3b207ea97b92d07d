"""Faults on the paths between leaves (diagnosis/paths.py), on hand-built all-pairs
matrices fitted by the real model: each runs in well under a second.

- a NIC receiving 2x slower only from other leaves, its pairs inside its leaf typical:
  a culprit ("through the spine"), not dropped for its typical pairs inside the leaf;
- a spine -> leaf link at a fraction of its speed slows the share of the pairs into its
  leaf that ECMP hashes onto it: one finding for the leaf's spine links, beside
  collisions everywhere (no finding on a fabric of collisions alone);
- an uplink (both directions) is the leaf's uplinks, not its hosts;
- collisions on a share S of the pairs between leaves hide a leaf's link among k > (1-S)/S,
  and the verdict says so (one synthetic run through diagnose).
"""

import contextlib
import io
import math
import re
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import norm

from diagnosis_layouts import AllPairsBandwidth, regular_layout

from fabscope_analysis.diagnosis import diagnose, evidence, paths, rules, systemic
from fabscope_analysis.diagnosis.model import Layout, PairData, fit
from fabscope_analysis.diagnosis.result import LOCAL_RANK, NIC, SPINE_LINK, UPLINK
from fabscope_analysis.reader import open_result
from fabscope_analysis.synth import Cluster, generate


def _assert_score(culprit):
    """A culprit's score is round(min(1, 0.4 + 0.04 z), 3) of its largest z, and its word
    'high' below q 1e-4 with a score of 0.75, 'medium' below 1e-2 (z and q as printed in
    its evidence: z to 0.1, q to two digits)."""
    import re
    zs = [float(x) for x in re.findall(r"z=([0-9.]+)", " ".join(culprit.evidence))]
    qs = [float(x) for x in re.findall(r"q=([0-9.e+-]+)", " ".join(culprit.evidence))]
    assert zs and qs, culprit.evidence
    assert culprit.score == round(culprit.score, 3)
    assert abs(culprit.score - min(1.0, 0.4 + 0.04 * max(zs))) <= 0.04 * 0.05 + 5e-4
    q = min(qs)
    word = "high" if q < 1e-4 and culprit.score >= 0.75 else "medium" if q < 1e-2 else "low"
    assert culprit.confidence == word, (culprit.confidence, culprit.score, q)


def _layout(hosts=16, gpus=8, leaves=4) -> Layout:
    return regular_layout(hosts, gpus, leaves)


def _matrix(lay: Layout, seed: int, collisions: float = 0.03):
    """Every ordered pair of ranks on two hosts, log seconds per byte: noise of 1 %, and
    ECMP collisions under load (2x) on a share of the pairs between leaves."""
    rng = np.random.default_rng(seed)
    s, r = np.nonzero(lay.host[:, None] != lay.host[None, :])
    logt = rng.normal(0.0, 0.01, len(s))
    between = lay.leaf[s] != lay.leaf[r]
    logt[between & (rng.random(len(s)) < collisions)] += math.log(2.0)
    return s, r, logt


def _evidence(lay, s, r, logt):
    data = PairData(AllPairsBandwidth(), s, r, logt, np.full(len(s), 20.0), np.zeros(len(s)),
                    symmetric=False, bandwidth=True)
    f = fit(data, lay)
    q = 0.05 / 11
    sides, _ = evidence.side_effects(f, 1.0, q, lay.leaf)
    links, n_links = evidence.links(f, 1.0, q, lay)
    return rules.TestEvidence(f, "centre", sides=sides, links=links, n_links=n_links,
                              leaves=evidence.leaves(f, lay, 1.0, q),
                              paths=evidence.leaf_path_effects(f, lay, q))


def test_a_nic_slow_only_from_other_leaves_is_a_culprit_through_the_spine():
    lay = _layout()
    s, r, logt = _matrix(lay, seed=3)
    victim = 37                                   # host004, leaf1
    from_outside = (r == victim) & (lay.leaf[s] != lay.leaf[victim])
    logt[from_outside] += math.log(2.0)
    t = _evidence(lay, s, r, logt)
    spine = [e for e in t.sides if e.through_spine]
    assert [e.key for e in spine] == [(victim, "receive")], t.sides
    out = rules.name_components(lay, [t])
    assert [(c.component, c.ranks, c.direction) for c in out.culprits] == \
        [(NIC, [victim], "receive")], [c.line() for c in out.culprits]
    assert "through the spine" in out.culprits[0].symptoms[0], out.culprits[0].symptoms


def test_two_nics_of_a_leaf_slow_only_from_other_leaves_are_its_spine_links():
    lay = _layout()
    s, r, logt = _matrix(lay, seed=4)
    for victim in (37, 45):                       # host004 and host005, leaf1
        logt[(r == victim) & (lay.leaf[s] != 1)] += math.log(2.0)
    out = rules.name_components(lay, [_evidence(lay, s, r, logt)])
    assert [(c.component, c.host, c.ranks) for c in out.culprits] == \
        [(SPINE_LINK, "leaf1", [37, 45])], [c.line() for c in out.culprits]


def test_two_nics_of_a_leaf_slow_on_every_pair_stay_two_nics():
    """Only sides slow just through the spine are grouped into the leaf's links: two NICs
    of one leaf receiving 2x slower from every peer, their own leaf's included, are two NICs."""
    lay = _layout()
    s, r, logt = _matrix(lay, seed=4)
    for victim in (37, 45):
        logt[r == victim] += math.log(2.0)
    out = rules.name_components(lay, [_evidence(lay, s, r, logt)])
    assert sorted((c.component, c.ranks[0], c.direction) for c in out.culprits) == \
        [(NIC, 37, "receive"), (NIC, 45, "receive")], [c.line() for c in out.culprits]


def _blocks(counts):
    """Pairs between leaves from {(source leaf, destination leaf): (pairs, slow)}."""
    ls, lr, slow = [], [], []
    for (a, b), (m, k) in counts.items():
        ls += [a] * m
        lr += [b] * m
        slow += [True] * k + [False] * (m - k)
    ls, lr = np.array(ls), np.array(lr)
    return np.array(slow), ls != lr, (ls, lr)


def test_a_leaf_direction_is_its_slow_pairs_against_the_share_between_two_other_leaves():
    """Out of leaf 0: 10 of 20 pairs to leaf 1 and 8 of 20 to leaf 2 slow (share 0.45),
    against 2 of 20 each way between leaves 1 and 2 (share 0.1). The blocks' shares vary
    less than their pairs' draws would, so nothing is added to the binomial error and
    nothing of it is estimated from the blocks: 0.35 / sqrt(0.45 x 0.55 / 40 + 0.1 x 0.9
    / 40) is normal. Its pairs to one other leaf only are too few blocks to judge."""
    slow, between, block = _blocks({(0, 1): (20, 10), (0, 2): (20, 8), (1, 2): (20, 2), (2, 1): (20, 2)})
    k, m, share, p = paths._leaf_direction(slow, between, block, 3, 0, "send")
    assert (k, m, share) == (18, 40, pytest.approx(0.1))
    t = 0.35 / math.sqrt(0.45 * 0.55 / 40 + 0.1 * 0.9 / 40)
    assert p == pytest.approx(float(norm.sf(t)))
    assert paths._leaf_direction(slow, between, block, 3, 0, "receive") is None    # nothing into leaf 0
    slow, between, block = _blocks({(0, 1): (40, 18), (1, 2): (20, 2), (2, 1): (20, 2)})
    assert paths._leaf_direction(slow, between, block, 3, 0, "send") is None


def _rail(into_leaf0):
    """8 rails of 8 ranks (a rail-optimized fabric: every pair between two ranks' leaves
    crosses a spine), 56 blocks of 64 pairs. Collisions slow 3x one pair in two blocks of
    three (a share of 1.0 %); the blocks into leaf 0 get into_leaf0 (source leaf -> slow
    pairs) instead."""
    leaf = np.repeat(np.arange(8), 8)
    s, r = np.nonzero(leaf[:, None] != leaf[None, :])
    resid = np.zeros(len(s))
    for a in range(8):
        for b in range(8):
            if a == b:
                continue
            idx = np.flatnonzero((leaf[s] == a) & (leaf[r] == b))
            k = into_leaf0[a] if b == 0 else int((a + 2 * b) % 3 > 0)
            resid[idx[:k]] = math.log(3.0)
    return resid, s, r, leaf


def test_a_collision_bundle_in_one_block_is_no_spine_link_and_a_slow_link_in_every_block_is():
    """On a rail fabric a round's flows from one leaf go to one other leaf, and a bundle of
    them hashed onto few links collides: 24 of the 64 pairs from leaf 7 into leaf 0 slow,
    its other six blocks 0 or 1 as everywhere (the shape of the clean rail runs that named
    `spine links into leaf leaf0`, 20 of its 448 pairs at 2.78x against 1.0 %). Counted
    pair by pair that is 28 of 448 against 1.2 %, into leaf 0 and out of leaf 7; judged by
    blocks, one block alone moves the share and the spread among blocks together: nothing
    named. A spine -> leaf link at a tenth of its speed slows the eighth of the flows
    hashed onto it from every other leaf: 8 of 64 in each block into leaf 0 is the leaf's
    spine links in."""
    collided = {1: 0, 2: 1, 3: 1, 4: 0, 5: 1, 6: 1, 7: 24}
    resid, s, r, leaf = _rail(collided)
    q = 0.05 / 22
    assert paths.leaf_paths(resid, s, r, leaf, q) == []
    resid, s, r, leaf = _rail({a: 8 for a in range(1, 8)})
    found = paths.leaf_paths(resid, s, r, leaf, q)
    assert [(x, side, k, m) for x, side, k, m, *_ in found] == [(0, "receive", 56, 448)], found


def _through_link(lay, s, r, seed, leaf, both):
    """The pairs ECMP hashes onto one of 8 links of `leaf` (an eighth, drawn per flow):
    into the leaf, and with `both` out of it too."""
    rng = np.random.default_rng(seed)
    hashed = rng.integers(0, 8, len(s)) == 0
    into = (lay.leaf[r] == leaf) & (lay.leaf[s] != leaf)
    out_of = (lay.leaf[s] == leaf) & (lay.leaf[r] != leaf)
    return hashed & (into | (out_of if both else False))


def test_a_slow_spine_to_leaf_link_is_one_finding_and_collisions_alone_are_none():
    lay = _layout()
    s, r, logt = _matrix(lay, seed=5)
    clean = rules.name_components(lay, [_evidence(lay, s, r, logt.copy())])
    assert not clean.culprits, [c.line() for c in clean.culprits]
    logt[_through_link(lay, s, r, 6, leaf=2, both=False)] += math.log(3.0)
    out = rules.name_components(lay, [_evidence(lay, s, r, logt)])
    assert [(c.component, c.host, c.direction) for c in out.culprits] == \
        [(SPINE_LINK, "leaf2", "receive")], [c.line() for c in out.culprits]
    _assert_score(out.culprits[0])
    assert out.culprits[0].subject() == "spine links into leaf leaf2"
    assert out.culprits[0].line().startswith("spine links into leaf leaf2: pairs into the leaf from other "
                                              "leaves: "), out.culprits[0].line()
    # the pairs through the link are explained by it: what is left is the 2x collisions
    examples = [x for c in out.congestion for x in c.examples]
    assert examples and all(float(x.split()[-1][:-1]) < 2.5 for x in examples), examples


def test_a_slow_uplink_is_the_leafs_uplinks_not_its_hosts():
    lay = _layout()
    s, r, logt = _matrix(lay, seed=7)
    logt[_through_link(lay, s, r, 8, leaf=3, both=True)] += math.log(3.0)
    out = rules.name_components(lay, [_evidence(lay, s, r, logt)])
    assert [(c.component, c.host, c.direction) for c in out.culprits] == \
        [(UPLINK, "leaf3", "both")], [c.line() for c in out.culprits]
    _assert_score(out.culprits[0])
    assert out.culprits[0].subject() == "uplinks of leaf leaf3"


def _with_local_ranks(lay, s, r, logt):
    t = _evidence(lay, s, r, logt)
    t.local_ranks = systemic.local_ranks(t.fit, lay, 1.0, 0.05 / 11)
    return t


def test_one_local_rank_slow_on_every_host_is_one_systemic_finding():
    """Local rank 3 at 1.4x on all 16 hosts (its GPU and NIC on different NUMA nodes):
    one local-rank culprit, not a NIC culprit per host; one slow NIC stays that NIC."""
    lay = _layout()
    s, r, logt = _matrix(lay, seed=9)
    slot = (np.arange(lay.n) % 8) == 3
    logt[slot[s] | slot[r]] += math.log(1.4)
    out = rules.name_components(lay, [_with_local_ranks(lay, s, r, logt)])
    assert [(c.component, c.host) for c in out.culprits] == [(LOCAL_RANK, "local rank 3")], \
        [c.line() for c in out.culprits]
    assert out.culprits[0].ranks == [int(x) for x in np.flatnonzero(slot)]
    _assert_score(out.culprits[0])
    s, r, logt = _matrix(lay, seed=10)
    logt[s == 21] += math.log(1.4)
    out = rules.name_components(lay, [_with_local_ranks(lay, s, r, logt)])
    assert [(c.component, c.ranks, c.direction) for c in out.culprits] == [(NIC, [21], "send")], \
        [c.line() for c in out.culprits]


def _named(name, lay, effects_by_test):
    """Culprits name_leaf_paths or name_local_ranks gives for tests holding the effects."""
    from types import SimpleNamespace
    out = rules.Naming()
    tests = [SimpleNamespace(label=f"000{i} t{i}", fit=SimpleNamespace(data=SimpleNamespace(bandwidth=False)),
                             **{name: effects}) for i, effects in enumerate(effects_by_test)]
    (paths.name_leaf_paths if name == "paths" else systemic.name_local_ranks)(lay, tests, out)
    return out.culprits


def _effect(key, z, q):
    from types import SimpleNamespace
    return SimpleNamespace(key=key, z=z, q=q, ratio=1.5, detail="pairs between leaves 1.50x")


def test_a_leaf_path_and_a_local_rank_are_scored_by_their_largest_z_and_worded_by_their_smallest_q():
    """score = round(min(1, 0.4 + 0.04 z), 3) of the largest z over the tests that saw it;
    'high' needs q < 1e-4 and a score of 0.75, 'medium' q < 1e-2, else 'low'. The path
    and systemic fixtures above are all far past both (score 1, q ~ 1e-200)."""
    lay = _layout()
    for name, key in (("paths", lambda side: (2, side)), ("local_ranks", lambda side: (3, side))):
        strong = _named(name, lay, [[_effect(key("receive"), 10.3456, 5e-3)],
                                    [_effect(key("receive"), 6.0, 5e-5)]])
        assert [(c.score, c.confidence) for c in strong] == [(0.814, "high")], name
        middling = _named(name, lay, [[_effect(key("send"), 7.77, 5e-3)]])
        assert [(c.score, c.confidence) for c in middling] == [(0.711, "medium")], name
        weak = _named(name, lay, [[_effect(key("send"), 20.0, 2e-2)]])
        assert [(c.score, c.confidence) for c in weak] == [(1.0, "low")], name
        # a score just under 0.75 is not high however small q
        under = _named(name, lay, [[_effect(key("send"), 8.7, 1e-6)]])
        assert [(c.score, c.confidence) for c in under] == [(0.748, "medium")], name
        at = _named(name, lay, [[_effect(key("send"), 8.75, 1e-6)]])
        assert [(c.score, c.confidence) for c in at] == [(0.75, "high")], name
        # q of exactly 1e-4 is not below it; 1e-2 is low
        edge = _named(name, lay, [[_effect(key("send"), 20.0, 1e-4)]])
        assert [(c.score, c.confidence) for c in edge] == [(1.0, "medium")], name
        edge = _named(name, lay, [[_effect(key("send"), 20.0, 1e-2)]])
        assert [(c.score, c.confidence) for c in edge] == [(1.0, "low")], name


def test_sides_slow_only_through_the_spine_are_scored_and_worded_like_the_other_leaf_findings():
    """group_spine_sides: two receive sides of leaf 1 slow only from other leaves become its
    spine links, scored from the largest z and worded from the smallest q (q of exactly
    1e-2 is 'low', of exactly 1e-4 'medium', as the other leaf findings); a side with other
    evidence stays with its host."""
    from types import SimpleNamespace
    lay = _layout()
    t = SimpleNamespace(label="0002 ap-bandwidth")

    def side(rank, z, q, spine=True):
        return [(t, SimpleNamespace(key=(rank, "receive"), z=z, q=q, pairs=120, through_spine=spine))]
    for (z, q), expected in (((7.77, 1e-2), (0.711, "low")), ((8.75, 5e-5), (0.75, "high")),
                             ((30.0, 5e-3), (1.0, "medium")), ((30.0, 1e-4), (1.0, "medium"))):
        by_host = {4: {(37, "receive"): side(37, z, q)}, 5: {(45, "receive"): side(45, 1.0, 0.04)},
                   6: {(50, "receive"): side(50, 9.0, 1e-6, spine=False)}}
        out = rules.Naming()
        paths.group_spine_sides(lay, by_host, out)
        assert [(c.component, c.host, c.ranks, c.direction) for c in out.culprits] == \
            [(SPINE_LINK, "leaf1", [37, 45], "receive")]
        assert (out.culprits[0].score, out.culprits[0].confidence) == expected, (z, q)
        assert list(by_host) == [6] and out.paths == {(1, "receive")}
    # each rank's GPU from /ranks, -1 (as every finding writes it) for a rank without one
    assert out.culprits[0].gpus == [5, 5]
    unknown = Layout(lay.n, lay.host, lay.leaf, lay.host_names, lay.leaf_names,
                     {r: g for r, g in lay.gpu.items() if r != 45}, lay.nic, lay.ranks_per_host)
    out = rules.Naming()
    paths.group_spine_sides(unknown, {4: {(37, "receive"): side(37, 8.75, 5e-5)},
                                      5: {(45, "receive"): side(45, 1.0, 0.04)}}, out)
    assert out.culprits[0].gpus == [5, -1]


def test_a_leaf_direction_is_judged_at_whichever_of_its_two_bars_gives_the_smaller_p():
    """4 leaves of 8 ranks. Between two other leaves (and out of leaf 0) a quarter of the
    pairs are 1.5x (collisions) and one in 50 3x; into leaf 0 a third are 1.5x and an eighth
    3x (a link at a third of its speed). At the margin (1.25x) leaf 0 barely differs from
    the others; at their 99th percentile (3x) its 24 of 192 against 3.1 % stand out: that
    bar's p, the smaller, is the one judged (x 2, Bonferroni over the two bars)."""
    leaf = np.repeat(np.arange(4), 8)
    s, r = np.nonzero(leaf[:, None] != leaf[None, :])
    resid = np.zeros(len(s))
    for a, b in zip(*np.nonzero(~np.eye(4, dtype=bool))):   # the same in each block
        every3, every15 = (8, 3) if b == 0 else (50, 4)
        idx = np.flatnonzero((leaf[s] == a) & (leaf[r] == b))
        i = np.arange(len(idx))
        resid[idx[i % every15 == 1]] = math.log(1.5)
        resid[idx[i % every3 == 0]] = math.log(3.0)
    between, block = leaf[s] != leaf[r], (leaf[s], leaf[r])
    low = paths._leaf_direction(resid >= math.log(1.25), between, block, 4, 0, "receive")
    high = paths._leaf_direction(resid >= math.log(3.0), between, block, 4, 0, "receive")
    assert high[:2] == (24, 192) and high[3] < low[3]
    found = paths.leaf_paths(resid, s, r, leaf, 0.05)
    assert [(x, side, k, m) for x, side, k, m, *_ in found] == [(0, "receive", 24, 192)], found
    assert found[0][4] == pytest.approx(high[2]) and found[0][7] == pytest.approx(3.0)
    assert found[0][5] == pytest.approx(float(norm.isf(2 * high[3])))


def _between_leaf_pairs(leaves=4, per_leaf=4):
    n = leaves * per_leaf
    s, r = np.nonzero(~np.eye(n, dtype=bool))
    return s, r, np.arange(n) // per_leaf


def test_collisions_past_the_margin_on_a_share_s_hide_leaf_links_from_k_of_one_over_s():
    """Pairs between leaves at least the margin slow on a share S = 20 %: a leaf link
    slowing 1/k of its leaf's flows adds at most (1 - S)/k = 0.8/k, and the rule needs
    2 S = 40 %, so it is found only with k < 4: blind from 4 links ("more than 3"). The
    high bar is the 99th percentile of the pairs between leaves. At S = 2 % the limit
    (49 links) is beyond any leaf's, and with two leaves the uplink blind spot is
    another's: nothing is said."""
    s, r, leaf = _between_leaf_pairs(leaves=5)
    between = np.flatnonzero(leaf[s] != leaf[r])   # 320 of them
    resid = np.zeros(len(s))
    slow = between[: len(between) // 5]            # exactly 20 % of the pairs between leaves
    resid[slow] = math.log(3.0)
    said = paths.collision_blind_spot(resid, s, r, leaf, "0002 bw")
    assert said is not None and said.startswith(
        "an uplink or spine -> leaf link slowing its flows by less than 3.00x on a leaf of more "
        "than 3 link(s) to the spine: 0002 bw: 20.0 % of the pairs between leaves are at least "
        "1.25x slow under load"), said
    resid[:] = 0.0
    resid[between[: len(between) // 50]] = math.log(3.0)   # 2 %
    assert paths.collision_blind_spot(resid, s, r, leaf, "0002 bw") is None
    s2, r2, leaf2 = _between_leaf_pairs(leaves=2, per_leaf=8)
    resid2 = np.where(leaf2[s2] != leaf2[r2], math.log(3.0), 0.0)
    assert paths.collision_blind_spot(resid2, s2, r2, leaf2, "0002 bw") is None


def test_a_run_whose_collisions_hide_leaf_links_says_so_and_a_quiet_one_does_not(tmp_path):
    """Through diagnose: the family's realistic noise slows a fifth of the pairs between
    leaves 2x under load (8 hosts of 8 GPUs in 4 leaves), so a link of a leaf of more than
    3 is blind, said once, for the bandwidth test; with ideal noise nothing is said."""
    said = []
    for noise in ("realistic", "ideal"):
        path = tmp_path / f"{noise}.h5"
        generate(path, Cluster(8, 8, 4), noise=noise, seed=5)
        with open_result(path) as result, contextlib.redirect_stdout(io.StringIO()):
            d = diagnose(result)
        said.append([b for b in d.cannot_tell_for if b.startswith("an uplink or spine -> leaf link")])
    assert len(said[0]) == 1 and " on a leaf of more than 3 link(s) to the spine: 0002 ap-bandwidth: " in said[0][0]
    assert said[1] == [], said[1]


def test_a_leaf_directions_error_holds_the_spread_of_block_shares_beyond_their_pairs_draws():
    """Out of leaf 0: 10 and 8 of 20 (share 0.45; block shares 0.5 and 0.4, squares 0.005
    about it, where 20 pairs' draws expect 2 x 0.45 x 0.55 / 20 x (1 - 20/40)); between
    leaves 1 and 2: 0 and 8 of 20 (share 0.2; squares 0.08, draws expect 2 x 0.2 x 0.8 / 20
    x 0.5). What is left, over 4 blocks less 2 shares, is tau^2, the variance of a block's
    share beyond its draws; each group's share gets tau^2 x the sum of its blocks' squared
    weights (2 x 0.5^2) beside its binomial variance. The Wald t has the Welch-Satterthwaite
    degrees of freedom, 2 x (variance / its tau^2 part)^2: only tau^2 is estimated from
    the blocks."""
    from scipy.stats import t as t_dist
    slow, between, block = _blocks({(0, 1): (20, 10), (0, 2): (20, 8), (1, 2): (20, 0), (2, 1): (20, 8)})
    k, m, share, p = paths._leaf_direction(slow, between, block, 3, 0, "send")
    assert (k, m, share) == (18, 40, pytest.approx(0.2))
    beyond = (0.005 - 2 * 0.45 * 0.55 / 20 * 0.5) + (0.08 - 2 * 0.2 * 0.8 / 20 * 0.5)
    tau2 = beyond / 2
    var = 0.45 * 0.55 / 40 + 0.5 * tau2 + 0.2 * 0.8 / 40 + 0.5 * tau2
    assert p == pytest.approx(float(t_dist.sf(0.25 / math.sqrt(var), 2 * (var / tau2) ** 2)))


def test_a_side_needs_eight_pairs_between_leaves_for_its_path_through_the_spine():
    """between_leaves_p: rank 0 (leaf 0) with exactly 8 pairs to leaf 1, all 2x slow, against
    2 of rank 1's 10 pairs between leaves (share 0.2): p = 0.2^8; 7 pairs are too few."""
    from scipy.stats import binom
    leaf = np.array([0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])
    owner = np.array([0] * 8 + [1] * 10)
    peer = np.array(list(range(2, 10)) + list(range(2, 12)))
    own = np.array([math.log(2.0)] * 8 + [math.log(2.0)] * 2 + [0.0] * 8)
    p, m = paths.between_leaves_p((None, None, owner, own, peer), 0, leaf, 0.0)
    assert m == 8 and p == pytest.approx(float(binom.sf(7, 8, 0.2)))
    assert p == pytest.approx(0.2 ** 8)
    seven = np.arange(len(owner)) != 0
    assert paths.between_leaves_p((None, None, owner[seven], own[seven], peer[seven]), 0, leaf, 0.0) is None


def test_a_leaf_directions_ratio_is_its_slow_pairs_over_the_other_leaves_share_of_them(monkeypatch):
    """leaf_path_effects turns each leaf direction (paths.leaf_paths) into evidence: 12 of
    20 pairs slow where the pairs between two other leaves are slow at 0.1 is 12 / (0.1 x
    20) = 6 times what collisions explain."""
    found = [(1, "receive", 12, 20, 0.1, 4.5, 1e-3, 1.25)]
    monkeypatch.setattr(paths, "leaf_paths", lambda *args: found)
    data = SimpleNamespace(s=np.array([0]), r=np.array([1]), symmetric=False)
    lay = _layout(hosts=4, gpus=1, leaves=2)
    [e] = evidence.leaf_path_effects(SimpleNamespace(data=data, resid=np.zeros(1)), lay)
    assert (e.kind, e.key, e.ratio, e.z, e.q, e.pairs) == ("path", (1, "receive"), pytest.approx(6.0), 4.5,
                                                           1e-3, 20)
    assert e.detail == "12/20 at least 1.25x slower than their ends predict, against 10.0 % of the pairs " \
        "between two other leaves"
    # a round trip cannot tell into a leaf from out of it: no path evidence
    round_trip = SimpleNamespace(s=data.s, r=data.r, symmetric=True)
    assert evidence.leaf_path_effects(SimpleNamespace(data=round_trip, resid=np.zeros(1)), lay) == []


def test_a_host_pair_between_leaves_is_no_uplink_of_either_leaf():
    """A cable or port between host1 (leaf0) and host6 (leaf3) slows all 2 x 16 of their
    GPU pairs 3x: that is 32 of each leaf's 2 x 192 pairs to other leaves, far more than
    the collisions' 3 % explain. They all sit in one block of each direction (leaf0 to
    leaf3 and back), and a leaf direction is judged by its blocks, one of which cannot
    carry it: counted as they are, no leaf's links are read. The host pair's block
    explains them (the host-pair test finds it) and is left out of the count too."""
    lay = _layout(hosts=8, gpus=4, leaves=4)
    s, r, logt = _matrix(lay, seed=5)
    pair = ((lay.host[s] == 1) & (lay.host[r] == 6)) | ((lay.host[s] == 6) & (lay.host[r] == 1))
    logt[pair] += math.log(3.0)
    data = PairData(AllPairsBandwidth(), s, r, logt, np.full(len(s), 20.0), np.zeros(len(s)),
                    symmetric=False, bandwidth=True)
    f = fit(data, lay)
    q = 0.05 / 11
    host_pairs = evidence.host_pairs(f, lay, q)
    assert [e.key for e in host_pairs] == [(1, 6)]
    assert evidence.leaf_path_effects(f, lay, q) == []   # counted as they are
    assert evidence.leaf_path_effects(f, lay, q, host_pairs) == []


def test_diagnose_names_a_host_pair_between_leaves_alone(tmp_path):
    """The same through diagnose, on a synthetic run (8 hosts x 4 GPUs in 4 leaves, the
    realistic noise): the host pair, and no uplink of its leaves."""
    path = str(tmp_path / "pair.h5")
    generate(path, Cluster(hosts=8, gpus=4, leaves=4), faults=["host-pair:host1-host6:3.0"], seed=1)
    with open_result(path) as result, contextlib.redirect_stdout(io.StringIO()):
        culprits = diagnose(result).culprits
    assert [(c.component, c.host, c.peer_host) for c in culprits] == [("host-pair", "host1", "host6")]


def test_a_local_rank_that_is_one_rail_says_its_leaf_too():
    """On a rail-optimized fabric (NIC g of every host on leaf g) local rank 3's ranks
    are all of leaf3 and only them: the finding names the leaf as well, as the pairs
    cannot tell its switch from a placement. Where the leaf holds other local ranks too
    (two rails a leaf), or the local rank spans leaves (leaf-spine), it does not."""
    for leaf_of_local, said in ((lambda g: g, True), (lambda g: g // 2, False)):
        lay = regular_layout(8, 8, 8)
        lay.leaf = leaf_of_local(np.arange(lay.n) % 8)
        [culprit] = _named("local_ranks", lay, [[_effect((3, "both"), 9.0, 1e-6)]])
        leaf = lay.leaf_names[leaf_of_local(3)]
        assert any(f"all of {leaf} and only them" in e for e in culprit.evidence) == said, culprit.evidence
    [culprit] = _named("local_ranks", _layout(), [[_effect((3, "both"), 9.0, 1e-6)]])
    assert not any("only them" in e for e in culprit.evidence), culprit.evidence
    # local rank 3 over two leaves of 8 ranks each (with local rank 4): as many as either
    lay = regular_layout(8, 8, 8)
    local = np.arange(lay.n) % 8
    lay.leaf = np.where((local == 3) | (local == 4), lay.host // 4, 2 + local)
    lay.leaf_names = [f"leaf{x}" for x in range(10)]
    [culprit] = _named("local_ranks", lay, [[_effect((3, "both"), 9.0, 1e-6)]])
    assert not any("only them" in e for e in culprit.evidence), culprit.evidence


def test_a_leaf_direction_is_judged_from_min_leaf_pairs_between_two_other_leaves():
    """leaf_paths: leaf 0 (4 ranks), every pair into it 2x slow, against the pairs between
    leaf 1 (2 ranks) and leaf 2 (4 ranks), none slow: with exactly MIN_LEAF_PAIRS of those
    (docs/analysis.md: 16) its 24 slow pairs of 24 are the leaf's spine links in, against
    a share of 0.5 / 16; one pair fewer and the leaf is not judged."""
    leaf = np.array([0] * 4 + [1] * 2 + [2] * 4)
    s, r = np.array([(i, j) for i in range(len(leaf)) for j in range(len(leaf)) if leaf[i] != leaf[j]]).T
    resid = np.where(leaf[r] == 0, math.log(2.0), 0.0)
    others = (leaf[s] != 0) & (leaf[r] != 0)
    assert others.sum() == paths.MIN_LEAF_PAIRS
    found = paths.leaf_paths(resid, s, r, leaf, 0.01)
    assert [(x, side, k, m, share) for x, side, k, m, share, *_ in found] == \
        [(0, "receive", 24, 24, 0.5 / paths.MIN_LEAF_PAIRS)], found
    keep = np.arange(len(s)) != np.flatnonzero(others)[0]
    assert paths.leaf_paths(resid[keep], s[keep], r[keep], leaf, 0.01) == []


def test_a_spine_is_a_blind_spot_said_with_each_tests_share_of_slow_pairs_between_leaves():
    """A spine slows every leaf's flows through it alike: no leaf stands out, so the run
    says it cannot tell, with the share of pairs between leaves slow under load that a
    known-good run's same line can be held against. The share counts pairs between leaves
    at least the margin slow (exactly 20 % here; pairs inside a leaf do not count), and
    needs MIN_LEAF_PAIRS of them."""
    s, r, leaf = _between_leaf_pairs(leaves=5)
    between = np.flatnonzero(leaf[s] != leaf[r])
    resid = np.zeros(len(s))
    resid[between[: len(between) // 5]] = math.log(paths.MARGIN)   # on the margin: slow
    resid[np.flatnonzero(leaf[s] == leaf[r])] = math.log(3.0)      # inside leaves: not counted
    assert paths.slow_between_share(resid, s, r, leaf) == pytest.approx(0.2)
    few = np.arange(paths.MIN_LEAF_PAIRS - 1)
    assert paths.slow_between_share(resid[between[few]], s[between[few]], r[between[few]], leaf) is None
    assert paths.spine_blind_spot([]) is None
    said = paths.spine_blind_spot([("0002 bw", 0.2), ("0004 bw", 0.031)])
    assert said.startswith("a spine, or its links into every leaf, slowing the flows hashed "
                           "through it: "), said
    assert "(0002 bw: 20.0 %, 0004 bw: 3.1 % of the pairs between leaves at least 1.25x slow " \
        "under load)" in said and ";" not in said


def test_the_spine_comparison_is_a_signed_rank_over_the_blocks_of_pairs_between_leaves():
    """Every block of pairs from one leaf to another higher than the known-good run's is
    p = 1/2^blocks one-sided; blocks up and down alike are not; too few blocks in common
    cannot tell."""
    leaves = [f"leaf{i}" for i in range(4)]
    keys = [(a, b) for a in leaves for b in leaves if a != b]
    before = {k: (2, 64) for k in keys}
    share, base, p, blocks = paths.spine_against_baseline({k: (9, 64) for k in keys}, before)
    assert (blocks, round(share, 4), round(base, 4)) == (12, round(9 / 64, 4), round(2 / 64, 4))
    assert p == pytest.approx(1 / 2 ** 12)
    mixed = {k: (3 if i % 2 else 1, 64) for i, k in enumerate(keys)}
    assert paths.spine_against_baseline(mixed, before)[2] > 0.3
    assert paths.spine_against_baseline({k: (9, 64) for k in keys[:5]}, before) is None


def test_a_spine_is_named_against_a_known_good_run_of_the_fabric_and_the_fabric_again_is_not(tmp_path):
    """The same fabric (fabric_seed) measured three times: twice healthy, once with
    collisions on twice the pairs between leaves, as a slow spine makes them. Against the
    first, the second is a note (`not a spine`); the third is the spines, with both
    shares. Without a baseline none of it is said."""
    cluster = Cluster(hosts=8, gpus=4, leaves=4)
    runs = {}
    for name, noise, seed in (("base", "realistic", 1), ("again", "realistic", 2),
                              ("spine", "realistic+ecmp_share=0.4", 3)):
        runs[name] = tmp_path / f"{name}.h5"
        generate(runs[name], cluster, noise=noise, seed=seed, fabric_seed=7, controls=10)

    def against_base(name):
        with open_result(runs[name], warn_incomplete=False) as r, \
                open_result(runs["base"], warn_incomplete=False) as b:
            return diagnose(r, baseline=b)

    again = against_base("again")
    assert not [c for c in again.culprits if c.host == "(the spines)"], again.lines()
    assert [n for n in again.notes if n.startswith("spine against the baseline: ") and
            n.endswith("not a spine")], again.notes
    spine = against_base("spine")
    [found] = [c for c in spine.culprits if c.host == "(the spines)"]
    now, before = (float(x) for x in re.findall(r"([\d.]+) %", found.symptoms[0]))
    assert now >= 2 * before > 0, found.symptoms
    assert "signed rank over 12 blocks" in found.evidence[0]
