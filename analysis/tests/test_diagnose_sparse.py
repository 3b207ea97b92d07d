"""The diagnosis of sparse designs (rings, matchings, thinned matrices, hierarchical), on
hand-built fits: each test builds the few arrays one rule reads, so it runs in
milliseconds. What each guards was seen on synthetic 64 hosts x 8 GPUs with realistic
noise (docs/analysis.md, "Measured error rates")."""

import math

import numpy as np
import pytest

from fabscope_analysis.diagnosis import evidence, rules, tails
from fabscope_analysis.diagnosis.model import Fit, Layout, PairData
from fabscope_analysis.diagnosis.result import HOST_PAIR, LINK
from fabscope_analysis.diagnosis.retest import CONFIRMED, RetestJudgement


class _Inst:
    index = 0

    def get(self, key, default=None):
        return "synthetic" if key == "name" else default


def _layout(hosts=8, gpus=2, leaves=2) -> Layout:
    n = hosts * gpus
    host = np.arange(n) // gpus
    leaf = host // (hosts // leaves)
    return Layout(n, host, leaf, [f"host{h}" for h in range(hosts)],
                  [f"leaf{x}" for x in range(leaves)], {r: r % gpus for r in range(n)},
                  {r: f"mlx5_{r % gpus}" for r in range(n)}, gpus)


def _fit(s, r, logt, resid, n, beyond=None, cls_effect=None) -> Fit:
    s, r = np.asarray(s), np.asarray(r)
    beyond = np.zeros(len(s)) if beyond is None else np.asarray(beyond, dtype=np.float64)
    data = PairData(_Inst(), s, r, np.asarray(logt, dtype=np.float64), np.full(len(s), 20.0),
                    beyond, symmetric=False, bandwidth=True)
    resid = np.asarray(resid, dtype=np.float64)
    sigma = 1.4826 * float(np.median(np.abs(resid)))
    cls = np.zeros(1) if cls_effect is None else cls_effect
    return Fit(data, 0.0, cls, np.zeros(n), np.zeros(n), resid, sigma,
               np.bincount(s, minlength=n), np.bincount(r, minlength=n))


def _all_pairs(lay: Layout, seed=1):
    s, r = np.nonzero(lay.host[:, None] != lay.host[None, :])
    noise = np.random.default_rng(seed).normal(0.0, 0.05, len(s))
    return s, r, noise


def test_a_link_must_also_stand_out_of_its_class_before_any_ends_effect():
    """A sparse design's polish can raise a pair's residual by its ends' errors (a ring's
    ranks, their effects raised by collisions on their few other pairs): 1.6x after its
    ends, its time as its class's typical pair, is no link; a pair slow both ways is."""
    lay = _layout()
    s, r, noise = _all_pairs(lay)
    logt, resid = noise.copy(), noise.copy()
    artefact, slow = 3, 40
    resid[artefact] = math.log(1.6)
    logt[slow] = resid[slow] = math.log(3.0)
    found, _ = evidence.links(_fit(s, r, logt, resid, lay.n), 1.0, 0.01, lay)
    assert [e.key for e in found] == [(int(s[slow]), int(r[slow]))], found


@pytest.mark.parametrize("hosts, nl", [(8, 4), (6, 3)])
def test_a_leaf_needs_its_raw_class_medians_to_stand_out_too(hosts, nl):
    """A class term the polish put 0.5 off (its ends' effects absorbed the rest) is no
    slow uplink when the pairs' own times through that leaf are within the margin of the
    others' (1.1x, which their class means find); a leaf whose pairs between leaves are
    1.6x, in the times and in the class terms, is. Three leaves are enough (each leaf's
    contrast the median over the two others)."""
    lay = _layout(hosts=hosts, gpus=2, leaves=nl)
    s, r, noise = _all_pairs(lay)
    cls = lay.classes()[s, r]
    leaf_s, leaf_r = lay.leaf[s], lay.leaf[r]
    for slow_times in (False, True):
        terms = np.zeros(1 + nl * nl)
        logt = noise.copy()
        if slow_times:   # leaf 2's uplink: every pair through it, in the times and the terms
            through = (leaf_s != leaf_r) & ((leaf_s == 2) | (leaf_r == 2))
            logt[through] += math.log(1.6)
            for x in range(nl):
                if x != 2:
                    terms[1 + 2 * nl + x] = terms[1 + x * nl + 2] = math.log(1.6)
        else:            # the polish's artefact: leaf 2's pairs inside it pushed down,
            terms[1 + 2 * nl + 2] = -0.5
            # and its pairs between leaves 1.1x: their means stand out, under the margin
            logt[(leaf_s != leaf_r) & ((leaf_s == 2) | (leaf_r == 2))] += math.log(1.1)
        fit = _fit(s, r, logt, noise - terms[cls] * 0, lay.n, cls_effect=terms)
        found = evidence.leaves(fit, lay, 1.0, 0.01)
        assert [e.key for e in found] == ([(2,)] if slow_times else []), (slow_times, found)


def test_host_pairs_between_leaves_are_judged_against_blocks_between_leaves():
    """Hierarchical: every GPU pair measured within leaves (no collisions), between leaves
    a pair per host pair from the matchings, a fifth of them collided under load. A block of 3 collided
    of 4 is what collisions do (against the share within leaves it was a cable); a block
    of 16 of 16 slow is a cable."""
    lay = _layout(hosts=32, gpus=8, leaves=4)
    rng = np.random.default_rng(3)
    s, r = np.nonzero(lay.host[:, None] != lay.host[None, :])
    inside = lay.leaf[s] == lay.leaf[r]
    keep = inside.copy()
    size = {(0, 8): 4, (0, 31): 16}
    first = np.flatnonzero(~inside & (lay.host[s] < lay.host[r]))
    first = first[np.argsort(lay.host[s[first]] * 32 + lay.host[r[first]], kind="stable")]
    block_of = lay.host[s[first]] * 32 + lay.host[r[first]]
    for key, start in zip(*np.unique(block_of, return_index=True)):
        keep[first[start:start + size.get(divmod(int(key), 32), 1)]] = True
    s, r = s[keep], r[keep]
    inside = lay.leaf[s] == lay.leaf[r]
    resid = rng.normal(0.0, 0.05, len(s))
    resid[~inside & (rng.random(len(s)) < 0.2)] += math.log(2.0)
    collided = np.flatnonzero((lay.host[s] == 0) & (lay.host[r] == 8))
    resid[collided[:3]] = math.log(2.0)
    resid[collided[3:]] = 0.0
    cable = np.flatnonzero((lay.host[s] == 0) & (lay.host[r] == 31))
    resid[cable] = math.log(2.0)
    found = evidence.host_pairs(_fit(s, r, resid, resid, lay.n), lay, 0.05)
    assert [e.key for e in found] == [(0, 31)], found


def test_a_side_whose_few_pairs_caught_the_tests_only_stalls_is_no_lossy_nic():
    """A ring: four pairs a rank side, 2 stalled pairs of 2,048 both on one send side
    (the pooled share, estimated from nothing, nearly 0): chance, not a NIC; a side all
    four of whose pairs stalled is one."""
    n = 512
    s = np.repeat(np.arange(n), 4)
    r = (s + np.tile([1, 37, 101, 211], n)) % n
    beyond = np.zeros(len(s))
    beyond[[7 * 4, 7 * 4 + 1]] = 1
    fit = _fit(s, r, np.zeros(len(s)), np.zeros(len(s)), n, beyond=beyond)
    host = np.arange(n) // 8
    assert tails.tail_sides(fit, host, 0.001) == []
    beyond[9 * 4: 9 * 4 + 4] = 1
    fit = _fit(s, r, np.zeros(len(s)), np.zeros(len(s)), n, beyond=beyond)
    assert [e.key for e in tails.tail_sides(fit, host, 0.001)] == [(9, "send")]


def _evidence(lay, s, r, resid, links):
    fit = _fit(s, r, resid, resid, lay.n)
    return rules.TestEvidence(fit, "centre", links=links, n_links=len(s))


def _link(s, r, ratio=2.0):
    return evidence.Effect("link", (int(s), int(r)), ratio, 8.0, 1e-9, 1)


def test_a_slow_pair_inside_a_leaf_is_named_beside_many_collisions_between_leaves():
    """Collisions under load slow pairs between leaves only: a hundred of them, with
    three hundred more slowed short of significance, are a congestion finding, and say
    nothing of the one slow pair inside a leaf."""
    lay = _layout(hosts=16, gpus=8, leaves=4)
    s, r, resid = _all_pairs(lay)
    crossing = np.flatnonzero(lay.leaf[s] != lay.leaf[r])
    between = crossing[::97][:100]
    resid[crossing[1::29][:300]] = math.log(1.3)
    inside = np.flatnonzero((lay.host[s] == 0) & (lay.host[r] == 1))[0]
    resid[between] = resid[inside] = math.log(2.0)
    links = [_link(s[i], r[i]) for i in list(between) + [inside]]
    out = rules.name_components(lay, [_evidence(lay, s, r, resid, links)])
    assert [(c.component, c.ranks) for c in out.culprits] == \
        [(LINK, [int(s[inside]), int(r[inside])])], out.culprits
    assert out.congestion and out.congestion[0].slow_pairs == 100


def test_slow_gpu_pairs_between_two_hosts_are_one_host_pair():
    """A thinned matrix kept 4 GPU pairs between two hosts of a leaf, all slow: one host
    pair (a cable or port), not four links; one slow pair among normal ones stays a link."""
    lay = _layout(hosts=16, gpus=8, leaves=4)
    s, r, resid = _all_pairs(lay)
    keep = ~((lay.host[s] // 2 == lay.host[r] // 2) & (lay.host[s] != lay.host[r]))
    pairs01 = np.flatnonzero((lay.host[s] == 0) & (lay.host[r] == 1))[:4]
    pairs23 = np.flatnonzero((lay.host[s] == 2) & (lay.host[r] == 3))[:4]
    keep[pairs01] = keep[pairs23] = True
    s, r, resid = s[keep], r[keep], resid[keep]
    slow01 = np.flatnonzero((lay.host[s] == 0) & (lay.host[r] == 1))
    one23 = np.flatnonzero((lay.host[s] == 2) & (lay.host[r] == 3))[0]
    resid[slow01] = resid[one23] = math.log(2.0)
    links = [_link(s[i], r[i]) for i in list(slow01) + [one23]]
    out = rules.name_components(lay, [_evidence(lay, s, r, resid, links)])
    named = sorted((c.component, c.host, c.peer_host) for c in out.culprits)
    assert named == [(HOST_PAIR, "host0", "host1"), (LINK, "host2", "host3")], named
    # the host pair says why, and keeps each link's own line and first evidence
    cable = next(c for c in out.culprits if c.component == HOST_PAIR)
    assert cable.symptoms[0] == "4/4 of the GPU pairs measured between them at least 1.25x slower than their " \
        "ends predict" and len(cable.symptoms) == 5, cable.symptoms
    assert cable.evidence[0] == "4 slow GPU pairs between the two hosts, each a link by itself", cable.evidence
    assert len(cable.evidence) == 5 and all(e.startswith("residual z=") for e in cable.evidence[1:]), cable.evidence


def _between(lay, s, r, a, b):
    return ((lay.host[s] == a) & (lay.host[r] == b)) | ((lay.host[s] == b) & (lay.host[r] == a))


def _thinned_test(lay, rng, block_keep):
    """One test of a 10 % thinned matrix: a fifth of the pairs between leaves collided
    under load (2x), `block_keep` GPU pairs kept of each host pair named in it."""
    s, r = np.nonzero(lay.host[:, None] != lay.host[None, :])
    keep = rng.random(len(s)) < 0.1
    for (a, b), m in block_keep.items():
        block = np.flatnonzero(_between(lay, s, r, a, b))
        keep[block] = False
        keep[block[:m]] = True
    s, r = s[keep], r[keep]
    resid = rng.normal(0.0, 0.05, len(s))
    resid[(lay.leaf[s] != lay.leaf[r]) & (rng.random(len(s)) < 0.2)] += math.log(2.0)
    return s, r, resid


def test_one_confirmed_link_whose_thinned_block_is_all_slow_is_a_host_pair():
    """A thinned matrix keeps a handful of GPU pairs of a host pair in each test; between
    leaves, where collisions under load slow a fifth of the pairs, 6 of 6 slow is no
    finding among hundreds of blocks. One GPU pair confirmed slow alone by the serial
    retest asks the question of its host pair only: its other GPU pairs, over both
    tests (both directions of the confirmed one left out), all slow, are the cable (host0-host15). A confirmed link whose other GPU
    pairs are as the pooled share says (host1-host14) stays a link."""
    lay = _layout(hosts=16, gpus=8, leaves=4)
    rng = np.random.default_rng(5)
    tests = []
    for t in range(2):
        s, r, resid = _thinned_test(lay, rng, {(0, 15): 5, (1, 14): 5})
        cable = np.flatnonzero(_between(lay, s, r, 0, 15))
        resid[cable] = math.log(2.0)
        other = np.flatnonzero(_between(lay, s, r, 1, 14))
        resid[other] = 0.0
        resid[other[0]] = math.log(2.0)
        links = [_link(s[i], r[i]) for i in (cable[0], other[0])] if t == 0 else []
        ev = _evidence(lay, s, r, resid, links)
        ev.retest = {e.key: RetestJudgement(e.key, CONFIRMED, 1.9, 1.4, 10, 0.05) for e in links}
        tests.append(ev)
    out = rules.name_components(lay, tests, 0.05 / 11)
    named = sorted((c.component, c.host, c.peer_host) for c in out.culprits)
    assert named == [(HOST_PAIR, "host0", "host15"), (LINK, "host1", "host14")], named
    cable = next(c for c in out.culprits if c.component == HOST_PAIR)
    assert "8/8 of the others slow" in cable.evidence[0], cable.evidence   # both ways of the link left out


def test_each_error_counter_is_put_on_the_side_it_counts():
    """Supporting evidence names a NIC's receive or send side from the counters the
    inventory reads (sysfs port counters, ethtool and /proc/net/snmp names)."""
    from fabscope_analysis.diagnosis.supporting import _side_of
    sides = {name: _side_of(name) for name in (
        "port_rcv_errors", "port_rcv_remote_physical_errors", "rx_dropped", "rx_errors", "InErrs",
        "port_xmit_discards", "tx_dropped", "tx_errors", "OutRsts", "symbol_error", "link_downed")}
    assert sides == {"port_rcv_errors": "receive", "port_rcv_remote_physical_errors": "receive",
                     "rx_dropped": "receive", "rx_errors": "receive", "InErrs": "receive",
                     "port_xmit_discards": "send", "tx_dropped": "send", "tx_errors": "send",
                     "OutRsts": "send", "symbol_error": "both", "link_downed": "both"}


def test_pairs_inside_a_host_have_their_own_tail():
    """Pairs inside a host cross no NIC: their spread is the hosts' software time, in the
    validation world heavy-tailed where the fabric's pairs between hosts are not. A pair
    between hosts 1.6x slower is judged against the tail of its own kind and named;
    pooled with the pairs inside hosts, their tail would hide it."""
    lay = _layout(hosts=8, gpus=8, leaves=1)
    s, r = np.nonzero(~np.eye(lay.n, dtype=bool))
    rng = np.random.default_rng(4)
    inside = lay.host[s] == lay.host[r]
    resid = np.where(inside, 0.12 * rng.standard_t(2, len(s)), rng.normal(0.0, 0.03, len(s)))
    bad = np.flatnonzero(~inside)[100]
    resid[bad] = math.log(1.6)
    links, _ = evidence.links(_fit(s, r, resid, resid, lay.n), 1.0, 0.002, lay)
    assert [e.key for e in links] == [(int(s[bad]), int(r[bad]))], links


def test_a_pair_inside_a_host_is_judged_against_the_pair_effects_tail_the_hosts_spread_hides():
    """Every pair carries its own effect, a Student-t of 3 degrees of freedom here; inside a
    host the hosts' software time adds a wider normal spread, whose bulk the fit of the
    448 pairs inside hosts reads (a light tail) while the pairs between hosts show the
    pair effects' tail. One pair inside a host drawn 4x slow is within that tail: not a
    link. Where the pairs between hosts are normal, the same pair is still named."""
    lay = _layout(hosts=8, gpus=8, leaves=1)
    s, r = np.nonzero(~np.eye(lay.n, dtype=bool))
    rng = np.random.default_rng(11)
    inside = lay.host[s] == lay.host[r]
    software = np.where(inside, rng.normal(0.0, 0.12, len(s)), 0.0)
    drawn = int(np.flatnonzero(inside)[200])
    for effects, named in ((0.06 * rng.standard_t(3, len(s)), []),
                           (rng.normal(0.0, 0.06, len(s)), [(int(s[drawn]), int(r[drawn]))])):
        resid = effects + software
        resid[drawn] = math.log(4.0)
        links, _ = evidence.links(_fit(s, r, resid, resid, lay.n), 1.0, 0.002, lay)
        assert [e.key for e in links] == named, links


def test_a_link_confirmed_alone_keeps_its_confidence_and_a_weak_one_is_raised_to_medium():
    """Two slow pairs inside a leaf, both confirmed by the serial retest: the strong one
    (z 10, q 1e-9) stays 'high' (0.8), the weak one (z 2, q 0.02: 'low') is raised to
    'medium' by the retest. Without GPU labels each end's GPU is -1."""
    lay = _layout(hosts=8, gpus=2, leaves=2)
    lay = Layout(lay.n, lay.host, lay.leaf, lay.host_names, lay.leaf_names, {}, lay.nic, lay.ranks_per_host)
    s, r, resid = _all_pairs(lay)
    strong = int(np.flatnonzero((s == 0) & (r == 2))[0])
    weak = int(np.flatnonzero((s == 4) & (r == 6))[0])
    resid[[strong, weak]] = math.log(2.0)
    links = [evidence.Effect("link", (0, 2), 2.0, 10.0, 1e-9, 1), evidence.Effect("link", (4, 6), 2.0, 2.0, 0.02, 1)]
    ev = _evidence(lay, s, r, resid, links)
    ev.retest = {e.key: RetestJudgement(e.key, CONFIRMED, 1.9, 1.4, 10, 0.05) for e in links}
    out = rules.name_components(lay, [ev])
    found = {tuple(c.ranks): (c.component, c.confidence, c.score, c.gpus) for c in out.culprits}
    assert found == {(0, 2): (LINK, "high", 0.8, [-1, -1]), (4, 6): (LINK, "medium", 0.48, [-1, -1])}, \
        [c.line() for c in out.culprits]


def test_slow_links_are_congestion_when_the_slow_pairs_beyond_them_outnumber_the_fast_ones():
    """The sign test of _unstructured, within one leaf: beyond the K significant links, S - K
    pairs at least the margin slow against F at least the margin fast, Binomial(1/2).
    5 slow beyond against 5 fast is the symmetric spread of healthy pairs (p 0.62): the
    links are faults; 10 slow against none (p 0.5^10) is congestion."""
    lay = _layout(hosts=8, gpus=2, leaves=1)
    s, r, _ = _all_pairs(lay)
    margin = math.log(1.25)
    for extra_slow, fast, congested in ((5, 5, False), (10, 0, True)):
        resid = np.zeros(len(s))
        resid[:2] = resid[2:2 + extra_slow] = margin + 0.5             # 2 links, then S - K more
        resid[20:20 + fast] = -margin - 0.1
        loaded = [_link(s[i], r[i]) for i in range(2)]
        t = _evidence(lay, s, r, resid, loaded)
        got, rest = rules._unstructured(lay, t, loaded, rules.Naming())
        assert (len(got), len(rest)) == ((2, 0) if congested else (0, 2)), (extra_slow, fast)


def test_a_named_host_pair_explains_the_slow_gpu_pairs_between_its_hosts():
    """A host pair named from its block (a cable) explains its GPU pairs: their links are
    not named again, as links or as congestion."""
    lay = _layout(hosts=8, gpus=2, leaves=2)
    s, r, resid = _all_pairs(lay)
    block = np.flatnonzero(((lay.host[s] == 0) & (lay.host[r] == 1)) | ((lay.host[s] == 1) & (lay.host[r] == 0)))
    resid[block] = math.log(2.0)
    ev = _evidence(lay, s, r, resid, [_link(s[i], r[i]) for i in block])
    ev.host_pairs = [evidence.Effect("host-pair", (0, 1), 2.0, 9.0, 1e-9, 8, "8/8 of their pairs")]
    out = rules.name_components(lay, [ev])
    assert [(c.component, c.host, c.peer_host) for c in out.culprits] == [(HOST_PAIR, "host0", "host1")], \
        [c.line() for c in out.culprits]
    assert not out.congestion
