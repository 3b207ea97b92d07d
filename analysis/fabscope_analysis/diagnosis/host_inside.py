"""Links inside one host, named together: the host's inside path is one finding.

The GPU pairs of one host cross nothing but that host (its PCIe or NVLink switch, its
memory, its software). When at least half of the GPU pairs measured inside a host (and
at least MIN_LINKS) are named as links, they are one component, not that many links:
the host, named once, with the share of its inside pairs that are slow. Named link by
link, a host whose every message costs more gives a culprit per GPU pair (28 on a host
of 8 GPUs) where the admin has one thing to look at.

A cost per message (software, interrupts, CPU power states) adds the same microseconds
to every message. Inside a host, where a small message takes a microsecond or two, that
reads as every pair slow in latency, while a megabyte (tens of microseconds) is hardly
slower. The finding says which it is: the median residual of the host's inside pairs in
each bandwidth test beside the slow latency.

Hosts differ among themselves in that cost (their software, their CPU's power states):
on a fabric of many hosts the inside pairs of the slowest few sit well above what their
ends predict although nothing is wrong with them, and against the noise of one pair each
reads as a slow link. So where at least PEER_HOSTS hosts measured inside pairs, a host's
inside level (the median residual of its inside pairs, per latency or bandwidth test) is
judged against the other hosts' levels: a robust z over the hosts' spread, one
Benjamini-Hochberg family over the hosts and tests, and the practical margin over the
typical host. A host within that spread is not named, and of
its inside links only those slower than its own inside level by the practical margin
stay named (one bad GPU pair in it is still a link); the rest become a note saying how
far the host stands and how widely the hosts spread. A host outside the spread is named
when at least half of its inside pairs are named or its inside level is itself past the
margin. The hosts' test only keeps or drops links the link test already found, so it
cannot add a false discovery to that family's.
"""

from __future__ import annotations

import math
from typing import Dict, List, Set

import numpy as np

from scipy.stats import norm

from ..inference import benjamini_hochberg, robust_sigma
from .evidence import MARGIN, Q
from .result import HOST, LINK, Culprit

# Fewer named links inside a host stay links: a bad GPU pair or two is not the host.
MIN_LINKS = 3
# The share of a host's measured inside pairs that makes its named links the host's.
SHARE = 0.5
# Fewer hosts with inside pairs give no spread of hosts to judge one against: a host's
# inside links are then named as the share rule alone says.
PEER_HOSTS = 8


def _inside_pairs(tests, layout, h: int) -> Set[frozenset]:
    """Unordered GPU pairs inside host h that any fitted test measured."""
    out: Set[frozenset] = set()
    for t in tests:
        d = t.fit.data
        mine = (layout.host[d.s] == h) & (layout.host[d.r] == h)
        out.update(frozenset((int(s), int(r))) for s, r in zip(d.s[mine], d.r[mine]))
    return out


def _inside_ratios(levels: List[tuple], h: int) -> List[tuple]:
    """Per fitted test (centre), the median time of host h's inside pairs against what
    their ends predict: (bandwidth test?, ratio, label)."""
    return [(bw, math.exp(lv[h]), label) for label, bw, lv in levels if h in lv]


def _symptoms(ratios: List[tuple]) -> List[str]:
    words = [f"{'bandwidth' if bw else 'latency'} of its inside pairs "
             f"{'typical, ' if r < MARGIN else ''}{r:.2f}x the time their ends predict [{label}]"
             for bw, r, label in ratios]
    slow_latency = any(not bw and r >= MARGIN for bw, r, _ in ratios)
    typical_bandwidth = [bw for bw, r, _ in ratios if bw]
    if slow_latency and typical_bandwidth and all(r < MARGIN for bw, r, _ in ratios if bw):
        words.append("a cost per message on the host (software, interrupts, CPU power "
                     "states), not its links")
    return words


def _host_levels(tests, layout) -> List[tuple]:
    """Per centre test, (its label, whether it measures bandwidth, each host's inside
    level: the median log residual of its measured inside pairs)."""
    out = []
    for t in tests:
        if t.measure != "centre":
            continue
        d = t.fit.data
        inside = layout.host[d.s] == layout.host[d.r]
        hosts = layout.host[d.s][inside]
        resid = np.asarray(t.fit.resid)[inside]
        out.append((t.label, bool(d.bandwidth),
                    {int(h): float(np.median(resid[hosts == h])) for h in np.unique(hosts)}))
    return out


def _outliers(levels: List[tuple], q: float):
    """(hosts whose inside level stands above the other hosts' in some test, by the
    Benjamini-Hochberg family over every host and test and by at least the practical
    margin over the typical level; per host, per test, its level as a ratio to the
    typical host's, its robust z and the hosts' spread), or None when too few hosts
    measured inside pairs to have a spread."""
    keys, p, size, detail = [], [], [], {}
    for label, _, lv in levels:
        if len(lv) < PEER_HOSTS:
            continue
        v = np.array(list(lv.values()))
        centre, spread = float(np.median(v)), robust_sigma(v)
        if not spread > 0:
            continue
        for h, x in lv.items():
            z = (x - centre) / spread
            keys.append(h)
            p.append(float(norm.sf(z)))
            size.append(math.exp(x - centre))
            detail.setdefault(h, []).append(f"{size[-1]:.2f}x the typical host's in {label} "
                                            f"(z={z:.1f}, the hosts spreading {math.exp(spread):.2f}x)")
    if not keys:
        return None
    rejected, _ = benjamini_hochberg(p, q)
    return {h for h, bad, ratio in zip(keys, rejected, size) if bad and ratio >= MARGIN}, detail


def _slower_than_its_host(c: Culprit, tests, layout, levels) -> bool:
    """Whether the link's pair is slower than its host's inside level by the margin in
    some centre test."""
    s, r = c.ranks
    h = int(layout.host[s])
    for t, (_, _, lv) in zip([t for t in tests if t.measure == "centre"], levels):
        d = t.fit.data
        mine = (d.s == s) & (d.r == r)
        if d.symmetric:   # a round trip is kept under one order
            mine |= (d.s == r) & (d.r == s)
        if mine.any() and h in lv and math.exp(float(np.max(np.asarray(t.fit.resid)[mine])) - lv[h]) >= MARGIN:
            return True
    return False


def name_hosts_from_inside_links(layout, tests, out, q_family: float = Q) -> None:
    """Replace a host's named inside links by one host culprit where they are at least
    SHARE of its measured inside pairs; among PEER_HOSTS hosts or more, only for a host
    whose inside level stands above the other hosts', the links of one within their
    spread kept only where slower than its own inside pairs."""
    by_host: Dict[int, List[Culprit]] = {}
    for c in out.culprits:
        if c.component == LINK and len(c.ranks) == 2:
            a, b = (int(layout.host[r]) for r in c.ranks)
            if a == b:
                by_host.setdefault(a, []).append(c)
    if not by_host:
        return
    levels = _host_levels(tests, layout)
    peers = _outliers(levels, q_family)
    for h, links in sorted(by_host.items()):
        named = {frozenset(c.ranks) for c in links}
        measured = _inside_pairs(tests, layout, h)
        if peers is not None and h not in peers[0]:
            _within_the_hosts_spread(layout, tests, out, h, links, levels, peers[1].get(h, []))
            continue
        past_margin = peers is not None and any(
            not bw and r >= MARGIN for bw, r, _ in _inside_ratios(levels, h))
        if len(named) < MIN_LINKS or (len(named) < SHARE * len(measured) and not past_margin):
            continue
        _name_host(layout, out, h, links, named, measured, levels)


def _within_the_hosts_spread(layout, tests, out, h, links, levels, detail) -> None:
    dropped = [c for c in links if not _slower_than_its_host(c, tests, layout, levels)]
    if not dropped:
        return
    out.culprits = [c for c in out.culprits if not any(c is x for x in dropped)]
    hosts = max(len(lv) for _, _, lv in levels)
    out.notes.append(
        f"{layout.host_names[h]}: {len(dropped)} GPU pair(s) inside the host slow against "
        f"their ends, as its inside pairs are as a whole: their level {'; '.join(detail)}; "
        f"never both significant over the {hosts} hosts and {MARGIN:.2f}x past the typical: "
        "within how much hosts differ in their cost per message, not named")


def _name_host(layout, out, h, links, named, measured, levels) -> None:
    out.culprits = [c for c in out.culprits if not any(c is x for x in links)]
    out.hosts.add(h)
    ranks = [int(r) for r in np.flatnonzero(layout.host == h)]
    out.culprits.append(Culprit(
        host=layout.host_names[h], ranks=ranks, gpus=[layout.gpu.get(r, -1) for r in ranks],
        nics=[layout.nic.get(r, "") for r in ranks], direction="both", component=HOST,
        symptoms=[f"{len(named)} of the {len(measured)} GPU pairs inside the host slow"]
        + _symptoms(_inside_ratios(levels, h)),
        evidence=[f"{len(named)} GPU pairs inside one host, each a link by itself: the "
                  "host's inside path explains them"] + [e for c in links[:1] for e in c.evidence[:1]],
        confidence=max((c.confidence for c in links), key=["low", "medium", "high"].index),
        score=max(c.score for c in links)))
