"""Leaf structure from the data, where /ranks has no leaf labels or partly wrong ones.

The leaf-dependent rules (leaf and uplink findings, the paths through the spine,
"collisions slow only pairs between leaves") need to know which pairs cross the spine.
Without labels every pair is taken for a pair inside one leaf, and every ECMP collision
between leaves for a slow link; with a stale inventory some hosts' pairs are judged in
the wrong class.

A pair between leaves crosses two more switches and the cables to the spine: its round
trip is longer than a pair's inside a leaf by the same amount for every host. From the
all-pairs latency test: per host pair the median log round trip of its GPU pairs, minus
additive host terms (median polish: a host's software time moves all its pairs), leaves
two groups of host pairs, near and far. The split is the threshold that best separates
them (largest between-group variance of the sorted values); it is used only when the
groups stand apart (their gap at least SEPARATION robust spreads of the groups) and the
near graph's connected components are leaves (inside each, at least CONSISTENT of the
host pairs near; between two, at most 1 - CONSISTENT), each of at least two hosts: a
leaf of one host has no near pair to show it, and one fast host pair among noisy ones
would otherwise make the rest one-host leaves (on six emulated hosts a lossy host's
stalls did, and its send- and receive-limited neighbours went unnamed). Otherwise
nothing is inferred and the verdict says the leaf-dependent rules had no leaves to
work with.
"""

from __future__ import annotations

from dataclasses import replace
from typing import List, Optional, Tuple

import numpy as np

from .model import Layout, fitted_instances, pair_data

SEPARATION = 4.0      # gap between near and far host pairs, in robust spreads of each group
CONSISTENT = 0.9      # share of host pairs that must agree with the leaves found
STALE_SHARE = 0.25    # at most this share of hosts labelled with another leaf is a stale label


def _host_matrix(result, layout: Layout) -> Optional[np.ndarray]:
    """Median log round trip per host pair (NaN: not measured) from the first fitted
    latency test; None without one."""
    for inst in fitted_instances(result):
        if inst.metric != "latency":
            continue
        data = pair_data(inst, layout.n)
        if data is None:
            continue
        nh = len(layout.host_names)
        a, b = layout.host[data.s], layout.host[data.r]
        cross = a != b
        lo, hi = np.minimum(a, b)[cross], np.maximum(a, b)[cross]
        keys = lo * nh + hi
        if keys.size == 0:
            continue  # every pair of this test inside one host: no host pair to place
        out = np.full((nh, nh), np.nan)
        order = np.argsort(keys, kind="stable")
        keys, values = keys[order], data.logt[cross][order]
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        for start, end in zip(starts, np.r_[starts[1:], len(keys)]):
            k = int(keys[start])
            out[k // nh, k % nh] = out[k % nh, k // nh] = float(np.median(values[start:end]))
        return out
    return None


def _polish(m: np.ndarray, iterations: int = 10) -> np.ndarray:
    """The host-pair matrix less additive host terms (symmetric median polish)."""
    resid = m - np.nanmedian(m)
    for _ in range(iterations):
        u = np.nanmedian(resid, axis=1)
        u = np.where(np.isfinite(u), u, 0.0) / 2.0
        resid = resid - u[:, None] - u[None, :]
    return resid


def _split(values: np.ndarray) -> Optional[float]:
    """The threshold between near and far (largest between-group variance), or None when
    the two groups do not stand apart by SEPARATION robust spreads."""
    v = np.sort(values)
    n = len(v)
    if n < 6:
        return None
    best, cut = -1.0, None
    for i in range(1, n):
        lo, hi = v[:i], v[i:]
        between = i * (n - i) * (lo.mean() - hi.mean()) ** 2
        if between > best:
            best, cut = between, i
    lo, hi = v[:cut], v[cut:]
    spread = max(_mad(lo), _mad(hi), 1e-12)
    if (hi.min() - lo.max()) < SEPARATION * spread or len(lo) < 1 or len(hi) < 1:
        return None
    return float((lo.max() + hi.min()) / 2.0)


def _mad(x: np.ndarray) -> float:
    return 1.4826 * float(np.median(np.abs(x - np.median(x)))) if len(x) > 1 else 0.0


def infer_host_leaves(result, layout: Layout) -> Optional[np.ndarray]:
    """Per host an inferred leaf index, or None when the latency test does not show a
    consistent leaf structure (two leaves or more)."""
    m = _host_matrix(result, layout)
    return None if m is None else leaves_from_matrix(m)


def leaves_from_matrix(m: np.ndarray) -> Optional[np.ndarray]:
    """infer_host_leaves on a host-pair matrix of median log round trips (NaN: none)."""
    nh = len(m)
    if nh < 4:
        return None
    resid = _polish(m)
    iu = np.triu_indices(nh, 1)
    values = resid[iu]
    measured = np.isfinite(values)
    if measured.mean() < CONSISTENT:
        return None
    cut = _split(values[measured])
    if cut is None:
        return None
    near = np.where(np.isfinite(resid), resid <= cut, False)
    np.fill_diagonal(near, True)
    leaf = -np.ones(nh, dtype=np.int64)
    for h in range(nh):       # connected components of the near graph
        if leaf[h] >= 0:
            continue
        stack, leaf[h] = [h], int(leaf.max()) + 1
        while stack:
            x = stack.pop()
            for y in np.flatnonzero(near[x] & (leaf < 0)):
                leaf[y] = leaf[h]
                stack.append(int(y))
    if leaf.max() < 1 or np.bincount(leaf).min() < 2:
        return None
    same = leaf[:, None] == leaf[None, :]
    off = ~np.eye(nh, dtype=bool) & np.isfinite(resid)
    inside_ok = near[same & off].mean() if (same & off).any() else 1.0
    between_ok = 1.0 - near[~same & off].mean() if (~same & off).any() else 1.0
    if inside_ok < CONSISTENT or between_ok < CONSISTENT:
        return None
    return leaf


def resolve(result, layout: Layout) -> Tuple[Layout, List[str], List[str]]:
    """(the layout to judge with, notes, blind spots): labels kept where the data agree
    or show nothing; inferred leaves where /ranks has none, or where its leaves split
    the hosts otherwise than the latency test does. Leaves are per host here: a rail
    layout (a host's ranks on several leaves) is left as labelled."""
    labelled = len(layout.leaf_names) > 1 or layout.leaf_names != [""]
    if labelled:
        per_host = {}
        for r in range(layout.n):
            per_host.setdefault(int(layout.host[r]), set()).add(int(layout.leaf[r]))
        if 2 * sum(len(v) > 1 for v in per_host.values()) > len(per_host):
            return layout, [], []      # rail-optimized: leaves per rank, not per host
    inferred = infer_host_leaves(result, layout)
    if inferred is None:
        if labelled:
            return layout, [], []
        return layout, [], ["leaf uplinks and paths through the spine, and ECMP collisions told "
                            "from slow links: /ranks has no leaf labels and the latency test "
                            "shows no leaf structure to infer them from, so every pair is judged "
                            "as inside one leaf (label the leaves: a topology file or Slurm's "
                            "topology address, docs/inventory.md)"]
    host_leaf = np.zeros(len(layout.host_names), dtype=np.int64)
    host_leaf[layout.host] = layout.leaf   # a host of mixed labels: its last rank's
    if labelled and _same_partition(host_leaf, inferred):
        return layout, [], []
    if labelled and not _stale(host_leaf, inferred):
        # another number of leaves, or many hosts moved: a fault that moves a leaf's round
        # trips (a slow uplink) splits or merges leaves in the data; labels stand
        return layout, [], []
    names = [f"inferred-leaf{x}" for x in range(int(inferred.max()) + 1)]
    new = replace(layout, leaf=inferred[layout.host], leaf_names=names)
    groups = "; ".join(f"{names[x]}: " + ", ".join(layout.host_names[h]
                                                   for h in np.flatnonzero(inferred == x))
                       for x in range(len(names)))
    if labelled:
        moved = _moved(host_leaf, inferred, layout.host_names)
        why = (f"the /ranks leaf labels of {', '.join(moved) or 'some hosts'} disagree with the "
               "latency test's leaf structure (a stale inventory?)")
    else:
        why = "/ranks has no leaf labels"
    return new, [f"{why}: leaves inferred from the latency test (pairs between leaves take "
                 f"longer after each host's own time): {groups}"], []


def _stale(labelled: np.ndarray, inferred: np.ndarray) -> bool:
    """The labels look like a stale inventory of the inferred leaves: as many leaves, and
    at most STALE_SHARE of the hosts in another one."""
    if len(np.unique(labelled)) != len(np.unique(inferred)):
        return False
    return len(_moved(labelled, inferred, [str(h) for h in range(len(labelled))])) \
        <= STALE_SHARE * len(labelled)


def _moved(labelled: np.ndarray, inferred: np.ndarray, names: List[str]) -> List[str]:
    """Hosts whose inferred leaf is not the one most hosts of their labelled leaf share."""
    out = []
    for x in np.unique(labelled):
        members = np.flatnonzero(labelled == x)
        common = np.bincount(inferred[members]).argmax()
        out += [names[h] for h in members if inferred[h] != common]
    return sorted(out)


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    return all(_agrees(a, b, h) for h in range(len(a)))


def _agrees(a: np.ndarray, b: np.ndarray, h: int) -> bool:
    """Host h has the same companions under both partitions."""
    return bool(np.array_equal(a == a[h], b == b[h]))
