"""The noise model: a robust additive fit of every pair test's log times.

    log t(s -> r) = mu + T[class(s, r)] + a[s] + b[r] + e[s, r]

t is a pair's median time (latency, or seconds per byte for bandwidth), s the
measuring rank (the sender of a bandwidth test), r its peer (the receiver). The
class of a pair is "same host", or the ordered pair of the two ranks' leaves
(/ranks leaf labels; one leaf when the run has none), so a leaf or its uplink shows
as T terms rather than as its hosts' effects. a[s] is the sender effect, b[r] the
receiver effect, e the pair residual. A ping-pong round trip cannot tell its two
directions apart: its matrix is mirrored, and a rank's effect is a[r] + b[r] (a host
effect, side "both").

Fitted by median polish (classes, rows, columns in turn) on the pairs present, so any
pattern that gives a rank several peers is fitted: all-pairs, budget-thinned
all-pairs, rails, cross-rail, ring, bisection, hierarchical. The same pass over the
raw samples counts, per pair, the samples beyond TAIL_FACTOR x the pair's median: the
tails of a lossy NIC, whose medians are normal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np
import pandas as pd

from ..kinds import analysis_of
from ..kinds.base import PAIR_FIT
from ..reader import FLAG_AUXILIARY_MASK, ResultFile, TestInstance
from ..resampling import block_length

# A sample this many times its own pair's median is a stall (a retransmission timeout,
# a link flap, a scheduler slice), counted per rank side and tested against the
# run's pooled rate (tails.tail_sides).
TAIL_FACTOR = 5.0
# Patterns whose ranks meet several peers: a rank's effect is separable from its pairs'.
FITTED_PATTERNS = ("all-pairs", "rails", "cross-rail", "ring", "bisection", "hierarchical")


@dataclass
class Layout:
    """Who is where: per rank its host, leaf and labels (from /ranks)."""
    n: int
    host: np.ndarray          # host index per rank
    leaf: np.ndarray          # leaf index per rank (0 when unlabelled)
    host_names: List[str]
    leaf_names: List[str]
    gpu: Dict[int, int]
    nic: Dict[int, str]
    ranks_per_host: int

    @classmethod
    def of(cls, result: ResultFile) -> "Layout":
        ranks = result.ranks()
        n = int(result.attrs.get("nranks", len(ranks)) or len(ranks))
        hosts = [""] * n
        leaves = [""] * n
        for row in ranks.to_dict("records"):
            r = int(row["rank"])
            if 0 <= r < n:
                hosts[r] = str(row["host"])
                leaves[r] = str(row.get("leaf", "") or "")
        host_names = sorted(set(hosts))
        leaf_names = sorted(set(leaves))
        gpu = {int(r): int(g) for r, g in zip(ranks["rank"], ranks["gpu"])} if "gpu" in ranks else {}
        nic = {int(r): str(x) for r, x in zip(ranks["rank"], ranks["nic"])} if "nic" in ranks else {}
        host_idx = np.array([host_names.index(h) for h in hosts], dtype=np.int64)
        return cls(n, host_idx, np.array([leaf_names.index(x) for x in leaves], dtype=np.int64),
                   host_names, leaf_names, gpu, nic,
                   int(np.bincount(host_idx).max()) if n else 1)

    def host_of(self, rank: int) -> str:
        return self.host_names[self.host[rank]] if 0 <= rank < self.n else f"rank {rank}"

    def classes(self) -> np.ndarray:
        """Pair class per (s, r): 0 same host, else 1 + leaf(s) * L + leaf(r)."""
        nl = len(self.leaf_names)
        cls = 1 + self.leaf[:, None] * nl + self.leaf[None, :]
        return np.where(self.host[:, None] == self.host[None, :], 0, cls)


@dataclass
class PairData:
    """One test's pairs: median log time and tail counts per measured (s, r)."""
    inst: TestInstance
    s: np.ndarray             # measuring rank per pair
    r: np.ndarray             # peer per pair
    logt: np.ndarray          # log median time per pair (seconds per byte for bandwidth)
    samples: np.ndarray       # samples per pair
    beyond: np.ndarray        # samples beyond TAIL_FACTOR x the pair's median
    symmetric: bool           # a round trip: direction unknown
    bandwidth: bool
    # blocks of consecutive iterations (resampling.block_length of the pair's samples)
    # measured, and those holding a stall: a stall that persists over the iterations
    # stalls several blocks, a burst of another tenant one or two (pair_tails.py)
    blocks: Optional[np.ndarray] = None
    stalled_blocks: Optional[np.ndarray] = None

    @property
    def label(self) -> str:
        return f"{self.inst.index:04d} {self.inst.get('name')}"


@dataclass
class Fit:
    data: PairData
    mu: float
    cls_effect: np.ndarray    # T per class
    send: np.ndarray          # a[s] per rank (NaN: rank not measured as a sender)
    recv: np.ndarray          # b[r] per rank
    resid: np.ndarray         # e per pair (aligned with data.s, data.r)
    sigma_e: float            # robust sigma of the residuals (MAD x 1.4826)
    n_send: np.ndarray        # pairs per rank as sender (unique pairs when symmetric)
    n_recv: np.ndarray


def pair_data(inst: TestInstance, n: int) -> Optional[PairData]:
    """Per-pair medians and tail counts from the raw samples; None without pairs."""
    s = inst.samples()
    if s.empty:
        return None
    s = s[(s["peer"] >= 0) & ((s["flags"] & FLAG_AUXILIARY_MASK) == 0)]
    t = (s["t_done_ns"].to_numpy(np.int64) - s["t_post_ns"].to_numpy(np.int64)).astype(np.float64)
    rank, peer = s["rank"].to_numpy(np.int64), s["peer"].to_numpy(np.int64)
    bandwidth = inst.metric == "bandwidth"
    nbytes = s["bytes"].to_numpy(np.float64)
    ok = (rank >= 0) & (rank < n) & (peer >= 0) & (peer < n) & (rank != peer) & (t > 0)
    if bandwidth:
        ok &= nbytes > 0
    if not ok.any():
        return None
    value = np.log(t[ok] / nbytes[ok]) if bandwidth else np.log(t[ok])
    key = rank[ok] * n + peer[ok]
    order = np.lexsort((value, key))
    key, value = key[order], value[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    counts = np.diff(np.r_[starts, len(key)])
    lo = starts + (counts - 1) // 2
    hi = starts + counts // 2
    median = 0.5 * (value[lo] + value[hi])
    beyond_each = value > np.repeat(median, counts) + np.log(TAIL_FACTOR)
    beyond = np.add.reduceat(beyond_each.astype(np.int64), starts)
    pair_key = key[starts]
    iteration = s["iter"].to_numpy(np.int64)[ok][order]
    blocks, stalled_blocks = _iteration_blocks(key, iteration, beyond_each, starts, counts)
    return PairData(inst, pair_key // n, pair_key % n, median, counts, beyond,
                    symmetric=not bandwidth, bandwidth=bandwidth, blocks=blocks,
                    stalled_blocks=stalled_blocks)


def _iteration_blocks(key: np.ndarray, iteration: np.ndarray, stalled: np.ndarray,
                      starts: np.ndarray, counts: np.ndarray):
    """(blocks measured, blocks with a stall) per pair: iterations cut into blocks of
    resampling.block_length(samples of the median pair) consecutive iterations."""
    length = block_length(int(np.median(counts)))
    block = iteration // length
    pair = np.repeat(np.arange(len(starts)), counts)
    unit = pair * (int(block.max()) + 1 if len(block) else 1) + block
    blocks = np.bincount(pair[np.unique(unit, return_index=True)[1]], minlength=len(starts))
    hit = np.unique(unit[stalled])
    stalled_blocks = np.bincount(hit // (int(block.max()) + 1 if len(block) else 1),
                                 minlength=len(starts))
    return blocks, stalled_blocks


def fit(data: PairData, layout: Layout, iterations: int = 12) -> Fit:
    """Median polish of the pair log times with class, row and column terms."""
    s, r, y = data.s, data.r, data.logt
    if data.symmetric:
        # each round trip once per orientation, so rows and columns see the same pairs
        s, r, y = np.r_[s, r], np.r_[r, s], np.r_[y, y]
    n = layout.n
    cls = layout.classes()[s, r]
    resid = y.copy()
    mu = float(np.median(resid))
    resid -= mu
    cls_eff = np.zeros(int(cls.max()) + 1 if len(cls) else 1)
    send, recv = np.zeros(n), np.zeros(n)
    for _ in range(iterations):
        moved = 0.0
        for index, effect in ((s, send), (r, recv), (cls, cls_eff)):
            med = _group_median(resid, index)
            effect[med.index.to_numpy()] += med.to_numpy()
            resid -= med.reindex(index).to_numpy()
            moved = max(moved, float(np.abs(med.to_numpy()).max()) if len(med) else 0.0)
        if moved < 1e-6:
            break
    # centre the rank effects on their medians (the overall level lives in mu and T)
    n_send = np.bincount(s, minlength=n)
    n_recv = np.bincount(r, minlength=n)
    for effect, count in ((send, n_send), (recv, n_recv)):
        present = count > 0
        if present.any():
            centre = float(np.median(effect[present]))
            effect -= centre
            cls_eff += centre
        effect[~present] = np.nan
    if data.symmetric:
        resid = resid[: len(data.s)]
        n_send = n_recv = np.bincount(data.s, minlength=n) + np.bincount(data.r, minlength=n)
    # the MAD of polished residuals understates their spread by the effects fitted
    # from them (a 16-rank matrix: ~10 %): the usual degrees-of-freedom correction
    fitted_terms = int((n_send > 0).sum() + (n_recv > 0).sum() + (np.bincount(cls) > 0).sum())
    cells = len(resid) * (2 if data.symmetric else 1)
    dof = math.sqrt(cells / max(cells - fitted_terms, 1))
    sigma_e = 1.4826 * float(np.median(np.abs(resid))) * dof if len(resid) else 0.0
    return Fit(data, mu, cls_eff, send, recv, resid, sigma_e, n_send, n_recv)


def _group_median(values: np.ndarray, index: np.ndarray) -> pd.Series:
    return pd.Series(values).groupby(index).median()


def fitted_instances(result: ResultFile) -> List[TestInstance]:
    """Quiet pair tests whose ranks meet several peers (any FITTED_PATTERNS), not retests."""
    out = []
    for inst in result.instances():
        if str(inst.get("pattern")) not in FITTED_PATTERNS:
            continue
        if str(inst.get("pass")) == "serial-retest" or inst.get("condition", "quiet") != "quiet":
            continue
        if PAIR_FIT not in analysis_of(inst.get("kind")).evidence and \
                inst.metric not in ("latency", "bandwidth"):
            continue
        out.append(inst)
    return out


@dataclass
class RawClasses:
    """The pair times before any end's effect: per class, the median log time and how
    many pairs it rests on; per pair, its deviation from its class's median; their
    robust spread. What the polish finds in a class term or a residual must also show
    here: in a sparse design (rings, matchings: a handful of pairs per rank, some slowed
    by collisions under load) a rank's effect rests on a few pairs, and the polish
    passes its error on to the class terms and the other pairs' residuals."""
    median: np.ndarray        # per class (NaN: no pair)
    count: np.ndarray         # pairs per class
    deviation: np.ndarray     # per pair (aligned with data.s, data.r)
    sigma: float


def raw_classes(data: PairData, layout: Layout) -> RawClasses:
    s, r, y = data.s, data.r, data.logt
    if data.symmetric:
        s, r, y = np.r_[s, r], np.r_[r, s], np.r_[y, y]
    cls = layout.classes()[s, r]
    size = int(cls.max()) + 1 if len(cls) else 1
    med = _group_median(y, cls)
    median = np.full(size, np.nan)
    median[med.index.to_numpy()] = med.to_numpy()
    deviation = (y - median[cls])[: len(data.s)]
    sigma = 1.4826 * float(np.median(np.abs(deviation))) if len(deviation) else 0.0
    return RawClasses(median, np.bincount(cls, minlength=size), deviation, sigma)


def raw_class_means(data: PairData, layout: Layout, nl: int) -> Tuple[np.ndarray, np.ndarray]:
    """Per class between hosts (1 .. nl * nl, as classes() numbers them, less one), the
    mean log time of its pairs and the variance of that mean (their variance over their
    count; NaN below 2 pairs). Where collisions slow about half of a class's pairs, its
    median sits in one cluster or the other; the mean moves with the share between them."""
    s, r, y = data.s, data.r, data.logt
    if data.symmetric:
        s, r, y = np.r_[s, r], np.r_[r, s], np.r_[y, y]
    cls = layout.classes()[s, r]
    size = 1 + nl * nl
    n = np.bincount(cls, minlength=size)[:size].astype(np.float64)
    mean = np.bincount(cls, weights=y, minlength=size)[:size] / np.maximum(n, 1.0)
    centred = y - mean[cls]
    var = np.bincount(cls, weights=centred * centred, minlength=size)[:size] / np.maximum(n - 1.0, 1.0)
    return (np.where(n > 0, mean, np.nan)[1:],
            np.where(n > 1, var / np.maximum(n, 1.0), np.nan)[1:])
