"""A null with the healthy population's own tail: how far out a healthy pair can sit.

A test of one pair against "the residual noise is normal with the robust sigma" holds
its false-discovery rate only if healthy pairs are normal. Healthy pair effects need
not be: paths, queue pairs, firmware and cables give a population whose bulk is a few
percent wide and whose tail is heavy (a Student-t of 3 degrees of freedom with the
same spread puts one pair in 60 beyond 1.25x where a normal puts one in 10^4). Faults,
collisions under load and bursts only ever slow a pair; healthy spread goes both ways.
So the null's tail is fitted on the FAST side of the values, mirrored: the fast half
holds the healthy tail and none of what slows pairs.

The fit: a Student-t centred on the median, its degrees of freedom chosen from a grid
by profile likelihood (its scale by maximum likelihood for each), and the heaviest tail
(fewest degrees of freedom) the fast half does not reject at level TAIL_ALPHA is taken:
a tail under-estimated from a few hundred pairs would name healthy ones, one
over-estimated would name no fault. A normal
population gives the normal's tail back (no power lost where the old null held), a
heavy one its own. Values are in units of the population's robust sigma (1.4826 MAD),
the unit every caller already has.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy.stats import chi2, norm
from scipy.stats import t as student_t

from .inference import MAD_TO_SIGMA

# Degrees of freedom tried, heaviest first; infinity is the normal.
# Tails heavier than 2 degrees of freedom (no finite spread) are not fitted: a few
# hundred pairs cannot tell them from 2, and their bars would name no fault at all.
DF_GRID = (2.0, 2.5, 3.0, 4.0, 5.0, 7.0, 10.0, 15.0, 25.0, 50.0, math.inf)
# The heaviest tail within half a chi-square (1 df) unit of the best fit: the maximum
# likelihood tail, leaning heavy (a bound at 5 % reads a normal matrix of a few hundred
# pairs as 5 degrees of freedom and a 3-df one as 2: bars of a thousandfold).
TAIL_ALPHA = 0.5
# Below this many values on the fast side, a tail cannot be told from the bulk: the
# normal null stays (hand-built matrices of a few ranks; their tests say so elsewhere).
MIN_FAST_VALUES = 30
# The likelihood is taken over at most this many values (a fixed, evenly spread subset
# of the sorted fast side: the tail's shape, not the count, is what is estimated).
MAX_VALUES = 4000


def _profile(x: np.ndarray, df: float) -> float:
    """Maximum log likelihood of x under a t(df) centred at 0, over its scale (EM)."""
    if math.isinf(df):
        scale = math.sqrt(float(np.mean(x * x)))
        return float(norm.logpdf(x, scale=scale).sum()) if scale > 0 else -math.inf
    scale = MAD_TO_SIGMA * float(np.median(np.abs(x)))
    if scale <= 0:
        return -math.inf
    for _ in range(60):
        w = (df + 1.0) / (df + (x / scale) ** 2)
        new = math.sqrt(float(np.mean(w * x * x)))
        if abs(new - scale) < 1e-9 * scale:
            scale = new
            break
        scale = new
    return float(student_t.logpdf(x, df, scale=scale).sum())


def fast_side_df(values: Sequence[float], alpha: float = TAIL_ALPHA) -> float:
    """Degrees of freedom of the null's tail: the heaviest Student-t tail the fast side
    of `values` (below their median, mirrored about it) does not reject at `alpha`;
    math.inf (the normal) with fewer than MIN_FAST_VALUES values on that side."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return math.inf
    centre = float(np.median(v))
    fast = np.sort(v[v < centre] - centre)
    if len(fast) < MIN_FAST_VALUES:
        return math.inf
    if len(fast) > MAX_VALUES // 2:
        fast = fast[np.linspace(0, len(fast) - 1, MAX_VALUES // 2).round().astype(np.int64)]
    x = np.r_[fast, -fast]
    ll = np.array([_profile(x, df) for df in DF_GRID])
    bar = float(ll.max()) - 0.5 * float(chi2.isf(alpha, 1))
    return float(DF_GRID[int(np.flatnonzero(ll >= bar)[0])])


def _unit(df: float) -> float:
    """A t(df)'s robust sigma (1.4826 x its median absolute deviation) over its scale."""
    return MAD_TO_SIGMA * float(student_t.ppf(0.75, df))


def tail_sf(z, df: float):
    """P(a draw of the null lies beyond z robust sigmas), one-sided; the normal's at
    df = inf."""
    if math.isinf(df):
        return norm.sf(z)
    return student_t.sf(np.asarray(z, dtype=np.float64) * _unit(df), df)


def tail_isf(p: float, df: float) -> float:
    """The null's one-sided upper p quantile in robust sigmas (inverse of tail_sf)."""
    if math.isinf(df):
        return float(norm.isf(p))
    return float(student_t.isf(p, df)) / _unit(df)
