"""A step of several collectives composed from their measured sequences: the sum of
`count` consecutive draws of each, by circular blocks (impact and fit's intervals alike)."""

from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

import numpy as np

from ..resampling import block_length

RESAMPLES = 4000
SEED = 12345


def compose_step(parts: Sequence[Tuple[np.ndarray, int]], resamples: int = RESAMPLES,
                 seed: int = SEED, block: Optional[int] = None) -> np.ndarray:
    """Sums of one step's collectives, `resamples` of them.

    parts: (per-iteration times of one collective in measured order, how many of that
    collective a step runs one after another). Each part is drawn as circular blocks of
    consecutive measured iterations (so bursts and drift of the measurement stay
    together) until the step's count is reached; parts are drawn independently.
    """
    rng = np.random.default_rng(seed)
    total = np.zeros(resamples)
    for times, count in parts:
        times = np.asarray(times, dtype=np.float64)
        m = len(times)
        if count <= 0:
            continue
        if m == 0:
            raise ValueError("compose_step: a collective without samples")
        length = min(block or block_length(m), m)
        blocks = math.ceil(count / length)
        starts = rng.integers(0, m, size=(resamples, blocks))
        idx = (starts[:, :, None] + np.arange(length)[None, None, :]) % m
        drawn = times[idx].reshape(resamples, blocks * length)[:, :count]
        total += drawn.sum(axis=1)
    return total
