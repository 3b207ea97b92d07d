"""Systemic faults: one local rank slow on most hosts.

A GPU whose NIC sits on the other NUMA node or behind another PCIe switch, the same
slot on every host (one placement, one BIOS setting, one image), slows the same local
rank on most hosts. Named host by host, it is a culprit per host where it is one
finding: the placement. Per fitted test, the rank effects are grouped by local rank
(the GPU index of /ranks, else the rank's position on its host); a group whose median
effect over its hosts stands out of the other groups' (z over the standard error of a
median of that many ranks and the spread among the groups, Benjamini-Hochberg over the
groups and sides) by at least the practical margin is slow on more than half of its
hosts: one `local-rank` finding, and its ranks' own sides are not named again unless
they stand out beyond their group.
"""

from __future__ import annotations

import math
from typing import Dict, List

import numpy as np
from scipy.stats import norm

from ..inference import PRACTICAL_MARGIN as MARGIN
from ..inference import benjamini_hochberg, robust_sigma
from .evidence import Effect, standout
from .result import LOCAL_RANK, Culprit

# A local rank is systemic over at least this many hosts.
MIN_HOSTS = 3


def local_index(layout) -> np.ndarray:
    """Per rank its local rank: the GPU index from /ranks, else its position on its host."""
    out = np.full(layout.n, -1, dtype=np.int64)
    for r in range(layout.n):
        out[r] = layout.gpu.get(r, -1)
    if (out < 0).any():
        seen: Dict[int, int] = {}
        for r in range(layout.n):
            h = int(layout.host[r])
            out[r] = seen.get(h, 0)
            seen[h] = out[r] + 1
    return out


def local_ranks(fit, layout, widen: float, q_family: float) -> list:
    """Effects of kind local-rank, key (local rank, side): groups slow on most hosts."""
    if len(layout.host_names) < MIN_HOSTS or layout.ranks_per_host < 2:
        return []
    d = fit.data
    local = local_index(layout)
    if d.symmetric:
        families = [("both", (fit.send + fit.recv) / 2.0)]
    else:
        families = [("send", fit.send), ("receive", fit.recv)]
    keys, values, ses, hosts = [], [], [], []
    for side, eff in families:
        present = np.isfinite(eff)
        if present.sum() < 8:
            continue
        centre = float(np.median(eff[present]))
        sigma = robust_sigma(eff[present])
        for g in np.unique(local[present]):
            members = present & (local == g)
            m = int(members.sum())
            if len(set(layout.host[members].tolist())) < MIN_HOSTS:
                continue
            keys.append((int(g), side))
            values.append(float(np.median(eff[members])) - centre)
            ses.append(1.2533 * max(sigma, 1e-9) / math.sqrt(m))
            hosts.append(m)
    if len(keys) < 3:
        return []
    values, ses = np.asarray(values), np.asarray(ses)
    _, z, _, _ = standout(values, ses, widen)
    rejected, q = benjamini_hochberg(norm.sf(z), q_family)
    return [Effect("local-rank", keys[i], math.exp(values[i]), float(z[i]), float(q[i]), hosts[i],
                   f"the median of local rank {keys[i][0]}'s {keys[i][1]} effects over its "
                   f"{hosts[i]} ranks")
            for i in np.flatnonzero(rejected & (values >= math.log(MARGIN)))]


def name_local_ranks(layout, tests, out) -> None:
    """One culprit per local rank slow on most hosts (each test's `local_ranks`),
    registered in out.local_ranks so its ranks' sides are not named per host."""
    found: Dict[int, List] = {}
    for t in tests:
        for e in getattr(t, "local_ranks", []):
            found.setdefault(e.key[0], []).append((t, e))
    local = local_index(layout)
    for g, items in sorted(found.items()):
        sides = {e.key[1] for _, e in items}
        for side in sides:
            out.local_ranks.add((g, side))
        directed = sides & {"send", "receive"}
        direction = "both" if "both" in sides or directed == {"send", "receive"} else directed.pop()
        ranks = [int(r) for r in np.flatnonzero(local == g)]
        z, q = max(e.z for _, e in items), min(e.q for _, e in items)
        score = round(min(1.0, 0.4 + 0.04 * z), 3)
        confidence = "high" if q < 1e-4 and score >= 0.75 else "medium" if q < 1e-2 else "low"
        what = {True: "bandwidth {:.0f}% of the typical", False: "latency {:.2f}x the typical"}
        symptoms = [f"{e.key[1]}: " + (what[True].format(100.0 / e.ratio) if t.fit.data.bandwidth
                                        else what[False].format(e.ratio)) + f" [{t.label}]"
                    for t, e in items]
        out.culprits.append(Culprit(
            host=f"local rank {g}", ranks=ranks, gpus=[g] * len(ranks),
            nics=sorted({layout.nic.get(r, "") for r in ranks} - {""}), direction=direction,
            symptoms=symptoms,
            evidence=[f"{t.label}: {e.detail}, z={e.z:.1f}, q={e.q:.2g} against the other local "
                      "ranks'" for t, e in items]
            + [f"the same slot on {len(set(layout.host[ranks].tolist()))} hosts: a placement "
               "(GPU and NIC on different NUMA nodes or PCIe switches), a BIOS or image setting, "
               "not each host's hardware"] + _rail_word(layout, ranks),
            confidence=confidence, score=score, component=LOCAL_RANK))


def _rail_word(layout, ranks: List[int]) -> List[str]:
    """On a rail-optimized fabric (NIC g of every host on one leaf) a local rank's ranks
    are one leaf's, all of them and only them: that leaf's switch slows them alike, and
    nothing in the pairs tells it from a placement. Says so, naming the leaf."""
    leaves = set(layout.leaf[ranks].tolist())
    if len(layout.leaf_names) < 2 or len(leaves) != 1:
        return []
    leaf = leaves.pop()
    if int((layout.leaf == leaf).sum()) != len(ranks):
        return []
    return [f"these ranks are all of {layout.leaf_names[leaf]} and only them (a rail-optimized "
            f"fabric): {layout.leaf_names[leaf]}'s switch or its links slow them alike, which the "
            "pairs cannot tell from a placement; check the leaf too"]


def explains(layout, out, rank: int, side: str) -> bool:
    """A rank side of a local rank named systemic (name_local_ranks)."""
    if not out.local_ranks:
        return False
    g = int(local_index(layout)[rank])
    return any((g, sd) in out.local_ranks for sd in (side, "both")) or (
        side == "both" and any(k[0] == g for k in out.local_ranks))
