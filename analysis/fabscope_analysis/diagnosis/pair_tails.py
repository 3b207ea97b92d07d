"""Host-pair tails: two hosts whose samples stall between them, and only between them.

Loss on one path (a cable or port of a host-to-host link, a flow-hash path only their
flows take) leaves every median normal: the pair's samples now and then wait for a
retransmission (on the emulated cluster 7 of 60 latency samples at 2,000x the pair's
median, the rest as fast as any pair). No rank side stands out (one peer host of
several stalls) and no residual: only the pair's tail.

A stall counts once per block of consecutive iterations (model.PairData.stalled_blocks,
blocks of resampling.block_length): a culprit must persist over the iterations. A burst
of another tenant, a PFC pause or a scheduler slice stalls a few consecutive samples of
the pairs measured at that moment: one or two blocks, never the blocks spread over the
pass that a lossy path stalls. A host pair needs at least MIN_STALLED_BLOCKS blocks.

Per host pair (both directions, every GPU pair between the two hosts): K stalled blocks
of B measured, against E = B x the largest of three shares, each its one-sided upper
confidence bound (tails.share_upper): the stalled share of the blocks of the host
pairs of either host with other hosts, and of the host pairs touching neither. A lossy
NIC or host stalls all its host pairs alike (its own share explains each of them: the
rank tails name it); a lossy path stalls one. Poisson, over-dispersion measured across
the host pairs, Benjamini-Hochberg over the host pairs of the test (one family), and the
practical bar of the rank tails (tails.TAIL_EXCESS_SHARE more of the samples stalled
than the typical host pair).
"""

from __future__ import annotations

from dataclasses import replace
from typing import List, Set, Tuple

import numpy as np
from scipy.stats import norm, poisson

from ..inference import benjamini_hochberg
from .evidence import Q, Effect
from .model import TAIL_FACTOR, Fit, Layout
from .tails import TAIL_EXCESS_SHARE, share_upper

# A host pair stalled in fewer blocks of iterations than this sits in one slot (a burst
# straddles at most two blocks): not a culprit whatever its count of samples.
MIN_STALLED_BLOCKS = 3


def host_pair_tails(fit: Fit, layout: Layout, q_family: float = Q) -> List[Effect]:
    """Host pairs (a, b), a < b by host index, whose samples stall beyond what either
    host's other pairs and the rest of the fabric explain (the module's docstring)."""
    d = fit.data
    if d.blocks is None or d.stalled_blocks is None:
        return []
    ha, hb = layout.host[d.s], layout.host[d.r]
    cross = ha != hb
    nh = len(layout.host_names)
    if cross.sum() < 4 or nh < 3:
        return []
    lo, hi = np.minimum(ha, hb)[cross], np.maximum(ha, hb)[cross]
    keys, inverse = np.unique(lo * nh + hi, return_inverse=True)
    if len(keys) < 3:
        return []
    sums = [np.bincount(inverse, weights=w[cross].astype(np.float64), minlength=len(keys))
            for w in (d.stalled_blocks, d.blocks, d.beyond, d.samples)]
    k, m, stalls, samples = sums
    a, b = keys // nh, keys % nh
    expected_share = _expected_share(k, m, a, b, nh)
    expected = expected_share * m
    pearson = (k - expected) ** 2 / np.maximum(expected, 1e-12)
    phi = max(1.0, float(np.median(pearson)) / 0.455)
    p = poisson.sf(np.ceil(k / phi) - 1, expected / phi)
    rejected, adjusted = benjamini_hochberg(p, q_family)
    rate = stalls / np.maximum(samples, 1)
    typical = float(np.median(rate))
    practical = (rate - typical >= TAIL_EXCESS_SHARE) & (k >= MIN_STALLED_BLOCKS)
    return [Effect("tail", (int(a[i]), int(b[i])), float(k[i] / max(expected[i], 1e-12)),
                   float(norm.isf(max(p[i], 1e-300))), float(adjusted[i]), int(samples[i]),
                   f"{int(stalls[i])} of their {int(samples[i])} samples stalled beyond "
                   f"{TAIL_FACTOR:g}x their pair's median, in {int(k[i])} of {int(m[i])} blocks of "
                   f"iterations ({expected[i]:.1f} expected from either host's other pairs and "
                   f"the rest; typical host pair: {100 * typical:.3f}% of samples)")
            for i in np.flatnonzero(rejected & practical)]


def _expected_share(k: np.ndarray, m: np.ndarray, a: np.ndarray, b: np.ndarray, nh: int
                    ) -> np.ndarray:
    """Per host pair: the largest upper bound of the stalled-block share of host a's
    other pairs, of host b's other pairs, and of the host pairs touching neither."""
    per_host_k = np.bincount(a, weights=k, minlength=nh) + np.bincount(b, weights=k, minlength=nh)
    per_host_m = np.bincount(a, weights=m, minlength=nh) + np.bincount(b, weights=m, minlength=nh)
    total_k, total_m = float(k.sum()), float(m.sum())
    out = np.zeros(len(k))
    for own in (a, b):
        rest_k, rest_m = per_host_k[own] - k, per_host_m[own] - m
        out = np.maximum(out, np.where(rest_m > 0, share_upper(rest_k, np.maximum(rest_m, 1)), 0.0))
    neither_k = total_k - per_host_k[a] - per_host_k[b] + k
    neither_m = total_m - per_host_m[a] - per_host_m[b] + m
    out = np.maximum(out, np.where(neither_m > 0, share_upper(neither_k, np.maximum(neither_m, 1)),
                                   0.0))
    return np.minimum(out, 0.999)


def leave_out(effects: List[Effect]) -> Set[Tuple[int, int]]:
    """The host pairs found (a < b): the rank tails leave their pairs out, as they leave
    out the pairs of a flagged rank (a lossy path's stalls are not its ends' NICs')."""
    return {(int(e.key[0]), int(e.key[1])) for e in effects}


def without(fit: Fit, layout: Layout, effects: List[Effect]) -> Fit:
    """`fit` with the GPU pairs between the host pairs of `effects` left out (what the
    rank tails judge: a lossy path's stalls are neither end's NIC's)."""
    pairs = leave_out(effects)
    if not pairs:
        return fit
    d = fit.data
    ha, hb = layout.host[d.s], layout.host[d.r]
    lo, hi = np.minimum(ha, hb), np.maximum(ha, hb)
    keep = np.array([(int(x), int(y)) not in pairs for x, y in zip(lo, hi)], dtype=bool)
    data = replace(d, s=d.s[keep], r=d.r[keep], logt=d.logt[keep], samples=d.samples[keep],
                   beyond=d.beyond[keep],
                   blocks=None if d.blocks is None else d.blocks[keep],
                   stalled_blocks=None if d.stalled_blocks is None else d.stalled_blocks[keep])
    return replace(fit, data=data, resid=fit.resid[keep])
