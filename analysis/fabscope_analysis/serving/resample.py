"""Confidence intervals for serving figures, from the raw per-operation sequences.

A figure's point estimate is computed as `impact` computes it; its interval comes from
an outer circular block bootstrap: each measured sequence is redrawn as blocks of
consecutive operations (~n^(1/3) long, so bursts stay together) to its own length, the
figure recomputed, REPLICATES times; the interval is the 5th..95th percentile of the
replicates (two-sided 90 %). A verdict is PASS when the whole interval is within the
limit, FAIL when the whole interval is beyond it, and CANNOT TELL when it straddles it.
The interval holds what the measured sequences show, not events rarer than they can show:
a resampled step never holds a stall none of its operations had, so a step percentile is
trusted only where unseen_step_share (the rule-of-three bound) is below its tail.
"""

from __future__ import annotations

import math
from typing import Dict, List, Sequence, Tuple

import numpy as np

from ..resampling import block_length
from .compose import compose_step

REPLICATES = 80
INNER_RESAMPLES = 600
POINT_RESAMPLES = 4000
SEED = 12345
INTERVAL = (5.0, 95.0)
# Fewest values a percentile is read from: a p99 of fewer than 100 values is its maximum.
MIN_VALUES = {50.0: 10, 99.0: 100, 99.9: 1000}
MIN_COMPOSED = 20   # a sum of many draws still needs a sequence that shows its variation


# A rare event none of n measured operations showed can still have a rate up to about
# 3 / n: P(no event in n) = (1 - r)^n = 5 % at r = -ln(0.05) / n (the "rule of three").
UNSEEN_EVENTS = -math.log(0.05)


def unseen_step_share(parts: Sequence[Tuple[int, int]]) -> float:
    """Upper bound (95 %) on the share of steps that meet an event no measured operation
    showed: parts are (operations measured, operations a step runs) per operation class;
    each class's operations may each meet it at up to UNSEEN_EVENTS / measured. A sum of
    resampled operations never holds an event its sequence lacks, so a step's percentile
    q is told only when this share is below its tail, 1 - q / 100."""
    log_clear = 0.0
    for measured, per_step in parts:
        if per_step <= 0:
            continue
        if measured <= UNSEEN_EVENTS:
            return 1.0
        log_clear += per_step * math.log1p(-UNSEEN_EVENTS / measured)
    return -math.expm1(log_clear)


def operations_to_tell(per_step: int, q: float) -> int:
    """Operations to measure (of each class, a step running `per_step` operations in all)
    so that unseen_step_share is at most the tail of percentile q."""
    return operations_for_share(per_step, 1.0 - q / 100.0)


def operations_for_share(per_step: int, share: float) -> int:
    """Operations to measure so that a step of `per_step` of them meets an unseen event in
    at most `share` of steps (95 % bound)."""
    per_op = -math.expm1(math.log1p(-share) / max(int(per_step), 1))
    return int(math.ceil(UNSEEN_EVENTS / per_op))


def min_values(q: float) -> int:
    return MIN_VALUES.get(q, int(math.ceil(1.0 / max(1e-9, 1.0 - q / 100.0))))


def block_resample(values: np.ndarray, rng: np.random.Generator, copies: int = 1) -> np.ndarray:
    """`copies` redraws (rows) of `values` as circular blocks of consecutive values."""
    m = len(values)
    length = min(block_length(m), m)
    starts = rng.integers(0, m, size=(copies, int(math.ceil(m / length))))
    idx = (starts[:, :, None] + np.arange(length)[None, None, :]) % m
    drawn = values[idx.reshape(copies, -1)[:, :m]]
    return drawn[0] if copies == 1 else drawn


def composed_quantiles(parts: Sequence[Tuple[np.ndarray, int]], qs: Sequence[float],
                       seed: int = SEED) -> Dict[float, Tuple[float, float, float]]:
    """{q: (point, low, high)} of the q-th percentiles (ns) of a step that runs `count`
    operations of each part one after another (impact.compose_step); one set of
    replicates serves every q."""
    points = np.percentile(compose_step(parts, POINT_RESAMPLES, seed), qs)
    rng = np.random.default_rng(seed + 1)
    reps = np.empty((REPLICATES, len(qs)))
    for b in range(REPLICATES):
        redrawn = [(block_resample(np.asarray(t, dtype=np.float64), rng), c) for t, c in parts]
        reps[b] = np.percentile(compose_step(redrawn, INNER_RESAMPLES, seed + 2 + b), qs)
    bounds = np.percentile(reps, INTERVAL, axis=0)
    return {q: (float(points[i]), float(bounds[0, i]), float(bounds[1, i]))
            for i, q in enumerate(qs)}


def summed_quantile(sequences: List[np.ndarray], q: float,
                    seed: int = SEED) -> Tuple[float, float, float]:
    """(point, low, high) of the q-th percentile of one value drawn from each sequence and
    summed (independent parts of one request, e.g. KV transfer and the front end)."""
    rng = np.random.default_rng(seed)
    if len(sequences) == 1:
        point = float(np.percentile(sequences[0], q))
        reps = np.percentile(block_resample(sequences[0], rng, REPLICATES), q, axis=1)
    else:
        point = float(np.percentile(sum(s[rng.integers(0, len(s), POINT_RESAMPLES)]
                                        for s in sequences), q))
        total = sum(np.take_along_axis(block_resample(s, rng, REPLICATES),
                                       rng.integers(0, len(s), (REPLICATES, INNER_RESAMPLES)),
                                       axis=1) for s in sequences)
        reps = np.percentile(total, q, axis=1)
    low, high = np.percentile(reps, INTERVAL)
    return point, float(low), float(high)


def request_quantile(sequences: List[np.ndarray], parts: Sequence[Tuple[np.ndarray, int]],
                     q: float, seed: int = SEED) -> Tuple[float, float, float]:
    """(point, low, high) of the q-th percentile of a request's time: one value drawn from
    each sequence (summed_quantile) plus one step of `parts` (composed_quantiles: `count`
    operations of each, one after another). Each replicate redraws every sequence and every
    part's sequence as circular blocks."""
    if not parts:
        return summed_quantile(sequences, q, seed)
    rng = np.random.default_rng(seed)

    def total(seqs, steps, n: int, step_seed: int) -> np.ndarray:
        out = compose_step(steps, n, step_seed)
        for s in seqs:
            out = out + s[rng.integers(0, len(s), n)]
        return out
    point = float(np.percentile(total(sequences, parts, POINT_RESAMPLES, seed), q))
    reps = [np.percentile(total([block_resample(s, rng) for s in sequences],
                                [(block_resample(np.asarray(t, dtype=np.float64), rng), c)
                                 for t, c in parts], INNER_RESAMPLES, seed + 2 + b), q)
            for b in range(REPLICATES)]
    low, high = np.percentile(reps, INTERVAL)
    return point, float(low), float(high)


def ratio_quantile(congested: np.ndarray, quiet: np.ndarray, q: float,
                   seed: int = SEED) -> Tuple[float, float, float]:
    """(point, low, high) of percentile(congested, q) / percentile(quiet, q)."""
    rng = np.random.default_rng(seed)
    base = float(np.percentile(quiet, q))
    point = float(np.percentile(congested, q)) / base if base > 0 else float("inf")
    over = np.percentile(block_resample(congested, rng, REPLICATES), q, axis=1)
    under = np.percentile(block_resample(quiet, rng, REPLICATES), q, axis=1)
    with np.errstate(divide="ignore"):
        reps = np.where(under > 0, over / np.maximum(under, 1e-300), np.inf)
    low, high = np.percentile(reps, INTERVAL)
    return point, float(low), float(high)


def judge(low: float, high: float, limit: float) -> str:
    """PASS when the interval is within the limit, FAIL when beyond it, else CANNOT TELL."""
    if high <= limit:
        return "PASS"
    if low > limit:
        return "FAIL"
    return "CANNOT TELL"

