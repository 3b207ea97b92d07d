"""A leaf named from its hosts must show in its raw pairs with the other leaves.

The fit's class terms are per ordered pair of leaves (model.py), so a shift of every
send effect of one leaf's ranks and the opposite shift of that leaf's row of class
terms (or of every receive effect and its column) fit the pairs between hosts alike:
only the pairs within a host, a class of their own, pin the split, and a median polish
settles where its sweeps leave it. On a clean fabric with its uplinks oversubscribed
2:1 (8 hosts, 2 a leaf, in the validation world) it left one leaf's senders about 1.3x
slow and that leaf's class row as much fast in 4 runs of 10: both hosts of the leaf then
stood out, while the leaf's raw pairs with the other leaves were within 0.5 % of theirs.

The raw class medians do not depend on that split. A leaf whose every host stands out
on a side (rules._leaves_of_hosts) is the leaf only when its median pair time with the
other leaves on that side (send: its row of raw class medians; receive: its column;
both: the two pooled) also stands out of the other leaves' same figure, by the side's
margin: standout over the leaves, so their spread among leaves (the collisions each
leaf's pairs drew under load) joins the error, and Benjamini-Hochberg over the leaves.
The same figure from the raw class *means* (each mean's own variance, no margin) must
stand out too: where collisions slow about half of a class's pairs (a rail-optimized
fabric), its median sits in the fast or the slow cluster as its collided share falls
either side of one half, and a leaf whose classes drew a few more collisions reads far
slower by its medians; its mean moves with that share, a little. A slow leaf switch or
a leaf of slow NICs slows every pair, and the mean with them; the polish's split does
not. Stalls (tail sides) are counted, not split, and stand as they are.

Answers per side: None when fewer than 3 leaves have pairs with other leaves (nothing
to compare one leaf with); the leaf kept unconfirmed then says so.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import numpy as np
from scipy.stats import norm

from ..inference import MEDIAN_SE_FACTOR, benjamini_hochberg
from .evidence import POWER_Z, side_margin, standout
from .model import Fit, Layout, raw_class_means, raw_classes

# per leaf: (ratio of its raw figure to the leaves' centre, z, q, stands out, the
# smallest ratio the comparison finds)
Rows = Dict[int, Tuple[float, float, float, bool, float]]


def raw_rows(fit: Fit, layout: Layout, widen: float, q_family: float
             ) -> Dict[str, Optional[Rows]]:
    """Per side (both for a round trip, else send and receive): each leaf's raw median
    pair time with the other leaves against the other leaves' (see the module)."""
    sides = ("both",) if fit.data.symmetric else ("send", "receive")
    nl = len(layout.leaf_names)
    if nl < 3:
        return {side: None for side in sides}
    raw = raw_classes(fit.data, layout)
    size = nl * nl
    medians, counts = np.full(size, np.nan), np.zeros(size)
    medians[:min(len(raw.median) - 1, size)] = raw.median[1:1 + size]
    counts[:min(len(raw.count) - 1, size)] = raw.count[1:1 + size]
    medians, counts = medians.reshape(nl, nl), counts.reshape(nl, nl)
    means, mean_var = raw_class_means(fit.data, layout, nl)
    means, mean_var = means.reshape(nl, nl), mean_var.reshape(nl, nl)
    margin = math.log(side_margin(fit))
    out = {}
    for side in sides:
        plain = _judge_side(medians, counts, side, raw.sigma, margin, widen, q_family)
        # the means' route asks no margin: it says only that the shift is not a median's jump
        shifted = _judge_side(means, counts, side, 1.0, 0.0, widen, q_family, mean_var)
        if plain is None:
            out[side] = None
            continue
        by_mean = shifted or {}
        out[side] = {leaf: (ratio, z, q, stands_out and leaf in by_mean and by_mean[leaf][3], mde)
                     for leaf, (ratio, z, q, stands_out, mde) in plain.items()}
    return out


def _judge_side(medians: np.ndarray, counts: np.ndarray, side: str, sigma: float,
                margin: float, widen: float, q_family: float,
                class_var: Optional[np.ndarray] = None) -> Optional[Rows]:
    """Each leaf's median of its blocks' figures (medians: class medians of their pairs at
    spread sigma; with class_var, class means whose variances it gives) against the other
    leaves'."""
    nl = len(medians)
    values, ses = np.full(nl, np.nan), np.full(nl, np.nan)
    for leaf in range(nl):
        other = np.arange(nl) != leaf
        row = np.r_[medians[leaf, other], medians[other, leaf]] if side == "both" else \
            (medians[leaf, other] if side == "send" else medians[other, leaf])
        n = np.r_[counts[leaf, other], counts[other, leaf]] if side == "both" else \
            (counts[leaf, other] if side == "send" else counts[other, leaf])
        ok = np.isfinite(row) & (n > 0)
        if class_var is not None:
            var = np.r_[class_var[leaf, other], class_var[other, leaf]] if side == "both" else \
                (class_var[leaf, other] if side == "send" else class_var[other, leaf])
            ok &= np.isfinite(var)
        if ok.any():
            values[leaf] = float(np.median(row[ok]))
            # a block's median over its n pairs (or its mean, at its own variance), then
            # the median of the leaf's blocks
            block_se = math.sqrt(float(np.median(var[ok]))) if class_var is not None else \
                MEDIAN_SE_FACTOR * sigma / math.sqrt(float(np.median(n[ok])))
            ses[leaf] = MEDIAN_SE_FACTOR * block_se / math.sqrt(ok.sum())
    ok = np.isfinite(values)
    if ok.sum() < 3:
        return None
    centre, z, _, scale = standout(values[ok], ses[ok], widen)
    rejected, q = benjamini_hochberg(norm.sf(z), q_family)
    index = np.flatnonzero(ok)
    # the smallest leaf shift the comparison finds (80 % power, Bonferroni bar): above
    # the margin, a typical figure clears nothing
    mde = (norm.isf(q_family / len(index)) + POWER_Z) * float(np.median(scale))
    return {int(leaf): (math.exp(values[leaf] - centre), float(z[i]), float(q[i]),
                        bool(rejected[i] and values[leaf] - centre >= margin),
                        math.exp(mde))
            for i, leaf in enumerate(index)}


def judge(leaf: int, items) -> Tuple[Optional[bool], List[str]]:
    """Whether the raw pairs of `leaf` confirm its hosts' standing out, over the items
    (TestEvidence, Effect) of its flagged hosts: True (a flagged side's raw figure
    stands out, or a stall count), False (every flagged side compared, none standing
    out, each comparison able to find a shift of the side's margin), None (cannot tell:
    too few leaves, or a comparison too weak). With the words that say why."""
    words, verdicts = [], []
    for t, e in items:
        if t.measure != "centre":
            return True, []
        rows = t.leaf_rows.get(e.key[1]) if t.leaf_rows else None
        figure = rows.get(leaf) if rows else None
        if figure is None:
            verdicts.append(None)
            words.append(f"{t.label} {e.key[1]}: fewer than 3 leaves with pairs between "
                         "leaves to compare it with")
            continue
        ratio, z, _, stands_out, mde = figure
        if stands_out:
            return True, [f"{t.label}: its raw pairs with the other leaves ({e.key[1]}) "
                          f"{ratio:.2f}x the other leaves', z={z:.1f}"]
        weak = mde > side_margin(t.fit)
        verdicts.append(None if weak else False)
        words.append(f"{t.label} {e.key[1]}: its raw pairs with the other leaves {ratio:.2f}x "
                     f"the other leaves' (z={z:.1f}"
                     + (f"; this comparison finds {mde:.2f}x)" if weak else ")"))
    return (None if None in verdicts else False), sorted(set(words))


def confirmed(name: str, leaf: int, flagged_by_host, notes: List[str], cannot_tell: List[str]
              ) -> bool:
    """Every host of the leaf stands out (flagged_by_host: per host, per (rank, side), its
    (TestEvidence, Effect) items): the leaf when its raw pairs with the other leaves say
    so too; when they are typical, the fit's split of a shift of the whole leaf (a note);
    when they cannot tell, the leaf is not named and the verdict says so."""
    items = [item for flagged in flagged_by_host.values() for v in flagged.values() for item in v]
    seen, words = judge(leaf, items)
    if seen:
        return True
    what = f"every host of {name} stands out, but " + "; ".join(words)
    if seen is None:
        cannot_tell.append(f"a leaf shifting every one of its hosts alike ({what}): the fit "
                           "cannot split that shift from the leaf's class terms")
    else:
        notes.append(f"{what}: the fit's split of the leaf's pair classes into its ranks, not "
                     "a finding; not named (ranks beyond their leaf's shift still are)")
    return False


def beyond_its_leaf(flagged_by_host):
    """The flagged sides that stand out against their own leaf's ranks too (Effect.beyond_leaf)."""
    out = {}
    for h, flagged in flagged_by_host.items():
        kept = {k: [(t, e) for t, e in v if e.beyond_leaf] for k, v in flagged.items()}
        kept = {k: v for k, v in kept.items() if v}
        if kept:
            out[h] = kept
    return out
