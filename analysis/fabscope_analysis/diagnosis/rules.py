"""Naming: the smallest set of components that explains what stands out.

In order, each step explaining what the next would otherwise name:
1. a leaf (its switch or uplink): its pair classes stand out of the other leaves', or
   every host in it stands out;
2. a rank side: one NIC (send, receive, or both for a round trip), or the whole host
   when at least half of its ranks stand out on that side (a host of one rank is a host);
3. a host pair (a cable or port between two hosts): the block of all their GPU pairs;
4. single links whose residual stands out and that nothing above explains (at least
   half of the GPU pairs inside one host: that host, once; host_inside.py): named when
   the serial retest confirmed them slow alone, or when no diffuse slowness comes with
   them (a sign test of the pairs the margin slow against those the margin fast, within
   leaves and between leaves apart: _unstructured); with it, they are congestion
   or routing (a finding with its pairs, not a culprit), and so are links the retest
   measured alone as fast as the controls (slow only under load).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

import numpy as np
from scipy.stats import binom

from ..inference import benjamini_hochberg
from . import host_inside, leaf_rows, paths, systemic
from .evidence import HOST_PAIR_SHARE, MARGIN, Q, Effect, block_rest_p
from .model import Fit, Layout
from .result import HOST, HOST_PAIR, LEAF, LINK, NIC, Congestion, Culprit
from .retest import CLEARED, SELECTION, TRANSIENT, RetestJudgement

@dataclass
class TestEvidence:
    fit: Fit
    measure: str                                   # centre | tail
    sides: List[Effect] = field(default_factory=list)
    links: List[Effect] = field(default_factory=list)
    n_links: int = 0
    host_pairs: List[Effect] = field(default_factory=list)
    leaves: List[Effect] = field(default_factory=list)
    paths: List[Effect] = field(default_factory=list)    # leaf directions (paths.py)
    local_ranks: List[Effect] = field(default_factory=list)   # systemic.py
    retest: Dict[Tuple[int, int], RetestJudgement] = field(default_factory=dict)
    # per side, each leaf's raw pairs with the other leaves (leaf_rows.py)
    leaf_rows: Dict[str, Optional[leaf_rows.Rows]] = field(default_factory=dict)
    name: str = ""                                 # evidence over several tests: their label

    @property
    def label(self) -> str:
        return self.name or self.fit.data.label


@dataclass
class Naming:
    culprits: List[Culprit] = field(default_factory=list)
    congestion: List[Congestion] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    # what the culprits explain: (rank, side) named, host pairs, leaves
    sides: Set[Tuple[int, str]] = field(default_factory=set)
    hosts: Set[int] = field(default_factory=set)
    host_pairs: Set[Tuple[int, int]] = field(default_factory=set)
    leaves: Set[int] = field(default_factory=set)
    paths: Set[Tuple[int, str]] = field(default_factory=set)   # (leaf, send | receive)
    local_ranks: Set[Tuple[int, str]] = field(default_factory=set)   # (local rank, side)
    cannot_tell: List[str] = field(default_factory=list)   # blind spots of the naming


def name_components(layout: Layout, tests: List[TestEvidence], q_family: float = Q) -> Naming:
    out = Naming()
    _leaves(layout, tests, out)
    paths.name_leaf_paths(layout, tests, out)
    systemic.name_local_ranks(layout, tests, out)
    _sides(layout, tests, out)
    _host_pairs(layout, tests, out)
    for t in tests:
        _links(layout, t, out)
    _links_to_host_pairs(layout, tests, out, q_family)
    host_inside.name_hosts_from_inside_links(layout, tests, out, q_family)
    out.culprits.sort(key=lambda c: (-c.score, c.subject()))
    return out


def _confidence(effects: List[Effect]) -> Tuple[str, float]:
    q = min(e.q for e in effects)
    z = max(e.z for e in effects)
    tests = len({e.detail for e in effects})
    score = min(1.0, 0.4 + 0.04 * z + (0.1 if tests > 1 else 0.0))
    if q < 1e-4 and score >= 0.75:
        return "high", round(score, 3)
    return ("medium" if q < 1e-2 else "low"), round(score, 3)


def _word(t: TestEvidence, e: Effect) -> str:
    if e.kind == "tail":
        return f"tail: {e.detail} [{t.label}]"
    what = "bandwidth" if t.fit.data.bandwidth else "latency"
    if t.fit.data.bandwidth:
        return f"{what} {100.0 / e.ratio:.0f}% of the typical [{t.label}]"
    return f"{what} {e.ratio:.2f}x the typical [{t.label}]"


def _leaves(layout: Layout, tests: List[TestEvidence], out: Naming):
    found: Dict[int, List[Tuple[TestEvidence, Effect]]] = {}
    for t in tests:
        for e in t.leaves:
            found.setdefault(e.key[0], []).append((t, e))
    for leaf, items in sorted(found.items()):
        effects = [e for _, e in items]
        confidence, score = _confidence(effects)
        out.leaves.add(leaf)
        out.culprits.append(Culprit(
            host=layout.leaf_names[leaf], ranks=[], gpus=[], nics=[], direction="both",
            symptoms=[f"pairs through it {_word(t, e)}" for t, e in items],
            evidence=[f"{t.label}: its pair classes z={e.z:.1f} over the other leaves' (q={e.q:.2g})"
                      for t, e in items], confidence=confidence, score=score, component=LEAF))


def _sides(layout: Layout, tests: List[TestEvidence], out: Naming):
    by_host: Dict[int, Dict[Tuple[int, str], List[Tuple[TestEvidence, Effect]]]] = {}
    for t in tests:
        for e in t.sides:
            rank, side = e.key
            if int(layout.leaf[rank]) in out.leaves and not e.beyond_leaf:
                continue   # the named leaf's shift: no more than the rest of its leaf
            if systemic.explains(layout, out, rank, side):
                continue   # its local rank is slow on most hosts: one finding
            by_host.setdefault(int(layout.host[rank]), {}).setdefault((rank, side), []).append((t, e))
    _drop_between_only(by_host)
    paths.group_spine_sides(layout, by_host, out)
    whole_hosts = {h for h, flagged in by_host.items() if _whole_host(layout, h, flagged)}
    for leaf in _leaves_of_hosts(layout, whole_hosts):
        hosts = [h for h in whole_hosts if layout.leaf[layout.host == h][0] == leaf]
        flagged = {h: by_host.pop(h) for h in hosts}
        if leaf_rows.confirmed(layout.leaf_names[leaf], leaf, flagged, out.notes, out.cannot_tell):
            _add_leaf_from_hosts(layout, leaf, flagged, out)
            continue
        whole_hosts -= set(hosts)
        for h, rest in leaf_rows.beyond_its_leaf(flagged).items():
            by_host[h] = rest
            whole_hosts |= {h} if _whole_host(layout, h, rest) else set()
    for h, flagged in sorted(by_host.items()):
        if h in whole_hosts:
            _add_side_culprit(layout, h, sorted({r for r, _ in flagged}), flagged, HOST, out)
            out.hosts.add(h)
            continue
        for rank in sorted({r for r, _ in flagged}):
            mine = {k: v for k, v in flagged.items() if k[0] == rank}
            _add_side_culprit(layout, h, [rank], mine, NIC, out)


def _drop_between_only(by_host):
    """A side seen only between leaves names nobody by itself (its leaf's uplink or
    collisions could be it); next to other evidence on the same rank (another test, its
    tails) it says which side of that rank is slow."""
    for h in list(by_host):
        flagged = by_host[h]
        for key in list(flagged):
            items = [(t, e) for t, e in flagged[key] if not e.between_only]
            rank = key[0]
            backed = any(not e.between_only for k, v in flagged.items() if k[0] == rank
                         for _, e in v)
            flagged[key] = flagged[key] if backed else items
            if not flagged[key]:
                del flagged[key]
        if not flagged:
            del by_host[h]


def _whole_host(layout: Layout, h: int, flagged) -> bool:
    """A host of one rank, or at least half of its ranks standing out on one side."""
    ranks_of_host = int((layout.host == h).sum())
    per_side: Dict[str, Set[int]] = {}
    for rank, side in flagged:
        per_side.setdefault(side, set()).add(rank)
    return ranks_of_host == 1 or any(2 * len(rs) >= ranks_of_host for rs in per_side.values())


def _leaves_of_hosts(layout: Layout, hosts: Set[int]) -> List[int]:
    """Leaves (of several, with 2+ hosts) whose every host stands out: one leaf (its
    switch or uplink) explains them in place of each host."""
    if len(layout.leaf_names) < 2:
        return []
    out = []
    for leaf in range(len(layout.leaf_names)):
        members = set(layout.host[layout.leaf == leaf].tolist())
        if len(members) >= 2 and members <= hosts:
            out.append(leaf)
    return out


def _add_leaf_from_hosts(layout: Layout, leaf: int, flagged_by_host, out: Naming):
    items = [item for flagged in flagged_by_host.values() for v in flagged.values() for item in v]
    effects = [e for _, e in items]
    confidence, score = _confidence(effects)
    out.leaves.add(leaf)
    out.hosts.update(flagged_by_host)
    worst = {}
    for t, e in items:
        if t.label not in worst or e.z > worst[t.label][1].z:
            worst[t.label] = (t, e)
    out.culprits.append(Culprit(
        host=layout.leaf_names[leaf], ranks=[], gpus=[], nics=[], direction="both",
        symptoms=[f"every host in it: {_word(t, e)}" for t, e in worst.values()],
        evidence=[f"all {len(flagged_by_host)} hosts of the leaf stand out "
                  f"({', '.join(layout.host_names[h] for h in sorted(flagged_by_host))}); "
                  f"strongest z={max(e.z for e in effects):.1f}"],
        confidence=confidence, score=score, component=LEAF))


def _add_side_culprit(layout: Layout, h: int, ranks: List[int], flagged, component: str,
                      out: Naming):
    sides = {side for _, side in flagged}
    directed = sides & {"send", "receive"}
    direction = "both" if directed == {"send", "receive"} or not directed else directed.pop()
    items = [item for v in flagged.values() for item in v]
    items.sort(key=lambda te: -te[1].z)
    symptoms, evidence, seen = [], [], set()
    for t, e in items:
        word = _word(t, e)
        if e.through_spine:
            word = f"only on pairs {'from' if e.key[1] == 'receive' else 'to'} other leaves, through " \
                   f"the spine (its pairs inside its leaf typical): {word}"
        side = "" if e.key[1] in ("both", direction) else f"{e.key[1]}: "
        if (side, t.label, e.kind) in seen:
            continue
        seen.add((side, t.label, e.kind))
        symptoms.append(side + word)
        evidence.append(f"{t.label} ({'tail' if e.kind == 'tail' else t.measure}): "
                        f"{e.key[1]} effect of {len([1 for k in flagged if k[1] == e.key[1]])} "
                        f"rank(s), z={e.z:.1f}, q={e.q:.2g}, over {e.pairs} "
                        f"{'samples' if e.kind == 'tail' else 'pairs'}")
    for rank, side in flagged:
        out.sides.add((rank, side))
    confidence, score = _confidence([e for _, e in items])
    out.culprits.append(Culprit(
        host=layout.host_names[h], ranks=ranks, gpus=[layout.gpu.get(r, -1) for r in ranks],
        nics=[layout.nic.get(r, "") for r in ranks], direction=direction, symptoms=symptoms,
        evidence=evidence, confidence=confidence, score=score, component=component))


def _host_pairs(layout: Layout, tests: List[TestEvidence], out: Naming):
    found: Dict[Tuple[int, int], List[Tuple[TestEvidence, Effect]]] = {}
    for t in tests:
        for e in t.host_pairs:
            a, b = e.key
            if a in out.hosts or b in out.hosts:
                continue
            found.setdefault((a, b), []).append((t, e))
    for (a, b), items in sorted(found.items()):
        out.host_pairs.add((a, b))
        confidence, score = _confidence([e for _, e in items])
        out.culprits.append(Culprit(
            host=layout.host_names[a], ranks=[], gpus=[], nics=[], direction="link",
            peer_host=layout.host_names[b], component=HOST_PAIR,
            symptoms=[f"their samples stall: {e.detail} [{t.label}]" if e.kind == "tail" else
                      f"all GPU pairs between them {_word(t, e)}" for t, e in items],
            evidence=[f"{t.label}: {e.detail}, q={e.q:.2g}" for t, e in items],
            confidence=confidence, score=score))


def _explained(layout: Layout, t: TestEvidence, s: int, r: int, out: Naming) -> bool:
    hs, hr = int(layout.host[s]), int(layout.host[r])
    if hs in out.hosts or hr in out.hosts:
        return True
    if (min(hs, hr), max(hs, hr)) in out.host_pairs:
        return True
    if int(layout.leaf[s]) in out.leaves or int(layout.leaf[r]) in out.leaves:
        return True
    if paths.explains(layout, out, s, r):
        return True
    if t.fit.data.symmetric:
        return any((x, side) in out.sides for x in (s, r) for side in ("send", "receive", "both"))
    return (s, "send") in out.sides or (r, "receive") in out.sides or (s, "both") in out.sides \
        or (r, "both") in out.sides


def _judgement(t: TestEvidence, s: int, r: int) -> Optional[RetestJudgement]:
    j = t.retest.get((s, r))
    if j is None and t.fit.data.symmetric:
        j = t.retest.get((r, s))
    return j


def _links(layout: Layout, t: TestEvidence, out: Naming):
    named: List[Tuple[int, int, str, Optional[Effect]]] = []
    loaded: List[Effect] = []
    for e in t.links:
        s, r = e.key
        if _explained(layout, t, s, r, out):
            continue
        j = _judgement(t, s, r)
        if j is not None and j.slow:
            named.append((s, r, f"retest: {j.describe()}", e))
        elif j is not None:
            loaded.append(e)
            alone = "" if j.outcome == TRANSIENT else "alone "  # its words start "slow alone on visit"
            out.notes.append(f"{layout.host_of(s)} -> {layout.host_of(r)} in {t.label}: "
                             f"{e.ratio:.2f}x after its ends' effects; {alone}{j.describe()}")
        else:
            loaded.append(e)
    # pairs the retest confirmed that no significant link or component covers
    listed = {(s, r) for s, r, _, _ in named} | {e.key for e in loaded}
    for (s, r), j in t.retest.items():
        if j.slow and (s, r) not in listed and not _explained(layout, t, s, r, out):
            named.append((s, r, f"retest: {j.describe()}", None))
    congested, rest = _unstructured(layout, t, loaded, out)
    few, doubtful = _few_links(layout, t, rest, out)
    named += few
    if congested or doubtful:
        _congestion(layout, t, congested + doubtful, out)
    for s, r, why, e in named:
        _add_link(layout, t, s, r, why, e, out)


def _few_links(layout: Layout, t: TestEvidence, loaded: List[Effect], out: Naming):
    """(links to name, links that stay a congestion finding) of the few unexplained slow
    links. A link the retest measured alone as fast as the controls is slow only under
    load. A link between two leaves that nothing measured alone is as slow as an ECMP
    collision of the parallel pass would make it (rings, bisections, matchings and the
    other scale patterns have no serial retest): a finding with its pairs, not a
    culprit. Inside a leaf one switch carries the pair: no collision to confuse it with."""
    names, doubtful, between = [], [], 0
    for e in loaded:
        s, r = e.key
        if _judgement(t, s, r) is not None:
            doubtful.append(e)
        elif layout.leaf[s] != layout.leaf[r]:
            doubtful.append(e)
            between += 1
        else:
            names.append((s, r, "", e))
    if between:
        out.notes.append(f"{t.label}: {between} pair(s) between leaves slow under load and not "
                         "measured alone: an ECMP collision looks the same (a serial retest, as "
                         "all-pairs runs, would tell)")
    return names, doubtful


def _unstructured(layout: Layout, t: TestEvidence, loaded: List[Effect], out: Naming,
                  alpha: float = Q) -> Tuple[List[Effect], List[Effect]]:
    """(links with no structure: congestion or routing, the rest) of the unexplained slow
    links, by a sign test per group. Within leaves and between leaves are judged apart,
    each over the pairs it could be among (those no named host or leaf explains):
    collisions under load slow pairs between leaves only, and many of them say nothing
    about a pair inside a leaf, where one switch carries it.

    Healthy pair spread is symmetric in log time: as many pairs sit the margin fast as
    sit it slow. Faults, collisions and other tenants only slow pairs. So in a group, the
    pairs at least the margin slow beyond the significant links (S - K) and the pairs at
    least the margin fast (F) are, when the significant links are the group's only
    slowness, two halves of one symmetric spread: S - K of S - K + F is Binomial(1/2). A
    diffuse process (collisions, a loaded switch, another tenant) slows many pairs short
    of significance too, and S - K outnumbers F: congestion when the one-sided sign test
    rejects at `alpha` (the family's false-discovery level: a group of isolated faulty
    pairs is swept into congestion in at most that share of runs). The decision follows
    the slowness that comes with the links, not their count: the same for a handful of
    slow pairs and for thousands."""
    if not loaded:
        return [], []
    d = t.fit.data
    named_hosts = np.array(sorted(out.hosts), dtype=np.int64)
    named_leaves = np.array(sorted(out.leaves), dtype=np.int64)
    open_pair = ~(np.isin(layout.host[d.s], named_hosts) | np.isin(layout.host[d.r], named_hosts)
                  | np.isin(layout.leaf[d.s], named_leaves) | np.isin(layout.leaf[d.r], named_leaves))
    between = layout.leaf[d.s] != layout.leaf[d.r]
    margin = math.log(MARGIN)
    congested, rest = [], []
    for crosses in (True, False):
        group = [e for e in loaded if (layout.leaf[e.key[0]] != layout.leaf[e.key[1]]) == crosses]
        if not group:
            continue
        mine = open_pair & (between == crosses)
        slow = int((t.fit.resid[mine] >= margin).sum())
        fast = int((t.fit.resid[mine] <= -margin).sum())
        beyond = max(slow - len(group), 0)
        p = float(binom.sf(beyond - 1, beyond + fast, 0.5)) if beyond else 1.0
        (congested if p <= alpha else rest).extend(group)
    return congested, rest


def _congestion(layout: Layout, t: TestEvidence, loaded: List[Effect], out: Naming):
    retested = [(e, _judgement(t, *e.key)) for e in loaded]
    retested = [(e, j) for e, j in retested if j is not None]
    cross = sum(1 for e in loaded if layout.leaf[e.key[0]] != layout.leaf[e.key[1]])
    worst = sorted(loaded, key=lambda e: -e.ratio)[:3]
    # an inconclusive retest (too few controls) says nothing about the pair alone, and a
    # transient one was slow alone on one of its visits: neither was seen fast alone
    out.congestion.append(Congestion(
        test=t.label, slow_pairs=len(loaded), pairs=t.n_links,
        cross_leaf_share=cross / max(len(loaded), 1),
        cleared_alone=sum(1 for _, j in retested if j.outcome in (CLEARED, SELECTION)),
        transient_alone=sum(1 for _, j in retested if j.outcome == TRANSIENT),
        retested=len(retested),
        examples=[f"{layout.host_of(e.key[0])} -> {layout.host_of(e.key[1])} {e.ratio:.2f}x"
                  for e in worst]))


def _add_link(layout: Layout, t: TestEvidence, s: int, r: int, why: str, e: Optional[Effect],
              out: Naming):
    for c in out.culprits:
        if c.component == LINK and set(c.ranks) == {s, r}:
            if any(t.label in x for x in c.symptoms):   # the other direction of one test
                if "(both directions)" not in c.symptoms[0]:
                    c.symptoms[0] += " (both directions)"
            elif why:   # another test's evidence for the same pair: kept with it
                c.evidence.append(f"{t.label}: {why}")
            return
    ratio = e.ratio if e is not None else None
    symptom = (f"{'bandwidth' if t.fit.data.bandwidth else 'latency'} "
               f"{ratio:.2f}x the time its ends predict [{t.label}]" if ratio else
               f"slow alone in the serial retest of {t.label}")
    evidence = []
    if e is not None:
        evidence.append(f"residual z={e.z:.1f}, q={e.q:.2g} after both ends' effects")
    if why:
        evidence.append(why)
    confidence, score = _confidence([e]) if e is not None else ("medium", 0.6)
    if why and confidence == "low":
        confidence = "medium"
    out.culprits.append(Culprit(
        host=layout.host_of(s), ranks=[s, r], gpus=[layout.gpu.get(s, -1), layout.gpu.get(r, -1)],
        nics=[layout.nic.get(s, ""), layout.nic.get(r, "")], direction="link",
        symptoms=[symptom], evidence=evidence, confidence=confidence, score=score,
        peer_host=layout.host_of(r), component=LINK))


def _links_to_host_pairs(layout: Layout, tests: List[TestEvidence], out: Naming,
                         q_family: float = Q):
    """Named links (each already evidence: a pair inside a leaf, or one the serial retest
    confirmed slow alone) between two hosts, where at least HOST_PAIR_SHARE of the GPU
    pairs measured between those hosts (every fitted test) are at least the margin
    slower than their ends predict: one host pair (a cable or port) explains them, a
    smaller answer than GPU links, when two or more links lie there, or when the block's
    other GPU pairs, the named links left out, are more often slow than the pooled share
    of each test's blocks of their kind expects (binomial, over-dispersion measured
    across the blocks; BH over the host pairs that hold a named link). A thinned matrix
    keeps too few GPU pairs of a host pair for its block to pass the host-pair test over
    every block, and a named link picks the few host pairs worth the question; a bad GPU
    pair leaves the other pairs between its hosts normal."""
    groups: Dict[Tuple[int, int], List[Culprit]] = {}
    for c in out.culprits:
        if c.component == LINK:
            a, b = (int(layout.host[r]) for r in c.ranks)
            if a != b:
                groups.setdefault((min(a, b), max(a, b)), []).append(c)
    fits = [t.fit for t in tests if t.measure == "centre"]
    found = []
    for (a, b), links in sorted(groups.items()):
        named = {frozenset(c.ranks) for c in links}
        slow, measured = _block_share(layout, tests, a, b)
        p, rest_slow, rest = block_rest_p(fits, layout, (a, b), named)
        share_ok = slow >= HOST_PAIR_SHARE * measured
        found.append(((a, b), links, slow, measured, p if share_ok else 1.0, len(named) >= 2
                      and share_ok, f"{rest_slow}/{rest}"))
    rejected, q = benjamini_hochberg(np.array([f[4] for f in found]), q_family)
    for ((a, b), links, slow, measured, _, several, rest), ok, qv in zip(found, rejected, q):
        if several or ok:
            _add_host_pair_from_links(layout, out, a, b, links, slow, measured,
                                      None if several else f"{rest} of the others slow, q={qv:.2g}")


def _add_host_pair_from_links(layout: Layout, out: Naming, a: int, b: int, links: List[Culprit],
                              slow: int, measured: int, rest: Optional[str]):
    out.culprits = [c for c in out.culprits if not any(c is x for x in links)]
    out.host_pairs.add((a, b))
    why = (f"{len(links)} slow GPU pairs between the two hosts, each a link by itself" if rest is None
           else f"a slow GPU pair between the two hosts, and {rest} (against the share "
           "of the host pairs of their kind)")
    out.culprits.append(Culprit(
        host=layout.host_names[a], ranks=[], gpus=[], nics=[], direction="link",
        peer_host=layout.host_names[b], component=HOST_PAIR,
        symptoms=[f"{slow}/{measured} of the GPU pairs measured between them at least "
                  f"{MARGIN:g}x slower than their ends predict"] + [c.symptoms[0] for c in links],
        evidence=[why] + [e for c in links for e in c.evidence[:1]],
        confidence=max((c.confidence for c in links), key=["low", "medium", "high"].index),
        score=max(c.score for c in links)))


def _block_share(layout: Layout, tests: List[TestEvidence], a: int, b: int) -> Tuple[int, int]:
    """(slow, measured) GPU pairs between hosts a and b over every fitted test."""
    slow = measured = 0
    for t in tests:
        if t.measure != "centre":
            continue
        d = t.fit.data
        hs, hr = layout.host[d.s], layout.host[d.r]
        block = ((hs == a) & (hr == b)) | ((hs == b) & (hr == a))
        measured += int(block.sum())
        slow += int((t.fit.resid[block] >= np.log(MARGIN)).sum())
    return slow, measured
