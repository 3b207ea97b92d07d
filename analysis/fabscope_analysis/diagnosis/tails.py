"""Tails: rank sides whose samples stall (beyond model.TAIL_FACTOR x their pair's median)
on more of their pairs than the pooled share explains: a lossy or flapping NIC, whose
medians are normal. Per test and side (tail_sides), and per rank over every test and
both directions together (tail_ranks: the power a thinned matrix's dozen pairs per
side lacks), binomial or Poisson against the pooled share, over-dispersion measured
across the sides, Benjamini-Hochberg over them; tail_power says whether the run could
have found a lossy NIC at all (else diagnose cannot tell that class).
"""

from __future__ import annotations

from typing import List, Tuple

import numpy as np
from scipy.stats import binom, chi2, norm, poisson

from ..inference import benjamini_hochberg, robust_sigma
from .evidence import Q, Effect, overdispersed_sf
from .model import TAIL_FACTOR, Fit

# A tail side needs this share of its samples stalled more than the typical side: a
# thousandth of transfers stalling is what a serving SLO notices; fewer is the fabric's
# habit. An excess, not a ratio to the pooled share: where the fabric (or shared CPUs)
# already stalls on a fifth of the pairs, a 1 % lossy NIC doubles its stalls at most.
TAIL_EXCESS_SHARE = 1e-3
# The tail test's own power target: a NIC that stalls this share of its samples (a 1 %
# lossy link) found with TAIL_POWER; below it the run cannot tell lossy NICs.
TAIL_DETECT = 0.01
TAIL_POWER = 0.8
# A rank whose stalled pairs over what its references expect stand this many robust
# sigmas (log ratio) beyond the median rank's is left out of the others' references
# before the second round (not named by it): several lossy hosts are each other's
# reference, and their stalls raise every other rank's expectation and the measured
# over-dispersion until none of them passes.
OUTLYING_Z = 4.0
# Rounds of leaving outlying ranks out before the last test: a few lossy hosts take a
# round or two each; the bound keeps a run with stalls everywhere from looping.
OUTLYING_ROUNDS = 8


def tail_sides(fit: Fit, host: np.ndarray, q_family: float = Q) -> List[Effect]:
    """Rank sides whose stalls are spread over more of their pairs than the pooled
    share explains. The count is of pairs with at least one stalled sample (beyond
    TAIL_FACTOR x the pair's median), so one pair full of stalls (a link, or the
    scheduler on one pair) does not make a side; a lossy NIC stalls on most of its
    pairs. Binomial against the pooled share, over-dispersion measured across the
    sides (the run's own: shared CPUs raise it), BH over the sides. Two rounds: the
    second leaves out each side's pairs with the ends the first flagged (on a few
    ranks every rank has a pair with a lossy one: a victim, not a culprit), or, where
    the first flagged none, the ends of its most stalled side (_most_stalled)."""
    out, p_side = _tail_round(fit, set(), q_family, host)
    flagged = {e.key for e in out} or _most_stalled(p_side)
    if flagged:
        out, p_side = _tail_round(fit, flagged, q_family, host)
    return out + _follow_ups(out, p_side, flagged, q_family)


def _most_stalled(p_side) -> set:
    """The side of smallest p among the practical ones, as the second round's flagged
    set when the first flagged none: a lossy NIC's stalls sit in every other rank's
    reference share (its pairs with them), so the others look stalled less than
    expected, which the median Pearson residual reads as over-dispersion (six emulated
    hosts: 3.96, against 2.2 without its pairs), and the NIC itself passed unseen.
    Leaving its pairs out of the others' references tests it as the second round would
    have; on a clean fabric that moves the median residual by one side at most."""
    return {min(p_side, key=lambda key: p_side[key][0])} if p_side else set()


def _follow_ups(out: List[Effect], p_side, flagged: set, q_family: float) -> List[Effect]:
    """The other side of each flagged NIC: one pre-specified follow-up test each (loss
    usually hits both directions), Benjamini-Hochberg over the follow-ups at the
    family's level (a family of the run's budget: core.FAMILIES_PER_TEST)."""
    other = {"send": "receive", "receive": "send"}
    asked = []
    for e in out:
        key = (e.key[0], other.get(e.key[1], ""))
        if key in p_side and key not in flagged:
            asked.append((key, p_side[key]))
    if not asked:
        return []
    rejected, adjusted = benjamini_hochberg(np.array([f[0] for _, f in asked]), q_family)
    return [Effect("tail", key, f[1], float(norm.isf(max(f[0], 1e-300))), float(qv), f[2],
                   f[3] + " (its other side, tested as a follow-up)")
            for (key, f), ok, qv in zip(asked, rejected, adjusted) if ok]


def _tail_counts(fit: Fit, flagged: set):
    """Per rank side: (keys, pairs with a stall, pairs, stalled samples, samples)."""
    d = fit.data
    n = len(fit.send)
    ends = np.array(sorted({r for r, _ in flagged}), dtype=np.int64)
    stalled = (d.beyond > 0).astype(np.float64)
    if d.symmetric:  # a round trip counts for both its ends
        families = [("both", np.r_[d.s, d.r], np.r_[d.r, d.s], np.r_[stalled, stalled],
                     np.r_[d.beyond, d.beyond], np.r_[d.samples, d.samples])]
    else:
        families = [("send", d.s, d.r, stalled, d.beyond, d.samples),
                    ("receive", d.r, d.s, stalled, d.beyond, d.samples)]
    keys, rows = [], []
    for side, who, other, hit, beyond, samples in families:
        mine = ~np.isin(other, ends)   # leave out its pairs with flagged ends
        counts = [np.bincount(who[mine], weights=w[mine], minlength=n)
                  for w in (hit, np.ones(len(who)), beyond, samples)]
        for rank in np.flatnonzero(counts[1] > 0):
            keys.append((int(rank), side))
            rows.append([c[rank] for c in counts])
    return keys, np.asarray(rows, dtype=np.float64).reshape(-1, 4)


def _pooled_without(fit: Fit, keys, flagged: set, host: np.ndarray, upper: bool = False
                    ) -> np.ndarray:
    """Per side: the share of stalled pairs among the pairs that touch neither its host
    nor a flagged rank (on six ranks a lossy one's stalls are in a fifth of every other
    rank's pairs; a lossy host's NICs would make each other's reference)."""
    d = fit.data
    ends = np.array(sorted({r for r, _ in flagged}), dtype=np.int64)
    clean = ~(np.isin(d.s, ends) | np.isin(d.r, ends))
    hit = (d.beyond[clean] > 0).astype(np.float64)
    hs, hr = host[d.s[clean]], host[d.r[clean]]
    nh = int(host.max()) + 1
    inside = hs == hr   # a pair within a host touches it once
    touch_k = np.bincount(hs, weights=hit, minlength=nh) + np.bincount(hr, weights=hit, minlength=nh) \
        - np.bincount(hs[inside], weights=hit[inside], minlength=nh)
    touch_m = np.bincount(hs, minlength=nh) + np.bincount(hr, minlength=nh) \
        - np.bincount(hs[inside], minlength=nh)
    hosts = host[np.array([r for r, _ in keys])]
    rest = np.maximum(len(hit) - touch_m[hosts], 1)
    k = np.maximum(hit.sum() - touch_k[hosts], 0.0)
    # upper: the share's upper confidence bound (share_upper); else none stalled among
    # N pairs is a share of about 0.5 / N, not 0
    return share_upper(k, rest) if upper else np.maximum(k, 0.5) / rest


def share_upper(k: np.ndarray, m: np.ndarray, alpha: float = Q) -> np.ndarray:
    """The one-sided (1 - alpha) upper confidence bound of a share of k events in m
    (Poisson). The pooled share is itself a noisy figure: where the fabric stalls a pair
    in a thousand, 2 of 2,000 stalled pairs on one side of four pairs made a lossy NIC of
    a ring's healthy rank, against a share estimated at nearly 0. With hundreds of
    stalled pairs the bound is the share."""
    return chi2.ppf(1.0 - alpha, 2.0 * (np.asarray(k, dtype=np.float64) + 1.0)) / 2.0 / m


def _tail_round(fit: Fit, flagged: set, q_family: float, host: np.ndarray):
    """(effects flagged, per side: (p, ratio, pairs, detail) of the practical ones)."""
    keys, rows = _tail_counts(fit, flagged)
    if len(keys) < 4:
        return [], {}
    k, m, stalls, samples = rows.T
    share, rate = k / m, stalls / samples
    unflagged = np.array([key not in flagged for key in keys])
    pooled = np.minimum(_pooled_without(fit, keys, flagged, host, upper=True), 0.999)
    pooled_rate = float(np.median(rate[unflagged]))
    expected = pooled * m
    pearson = ((k - expected) ** 2 / (expected * (1 - pooled)))[unflagged]
    phi = max(1.0, float(np.median(pearson)) / 0.455)
    p = overdispersed_sf(k, m, phi, pooled)
    rejected, q = benjamini_hochberg(p, q_family)
    practical = rate - pooled_rate >= TAIL_EXCESS_SHARE
    detail = [f"{int(k[i])}/{int(m[i])} of its pairs stalled beyond {TAIL_FACTOR:g}x their "
              f"median, {100 * rate[i]:.2f}% of its samples (other pairs: "
              f"{100 * pooled[i]:.1f}% stalled; typical side: {100 * pooled_rate:.3f}% of samples)"
              for i in range(len(keys))]
    effects = [Effect("tail", keys[i], share[i] / pooled[i], float(norm.isf(max(p[i], 1e-300))),
                      float(q[i]), int(m[i]), detail[i])
               for i in np.flatnonzero(rejected & practical)]
    return effects, {keys[i]: (float(p[i]), share[i] / pooled[i], int(m[i]), detail[i])
                     for i in np.flatnonzero(practical)}


def tail_ranks(fits: List[Fit], host: np.ndarray, q_family: float = Q) -> List[Effect]:
    """Ranks whose stalls, over every fitted test and both directions together, are spread
    over more of their pairs than the pooled shares explain. A lossy or flapping NIC
    stalls in both directions and in every test; a thinned matrix, a ring or a matching
    gives each rank a dozen pairs per test and side, too few for tail_sides to pass the
    false-discovery control, while their sum over the run's tests often is enough.
    Per rank: K stalled pairs of M, against E = the sum over its tests of M_t x that
    test's pooled share among pairs touching neither its host nor a flagged rank
    (Poisson, over-dispersion measured across the ranks, BH over the ranks). Two
    rounds, as tail_sides (victims of a lossy rank drop out; with none flagged in the
    first, the most stalled rank is left out of the others' references). Side `both`."""
    out, p_rank = _tail_ranks_round(fits, host, set(), q_family)
    flagged = ({e.key[0] for e in out} or _outlying(fits, host, p_rank, set(), q_family)
               or {key[0] for key in _most_stalled(p_rank)})
    # several lossy hosts: with the ranks flagged so far out of the references, the
    # others' expectations fall and the next lossy ones stand out
    for _ in range(OUTLYING_ROUNDS):
        more = _outlying(fits, host, p_rank, flagged, q_family) - flagged
        if not more:
            break
        flagged |= more
    if flagged:
        out, _ = _tail_ranks_round(fits, host, flagged, q_family)
    return out


def _outlying(fits: List[Fit], host: np.ndarray, p_rank, flagged: frozenset = frozenset(),
              q_family: float = Q) -> set:
    """The practical candidates to be left out of the others' references (not named by
    it), among the ranks not flagged yet, their references without the flagged ones:
    those whose log(stalled pairs / expected) stands OUTLYING_Z robust sigmas beyond the
    median rank's, and those whose stalled pairs pass Benjamini-Hochberg against a plain
    Poisson of what their references expect. The second catches several lossy hosts at
    once: a quarter of the ranks stalling spreads the log ratios (their robust sigma) and
    raises every healthy rank's expectation, and with it the over-dispersion the naming
    test measures, until none of them passes either."""
    k, m, e, _, _ = _rank_counts(fits, host, flagged)
    present = np.flatnonzero((m > 0) & ~np.isin(np.arange(len(m)), sorted(flagged)))
    if len(present) < 4:
        return set()
    x = np.log(np.maximum(k[present], 0.5) / np.maximum(e[present], 1e-12))
    excess = x - np.median(x)
    # a robust sigma of 0 (more than half the ranks alike: NICs stalling every pair leave
    # each healthy rank exactly its pairs with them stalled) puts every rank beyond the
    # median infinitely many sigmas out, not none
    far = (excess > 0) & (excess >= OUTLYING_Z * robust_sigma(x))
    far |= benjamini_hochberg(poisson.sf(k[present] - 1, np.maximum(e[present], 1e-12)), q_family)[0]
    return {int(r) for r in present[far] if (int(r), "both") in p_rank}


def tail_power(fits: List[Fit], n: int, q_family: float = Q) -> Tuple[float, float]:
    """(power, pairs of the median rank) of tail_ranks for a NIC stalling TAIL_DETECT of
    its samples: its pairs stall with 1 - (1 - TAIL_DETECT)^iterations each; the
    count must reach the first Benjamini-Hochberg threshold over the ranks against what
    the pooled shares expect of that many pairs."""
    pairs, hits, samples = np.zeros(n), 0.0, []
    total = 0
    for f in fits:
        d = f.data
        pairs += np.bincount(np.r_[d.s, d.r], minlength=n)
        hits += float((d.beyond > 0).sum()) * 2
        total += 2 * len(d.s)
        samples.append(d.samples)
    present = pairs[pairs > 0]
    if not len(present) or not total:
        return 0.0, 0.0
    m = float(np.median(present))
    pooled = max(hits / total, 0.5 / total)
    iterations = float(np.median(np.concatenate(samples)))
    share = 1.0 - (1.0 - TAIL_DETECT) ** iterations
    expected = pooled * m
    bar = q_family / len(present)
    k = np.arange(0, int(m) + 2)
    reach = k[poisson.sf(k - 1, expected) <= bar]
    if not len(reach):
        return 0.0, m
    return float(binom.sf(int(reach[0]) - 1, int(round(m)), min(share + pooled, 1.0))), m


def _rank_counts(fits: List[Fit], host: np.ndarray, flagged: set):
    """Per rank over every test and both directions, its pairs with the flagged ends left
    out: (stalled pairs, pairs, stalled pairs expected from the references, stalled
    samples, samples)."""
    n = len(host)
    k, m, e, stalls, samples = (np.zeros(n) for _ in range(5))
    keys = [(r, "both") for r in range(n)]
    ends = np.array(sorted(flagged), dtype=np.int64)
    for f in fits:
        d = f.data
        who, other = np.r_[d.s, d.r], np.r_[d.r, d.s]
        mine = ~np.isin(other, ends)
        hit = np.r_[d.beyond > 0, d.beyond > 0].astype(np.float64)
        pairs = np.bincount(who[mine], minlength=n).astype(np.float64)
        k += np.bincount(who[mine], weights=hit[mine], minlength=n)
        m += pairs
        stalls += np.bincount(who[mine], weights=np.r_[d.beyond, d.beyond][mine], minlength=n)
        samples += np.bincount(who[mine], weights=np.r_[d.samples, d.samples][mine], minlength=n)
        pooled = _pooled_without(f, keys, {(r, "both") for r in flagged}, host)
        e += np.minimum(pooled, 0.999) * pairs
    return k, m, e, stalls, samples


def _tail_ranks_round(fits: List[Fit], host: np.ndarray, flagged: set, q_family: float):
    n = len(host)
    keys = [(r, "both") for r in range(n)]
    ends = np.array(sorted(flagged), dtype=np.int64)
    k, m, e, stalls, samples = _rank_counts(fits, host, flagged)
    present = m > 0
    if present.sum() < 4:
        return [], {}
    unflagged = present & ~np.isin(np.arange(n), ends)
    pearson = ((k - e) ** 2 / np.maximum(e, 1e-12))[unflagged]
    phi = max(1.0, float(np.median(pearson)) / 0.455) if len(pearson) else 1.0
    p = np.ones(n)
    p[present] = poisson.sf(np.ceil(k[present] / phi) - 1, e[present] / phi)
    rejected = np.zeros(n, bool)
    adjusted = np.ones(n)
    rejected[present], adjusted[present] = benjamini_hochberg(p[present], q_family)
    rate = np.divide(stalls, samples, out=np.zeros(n), where=samples > 0)
    pooled_rate = float(np.median(rate[unflagged])) if unflagged.any() else 0.0
    practical = rate - pooled_rate >= TAIL_EXCESS_SHARE
    candidates = {keys[r]: (float(p[r]),) for r in np.flatnonzero(practical & present)}
    return [Effect("tail", (int(r), "both"), float(k[r] / max(e[r], 1e-12)),
                   float(norm.isf(max(p[r], 1e-300))), float(adjusted[r]), int(m[r]),
                   f"{int(k[r])}/{int(m[r])} of its pairs over {len(fits)} test(s), both "
                   f"directions, stalled beyond {TAIL_FACTOR:g}x their median ({e[r]:.1f} "
                   f"expected from the other pairs), {100 * rate[r]:.2f}% of its samples "
                   f"(typical rank: {100 * pooled_rate:.3f}%)")
            for r in np.flatnonzero(rejected & practical & present)], candidates
