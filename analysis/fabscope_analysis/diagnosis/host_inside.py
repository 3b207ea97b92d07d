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
"""

from __future__ import annotations

import math
from typing import Dict, List, Set

import numpy as np

from .evidence import MARGIN
from .result import HOST, LINK, Culprit

# Fewer named links inside a host stay links: a bad GPU pair or two is not the host.
MIN_LINKS = 3
# The share of a host's measured inside pairs that makes its named links the host's.
SHARE = 0.5


def _inside_pairs(tests, layout, h: int) -> Set[frozenset]:
    """Unordered GPU pairs inside host h that any fitted test measured."""
    out: Set[frozenset] = set()
    for t in tests:
        d = t.fit.data
        mine = (layout.host[d.s] == h) & (layout.host[d.r] == h)
        out.update(frozenset((int(s), int(r))) for s, r in zip(d.s[mine], d.r[mine]))
    return out


def _inside_ratios(tests, layout, h: int) -> List[tuple]:
    """Per fitted test (centre), the median time of the host's inside pairs against what
    their ends predict: (bandwidth test?, ratio, label)."""
    out = []
    for t in tests:
        d = t.fit.data
        mine = (layout.host[d.s] == h) & (layout.host[d.r] == h)
        if t.measure == "centre" and mine.any():
            out.append((bool(d.bandwidth), math.exp(float(np.median(t.fit.resid[mine]))), t.label))
    return out


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


def name_hosts_from_inside_links(layout, tests, out) -> None:
    """Replace a host's named inside links by one host culprit where they are at least
    SHARE of its measured inside pairs."""
    by_host: Dict[int, List[Culprit]] = {}
    for c in out.culprits:
        if c.component == LINK and len(c.ranks) == 2:
            a, b = (int(layout.host[r]) for r in c.ranks)
            if a == b:
                by_host.setdefault(a, []).append(c)
    for h, links in sorted(by_host.items()):
        named = {frozenset(c.ranks) for c in links}
        measured = _inside_pairs(tests, layout, h)
        if len(named) < MIN_LINKS or len(named) < SHARE * len(measured):
            continue
        out.culprits = [c for c in out.culprits if not any(c is x for x in links)]
        out.hosts.add(h)
        ranks = [int(r) for r in np.flatnonzero(layout.host == h)]
        out.culprits.append(Culprit(
            host=layout.host_names[h], ranks=ranks, gpus=[layout.gpu.get(r, -1) for r in ranks],
            nics=[layout.nic.get(r, "") for r in ranks], direction="both", component=HOST,
            symptoms=[f"{len(named)} of the {len(measured)} GPU pairs inside the host slow"]
            + _symptoms(_inside_ratios(tests, layout, h)),
            evidence=[f"{len(named)} GPU pairs inside one host, each a link by itself: the "
                      "host's inside path explains them"] + [e for c in links[:1] for e in c.evidence[:1]],
            confidence=max((c.confidence for c in links), key=["low", "medium", "high"].index),
            score=max(c.score for c in links)))
