"""Evidence from a fitted model: which effects stand out of the run's own noise.

Every effect gets a standard error from the residual noise (1.2533 sigma_e / sqrt(m)
for a median of m pairs) and, for effects of one kind (rank sides, host pairs,
leaves), the spread among them beyond that error (tau) joins it:
z = (effect - median effect) / sqrt(SE^2 + tau^2), one-sided. The false discovery
rate is controlled by Benjamini-Hochberg over each family (the rank sides of a test;
its links; its host pairs; its leaves); a significant effect is evidence only when it
is also at least the practical margin (MARGIN x the typical time). Validity findings
widen every noise figure by `widen`.

Tails (stalls beyond model.TAIL_FACTOR x a pair's median) are tails.py's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
from scipy.stats import binom, chi2, norm

from ..inference import PRACTICAL_MARGIN as MARGIN
from ..inference import (BANDWIDTH_SIDE_MARGIN, MEDIAN_SE_FACTOR, benjamini_hochberg,
                         robust_sigma)
from . import paths
from .model import Fit, Layout, raw_class_means, raw_classes
from .pair_null import null_p, same_host


Q = 0.05                  # false discovery rate of a run: split over its families (core.py)
POWER_Z = norm.isf(0.2)   # 80 % power for the minimum detectable effect
MIN_PAIRS_PER_SIDE = 3
# A fault between two hosts (cable, port) is on every GPU pair between them; collisions
# under load slow a random share. A block is a host pair when most of it is slow.
HOST_PAIR_SHARE = 0.75
# "fit" needs a test that would have found a rank side this much slower with 80 %
# power; between MARGIN and this, fit is said with the size it could detect.
DETECT = 1.5    # fewer pairs cannot tell a rank's end from its pairs


def side_margin(fit: Fit) -> float:
    """The smallest rank-side factor that names a culprit in this test."""
    return BANDWIDTH_SIDE_MARGIN if fit.data.bandwidth else MARGIN


@dataclass
class Effect:
    """One effect that stands out: a rank side, a link, a host pair or a leaf."""
    kind: str                 # side | tail | link | host-pair | leaf
    key: Tuple               # (rank, side) | (s, r) | (host a, host b) | (leaf,)
    ratio: float              # time factor over the typical (or stall rate over pooled)
    z: float
    q: float                  # BH-adjusted p
    pairs: int                # pairs (or samples) it rests on
    detail: str = ""
    # a rank side: does it still stand out against the other ranks of its own leaf (what
    # is left when a named leaf explains the leaf's shift; see _beyond_leaf)
    beyond_leaf: bool = True
    # a rank side seen only on pairs between leaves (fewer than two inside its own): it
    # cannot name a NIC by itself, only say which side of a rank named by other evidence
    between_only: bool = False
    # a rank side slow on its pairs between leaves only, its pairs inside its leaf
    # typical: the path through the spine (paths.py), not the NIC itself
    through_spine: bool = False


def overdispersed_sf(k, m, phi: float, share) -> np.ndarray:
    """P(at least k of m) under a binomial with `share`, over-dispersion phi >= 1 taken as
    k / phi hits of m / phi trials. The count and the trials shrink alike: rounded
    apart, k = m (every pair of a side stalled) could need more hits than there are
    trials, a p of 0."""
    trials = np.maximum(np.round(np.asarray(m, dtype=np.float64) / phi), 1)
    need = np.minimum(np.ceil(np.asarray(k, dtype=np.float64) / phi), trials)
    return binom.sf(need - 1, trials, share)


def spread_upper(values: np.ndarray, alpha: float = Q) -> float:
    """The robust spread of `values`, raised to its one-sided (1 - alpha) upper
    confidence bound (chi-square, len - 1 df): the spread of six hosts' effects is
    itself a noisy figure, and an under-estimate names hosts; of 512 it barely moves."""
    df = max(len(values) - 1, 1)
    return robust_sigma(values) * math.sqrt(df / chi2.ppf(alpha, df))


def standout(values: np.ndarray, se: np.ndarray, widen: float):
    """z of each value over the median, with tau (spread beyond SE) and widening."""
    centre = float(np.median(values))
    tau2 = max(spread_upper(values) ** 2 - float(np.median(se ** 2)), 0.0)
    scale = np.sqrt(se ** 2 + tau2) * widen
    z = (values - centre) / np.maximum(scale, 1e-9)
    return centre, z, math.sqrt(tau2), scale


def side_effects(fit: Fit, widen: float, q_family: float = Q, leaf: Optional[np.ndarray] = None
                 ) -> Tuple[List[Effect], Dict[str, float]]:
    """Rank sides (send / receive, or both for a round trip) that stand out.

    Two tests, both must reject: the normal one (z over SE and tau, BH), and one that
    asks how often the median of that many pairs drawn from the test's own residuals
    reaches the effect (order statistics of the empirical residual distribution,
    BH): with a few pairs per side (rings, rails, thinned all-pairs) collisions under
    load make the residuals skewed, and two of three pairs of a healthy rank can be
    slow by chance. With `leaf` (per rank), a side must also stand out on its pairs
    within its own leaf (see _inside_leaf_too)."""
    d = fit.data
    if d.symmetric:
        # a mirrored matrix puts a rank's effect in its row and its column alike: each
        # pair carries one of them, so the rank's effect is their mean, not their sum
        both = (fit.send + fit.recv) / 2.0
        families = [("both", both, fit.n_send, np.r_[fit.resid + both[d.s], fit.resid + both[d.r]],
                     np.r_[d.s, d.r], np.r_[d.r, d.s])]
    else:
        families = [("send", fit.send, fit.n_send, fit.resid + fit.send[d.s], d.s, d.r),
                    ("receive", fit.recv, fit.n_recv, fit.resid + fit.recv[d.r], d.r, d.s)]
    keys, values, counts, nulls = [], [], [], []
    for side, eff, count, own, owner, peer in families:
        centred = own - np.median(own)
        null = (np.sort(centred), centred, owner, own, peer)
        for rank in np.flatnonzero(count >= MIN_PAIRS_PER_SIDE):
            keys.append((int(rank), side))
            values.append(eff[rank])
            counts.append(int(count[rank]))
            nulls.append(null)
    power = {"sides": len(keys)}
    if len(keys) < 4:
        return [], power
    values, counts = np.asarray(values), np.asarray(counts)
    ses = MEDIAN_SE_FACTOR * fit.sigma_e / np.sqrt(counts)
    centre, z, tau, scale = standout(values, ses, widen)
    rejected, q = benjamini_hochberg(norm.sf(z), q_family)
    p_emp = np.array([_median_tail_p(null, (v - centre) / widen, m, key[0])
                      for null, v, m, key in zip(nulls, values, counts, keys)])
    rejected_emp, q_emp = benjamini_hochberg(p_emp, q_family)
    z_crit = norm.isf(q_family / len(keys))
    power.update(tau=tau, se=float(np.median(ses)), scale=float(np.median(scale)),
                 mde=float((z_crit + POWER_Z) * np.median(scale)), z_crit=float(z_crit))
    margin = side_margin(fit)
    power.update(margin=margin, between_only=[])
    alpha, out = q_family / len(keys), []    # a path through the spine: Bonferroni
    for i in np.flatnonzero(rejected & rejected_emp & (values - centre >= math.log(margin))):
        inside = True if leaf is None else _inside_leaf_too(nulls[i], keys[i][0], leaf, centre,
                                                            margin)
        if inside is None:   # cannot tell a NIC from its leaf's uplink or collisions
            power["between_only"].append(keys[i])
        through_spine = inside is False
        if through_spine and not _through_spine(nulls[i], keys[i][0], leaf, centre, margin, alpha):
            continue
        out.append(Effect("side", keys[i], math.exp(values[i] - centre), float(z[i]),
                          float(max(q[i], q_emp[i])), int(counts[i]),
                          beyond_leaf=_beyond_leaf(i, keys, values, scale, leaf, q_family, margin),
                          between_only=inside is None, through_spine=through_spine))
    return out, power


def _through_spine(null, rank: int, leaf: np.ndarray, centre: float, margin: float,
                   alpha: float) -> bool:
    """A side slow only between leaves, its pairs inside its leaf typical: a path through
    the spine when its pairs between leaves are more often slow than collisions explain
    (paths.between_leaves_p at alpha: the family's level over its sides, Bonferroni)."""
    path = paths.between_leaves_p(null, rank, leaf, centre, margin)
    return path is not None and path[0] <= alpha


def _beyond_leaf(i: int, keys, values: np.ndarray, scale: np.ndarray,
                 leaf: Optional[np.ndarray], q_family: float, margin: float = MARGIN) -> bool:
    """Side i against the median of the same side of its own leaf's ranks: at least the
    margin and significant at the family's Bonferroni level. A slow uplink shifts every
    rank of its leaf (the polish shares it between the ranks and the class terms); once
    the leaf is named, only a rank beyond its leaf's shift is a culprit of its own."""
    if leaf is None:
        return True
    rank, side = keys[i]
    peers = [j for j, (r, sd) in enumerate(keys) if sd == side and leaf[r] == leaf[rank]]
    if len(peers) < 4:
        return True
    excess = float(values[i] - np.median(values[peers]))
    z_crit = norm.isf(q_family / len(keys))
    return excess >= math.log(margin) and excess / max(float(scale[i]), 1e-9) >= z_crit


def _inside_leaf_too(null, rank: int, leaf: np.ndarray, centre: float, margin: float = MARGIN
                     ) -> Optional[bool]:
    """A NIC or host slows every pair it takes part in; collisions under load slow only
    pairs between leaves (inside a leaf one switch carries the pair: no ECMP). A side
    whose pairs within its own leaf (at least two: one could be a bad link of its own)
    are within the practical margin is slow only between leaves: a rank of a thinned
    matrix, a ring or a matching whose few peers drew collisions, not a culprit. None
    when it has fewer such pairs but some between leaves: nothing tells a NIC from its
    leaf's uplink or from collisions (True on one leaf: nothing to tell it from)."""
    _, _, owner, own, peer = null
    mine = np.flatnonzero(owner == rank)
    inside = leaf[peer[mine]] == leaf[rank]
    if inside.all():
        return True
    if inside.sum() < 2:
        return None
    return float(np.median(own[mine][inside])) - centre >= math.log(margin)


def _median_tail_p(null: Tuple[np.ndarray, ...], excess: float, count: int, rank: int) -> float:
    """How unlikely the rank's pair deviations are, were they drawn from the null: the
    smaller of two binomial tails, doubled (Bonferroni over the two):
    - its median: at least ceil(m / 2) of its m deviations at or above `excess` (the
      effect over the centre; exact for odd m, conservative for even): a large effect on
      a few pairs (six ranks, one of them limited to 2 % of the bandwidth);
    - its count: as many of its deviations at least the practical margin as it has.
      Under load, collisions make a random share of the pairs between leaves slow: a
      healthy rank of a dozen pairs can have half of them slow (its median jumps), a
      slow NIC has nearly all.
    The null is every pair's deviation with its own end's effect left in (the residual
    after polishing a rank's few pairs understates how far they wander), leaving out
    the tested rank's own pairs (on six ranks they are a sixth of the null)."""
    ordered, values, owner = null[:3]
    mine = values[owner == rank]
    total = len(ordered) - len(mine)
    if total <= 0:
        return 1.0
    def tail(bar: float, need: int, trials: int) -> float:
        above = len(ordered) - np.searchsorted(ordered, bar, side="left") - int((mine >= bar).sum())
        share = min(max(above / total, 0.5 / total), 1.0)
        return float(binom.sf(need - 1, trials, share)) if need > 0 else 1.0

    margin = min(math.log(MARGIN), excess)
    p = [tail(excess, math.ceil(count / 2.0), count),
         tail(margin, int((mine >= margin).sum()), max(len(mine), count))]
    return min(1.0, 2.0 * min(p))


def links(fit: Fit, widen: float, q_family: float = Q, layout: Optional[Layout] = None
          ) -> Tuple[List[Effect], int]:
    """Pairs whose residual stands out after both ends' effects (BH over the pairs) and,
    with `layout`, whose time also stands out of its class's pairs before any end's
    effect (BH over the pairs; model.RawClasses says why both). Each p is the larger of
    the normal null's and the tail null's (tail_null.py: the healthy pairs' own tail,
    fitted on their fast side), so a heavy-tailed healthy population names nobody and a
    normal one keeps the normal test's power."""
    e = fit.resid
    if len(e) < 4 or fit.sigma_e <= 0:
        return [], len(e)
    z = e / (fit.sigma_e * widen)
    # slower than the practical margin by more than the noise, not only slower than the
    # typical pair with a point estimate past the margin: a pair 1.26x at z = 11 is
    # typical-plus-margin within its own error
    beyond_margin = (e - math.log(MARGIN)) / (fit.sigma_e * widen)
    kinds = same_host(fit, layout)
    rejected, q = benjamini_hochberg(null_p(beyond_margin, e, kinds), q_family)
    raw = raw_classes(fit.data, layout) if layout is not None else None
    if raw is not None and raw.sigma > 0:   # and slower than its class's typical pair
        dev = raw.deviation
        raw_rejected, _ = benjamini_hochberg(null_p(dev / (raw.sigma * widen), dev, kinds), q_family)
        rejected &= raw_rejected & (dev >= math.log(MARGIN))
    hit = np.flatnonzero(rejected & (e >= math.log(MARGIN)))
    d = fit.data
    return [Effect("link", (int(d.s[i]), int(d.r[i])), math.exp(e[i]), float(z[i]), float(q[i]), 1)
            for i in hit], len(e)


def host_pair_power(fit: Fit, layout: Layout, q_family: float = Q
                    ) -> Optional[Tuple[int, int, int]]:
    """(host pairs too thin to judge, host pairs measured, the fewest GPU pairs a block
    needs): a cable or port slows every GPU pair of its block, so the best a block of m
    pairs can show is m of m slow; a block where even that would not pass the first
    Benjamini-Hochberg bar over the blocks (against the pooled share of slow pairs)
    cannot be told (a thinned matrix keeps a few GPU pairs of some host pairs). None
    without host pairs to judge."""
    d = fit.data
    a, b = layout.host[d.s], layout.host[d.r]
    cross = a != b
    if layout.ranks_per_host < 2 or cross.sum() < 4:
        return None
    nh = len(layout.host_names)
    keys = np.minimum(a, b)[cross] * nh + np.maximum(a, b)[cross]
    sizes = np.unique(keys, return_counts=True)[1]
    if len(sizes) < 4:
        return None
    slow = fit.resid[cross] >= math.log(MARGIN)
    pooled = min(max(float(slow.mean()), 0.5 / len(slow)), 0.999)
    m = np.arange(4, int(sizes.max()) + 2)
    enough = m[binom.sf(m - 1, m, pooled) <= q_family / len(sizes)]
    need = int(enough[0]) if len(enough) else int(sizes.max()) + 1
    return int((sizes < need).sum()), len(sizes), need


def host_pairs(fit: Fit, layout: Layout, q_family: float = Q) -> List[Effect]:
    """Host pairs (a cable or port between two hosts) whose GPU pairs are nearly all
    slow: at least HOST_PAIR_SHARE of the block's pairs at least MARGIN slower than
    their ends predict, against the pooled share of such pairs among the host pairs of
    the same kind (binomial, over-dispersion measured across those blocks, BH over all
    blocks). A share, not the block's median: collisions under load slow a random share
    of every block between leaves, and the median of a block that drew many of them
    jumps. The kinds (within a leaf, between leaves) are pooled apart: collisions slow
    only pairs between leaves, and where most blocks lie within leaves (hierarchical)
    their share would make a block between leaves that drew 3 collisions of 4 pairs a
    cable."""
    blocks = _blocks(fit, layout)
    if blocks is None:
        return []
    keys, k, m, med, between = blocks
    nh = len(layout.host_names)
    p, pooled = np.ones(len(keys)), np.zeros(len(keys))
    for kind in (True, False):
        own = between == kind
        if own.any():
            p[own], pooled[own], _ = _block_p(k[own], m[own])
    rejected, q = benjamini_hochberg(p, q_family)
    hit = rejected & (k >= HOST_PAIR_SHARE * m) & (m >= 4)
    return [Effect("host-pair", (int(keys[i]) // nh, int(keys[i]) % nh), math.exp(med[i]),
                   float(norm.isf(max(p[i], 1e-300))), float(q[i]), int(m[i]),
                   f"{int(k[i])}/{int(m[i])} of their pairs at least {MARGIN:g}x slower than their "
                   f"ends predict (host pairs {'between leaves' if between[i] else 'within a leaf'}: "
                   f"{100 * pooled[i]:.1f}%)")
            for i in np.flatnonzero(hit)]


def _blocks(fit: Fit, layout: Layout):
    """(keys a * hosts + b with a < b, slow pairs, measured pairs, median residual, between
    leaves) of each host pair's block of GPU pairs in one test; None with fewer than 4."""
    d = fit.data
    a, b = layout.host[d.s], layout.host[d.r]
    cross = a != b
    if layout.ranks_per_host < 2 or cross.sum() < 4:
        return None
    nh = len(layout.host_names)
    lo, hi = np.minimum(a, b)[cross], np.maximum(a, b)[cross]
    frame = pd.DataFrame({"k": lo * nh + hi, "e": fit.resid[cross],
                          "slow": fit.resid[cross] >= math.log(MARGIN)})
    g = frame.groupby("k")
    keys = g.size().index.to_numpy()
    if len(keys) < 4:
        return None
    leaf_of_host = np.zeros(nh, dtype=np.int64)
    leaf_of_host[layout.host] = layout.leaf
    between = leaf_of_host[keys // nh] != leaf_of_host[keys % nh]
    return (keys, g["slow"].sum().to_numpy(), g.size().to_numpy(), g["e"].median().to_numpy(),
            between)


def _block_p(k: np.ndarray, m: np.ndarray) -> Tuple[np.ndarray, float, float]:
    """(p of each block's count of slow pairs, the pooled share, the over-dispersion)
    against the share pooled over these blocks, over-dispersion measured across them."""
    pooled = min(max(float(k.sum() / m.sum()), 0.5 / float(m.sum())), 0.999)
    expected = pooled * m
    phi = max(1.0, float(np.median((k - expected) ** 2 / (expected * (1 - pooled)))) / 0.455)
    return overdispersed_sf(k, m, phi, pooled), pooled, phi


def block_rest_p(fits: List[Fit], layout: Layout, pair: Tuple[int, int],
                 leave_out: set) -> Tuple[float, int, int]:
    """(p, slow, measured) of the GPU pairs between hosts `pair` over every test in
    `fits`, the GPU pairs in `leave_out` (unordered rank pairs) left out: their count of
    pairs at least MARGIN slower than their ends predict against what each test's pooled
    share of its blocks of the same kind expects (the sum of each test's over-dispersed
    binomial)."""
    a, b = min(pair), max(pair)
    nh = len(layout.host_names)
    pmf, need, slow, measured = np.ones(1), 0, 0, 0
    for f in fits:
        blocks = _blocks(f, layout)
        if blocks is None:
            continue
        keys, k, m, _, between = blocks
        hit = np.flatnonzero(keys == a * nh + b)
        if not len(hit):
            continue
        own = between == between[hit[0]]
        _, share, phi = _block_p(k[own], m[own])
        d = f.data
        hs, hr = layout.host[d.s], layout.host[d.r]
        keep = (((hs == a) & (hr == b)) | ((hs == b) & (hr == a))) & np.array(
            [frozenset((int(s), int(r))) not in leave_out for s, r in zip(d.s, d.r)])
        kt, mt = int((f.resid[keep] >= math.log(MARGIN)).sum()), int(keep.sum())
        if mt == 0:
            continue
        trials = max(int(round(mt / phi)), 1)
        need += min(int(math.ceil(kt / phi)), trials)
        pmf = np.convolve(pmf, binom.pmf(np.arange(trials + 1), trials, share))
        slow, measured = slow + kt, measured + mt
    return float(pmf[need:].sum()) if measured else 1.0, slow, measured


def leaves(fit: Fit, layout: Layout, widen: float, q_family: float = Q) -> List[Effect]:
    """Leaves (switch or uplink) whose pairs through the uplink stand out.

    The class terms alone do not say it: a shift of every rank effect in a leaf and the
    opposite shift of its class terms fit the same data, and with few pairs per rank
    (thinned matrices) the polish puts much of a slow uplink into the leaf's ranks. The
    interaction contrast C[L, x] = T[L, x] + T[x, L] - T[L, L] - T[x, x] is the same
    under that shift: pairs between the two leaves against pairs inside each. A slow
    uplink of L adds twice its factor to every C[L, x]; a leaf's value is the median
    over the other leaves x (one other slow leaf does not move it), half of it the
    leaf's factor, tested against the other leaves' (tau among them joins the error).
    The same contrast of the raw class medians (before any rank's effect) must stand
    out too: in a sparse design the polish can put a class term far off (a ring's
    fifteen pairs inside a leaf, their ends' effects raised by collisions on their few
    other pairs), and the raw medians do not depend on the ends' effects. And so must the
    contrast of the raw class means: where collisions slow about half of the pairs
    between leaves (a rail-optimized fabric: nearly every such pair crosses a spine), a
    class's median sits in the fast or the slow cluster as its share of collided pairs
    falls either side of one half, and a leaf that drew a few more than the others read
    1.3x by its medians; its mean moves with that share, a little. A slow leaf moves
    every pair through it, and the mean with them."""
    nl = len(layout.leaf_names)
    if nl < 3:
        return []
    d = fit.data
    counts = np.bincount(layout.classes()[d.s, d.r], minlength=1 + nl * nl)[1:1 + nl * nl]
    counts = counts.reshape(nl, nl).astype(np.float64)
    polished = np.full(nl * nl, np.nan)
    polished[:min(len(fit.cls_effect) - 1, nl * nl)] = fit.cls_effect[1:1 + nl * nl]
    raw = raw_classes(d, layout)
    medians = np.full(nl * nl, np.nan)
    medians[:min(len(raw.median) - 1, nl * nl)] = raw.median[1:1 + nl * nl]
    means, mean_var = raw_class_means(d, layout, nl)
    found = []
    # the means' route asks no margin: it says only that the shift is not a median's jump
    for terms, sigma, class_var, margin in ((polished, fit.sigma_e, None, math.log(MARGIN)),
                                            (medians, raw.sigma, None, math.log(MARGIN)),
                                            (means, 1.0, mean_var.reshape(nl, nl), 0.0)):
        values, ses = _leaf_contrasts(terms.reshape(nl, nl), counts, sigma, class_var)
        ok = np.isfinite(values)
        if ok.sum() < 3:
            return []
        centre, z, _, _ = standout(values[ok], ses[ok], widen)
        rejected, q = benjamini_hochberg(norm.sf(z), q_family)
        index = np.flatnonzero(ok)
        found.append({int(index[i]): (math.exp(values[index[i]] - centre), float(z[i]), float(q[i]))
                      for i in np.flatnonzero(rejected & (values[ok] - centre >= margin))})
    polish, plain, shifted = found
    return [Effect("leaf", (leaf,), ratio, z, max(q, plain[leaf][2], shifted[leaf][2]), int(counts.sum()))
            for leaf, (ratio, z, q) in sorted(polish.items()) if leaf in plain and leaf in shifted]


def _leaf_contrasts(t: np.ndarray, counts: np.ndarray, sigma: float, class_var: Optional[np.ndarray] = None
                    ) -> Tuple[np.ndarray, np.ndarray]:
    """(value, standard error) per leaf: half the median over the other leaves x of
    C[L, x] = T[L, x] + T[x, L] - T[L, L] - T[x, x], from class terms t (leaves x leaves):
    medians of their pairs at spread sigma, or means whose variances class_var gives."""
    nl = len(t)
    t = np.where(counts > 0, t, np.nan)
    inv = np.where(counts > 0, 1.0 / np.maximum(counts, 1.0), np.nan)
    if class_var is not None:   # in the units below, where MEDIAN_SE_FACTOR sigma is 1
        inv, sigma = np.where(counts > 0, class_var, np.nan) / MEDIAN_SE_FACTOR ** 2, 1.0
    diag, inv_diag = np.diag(t), np.diag(inv)
    contrast = t + t.T - diag[:, None] - diag[None, :]
    var = inv + inv.T + inv_diag[:, None] + inv_diag[None, :]
    np.fill_diagonal(contrast, np.nan)
    values, ses = np.full(nl, np.nan), np.full(nl, np.nan)
    for leaf in range(nl):
        ok = np.isfinite(contrast[leaf]) & np.isfinite(var[leaf])
        if ok.sum() >= 2:
            values[leaf] = 0.5 * float(np.median(contrast[leaf][ok]))
            ses[leaf] = 0.5 * MEDIAN_SE_FACTOR * sigma * math.sqrt(float(np.median(var[leaf][ok])))
    return values, ses


def iterations_to_tell(power: Dict[str, float], detect: float = DETECT) -> str:
    """How much more data would bring the minimum detectable side effect to `detect`."""
    target = math.log(detect) / (power["z_crit"] + POWER_Z)
    tau = power["tau"]
    if tau >= target:
        return (f"ranks differ among themselves by {math.exp(tau):.2f}x (beyond the noise of their "
                "pairs): more iterations will not separate a culprit of that size from them")
    se_needed = math.sqrt(target ** 2 - tau ** 2)
    factor = (power["se"] / se_needed) ** 2
    return (f"about {max(2, math.ceil(factor))}x the iterations (or that many runs) would tell, if the "
            "residual spread is sample noise")


def side_power(power: Dict[str, float]) -> Tuple[bool, float]:
    """(underpowered, minimum detectable ratio) of a fit's rank-side test."""
    if "mde" not in power:
        return True, float("inf")
    mde = math.exp(power["mde"])
    return mde > DETECT, mde


def leaf_path_effects(fit: Fit, layout: Layout, q_family: float = Q,
                      host_pairs: Sequence[Effect] = ()) -> List[Effect]:
    """The leaf directions of one fitted test (paths.leaf_paths) as evidence: each an
    Effect of kind path, key (leaf, side). A round trip cannot tell into from out of:
    none for a latency test. The GPU pairs of the host pairs the test found (host_pairs:
    nearly every pair of their block slow) are left out: a cable or port between two
    hosts of two leaves slows all their pairs, 2 x 16 of a leaf's 192 pairs to other
    leaves on 8 hosts x 4 GPUs in 4 leaves, which the count of each leaf direction read
    as both leaves' uplinks; a link to the spine slows flows to every leaf."""
    d = fit.data
    nh = len(layout.host_names)
    blocks = np.array([min(e.key) * nh + max(e.key) for e in host_pairs], dtype=np.int64)
    a, b = layout.host[d.s], layout.host[d.r]
    keep = ~np.isin(np.minimum(a, b) * nh + np.maximum(a, b), blocks)
    found = paths.leaf_paths(fit.resid[keep], d.s[keep], d.r[keep], layout.leaf, q_family) \
        if not d.symmetric else []
    return [Effect("path", (x, side), k / max(share * m, 1e-12), z, q, m,
                   f"{k}/{m} at least {bar:.2f}x slower than their ends predict, against "
                   f"{100 * share:.1f} % of the pairs between two other leaves")
            for x, side, k, m, share, z, q, bar in found]
