"""Small inference tools accept and compare share: false-discovery control, tolerance
limits from known-good runs, t intervals on log figures, noise of per-unit medians.

Every function names its method in its docstring; the docs (docs/analysis.md, accept
and compare) say where each is used and with which level.
"""

from __future__ import annotations

import math
from typing import Sequence, Tuple

import numpy as np
from scipy.optimize import brentq
from scipy.stats import nct, norm
from scipy.stats import t as student_t

# Consistency factor of the median absolute deviation for a normal distribution.
MAD_TO_SIGMA = 1.4826
# Standard error of a median of n normal draws: about 1.2533 sigma / sqrt(n).
MEDIAN_SE_FACTOR = 1.2533
# Practical margin of the verdicts that name a component (diagnose's effects, its
# retests): a time factor smaller than this is not a culprit, however significant.
PRACTICAL_MARGIN = 1.25
# A rank side of a bandwidth test is a culprit from this factor on (a NIC at 92.6 % of
# the typical: ClusterKit flags pairs under 93 % of the best), when the test has the
# power to see it; healthy NIC ports differ by a few percent. Latency sides keep the
# practical margin: software time per message (host-level) moves them far more.
BANDWIDTH_SIDE_MARGIN = 1.08


def robust_sigma(values: Sequence[float]) -> float:
    """1.4826 x the median absolute deviation of the finite values (0 for fewer than 2)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return 0.0
    return MAD_TO_SIGMA * float(np.median(np.abs(v - np.median(v))))


def benjamini_hochberg(p_values: Sequence[float], q: float) -> Tuple[np.ndarray, np.ndarray]:
    """Benjamini & Hochberg (1995) step-up over one family: (rejected mask, adjusted p),
    the false discovery rate held at q over all of the family's hypotheses. The one
    implementation every verdict uses (accept, diagnose, compare).

    A NaN p-value (a test that could not be computed) counts as a test with p = 1: it is
    never rejected, its adjusted p is 1, and it neither silences the others nor shrinks
    the family (a NaN carried through the ranking would make every adjusted p NaN)."""
    p = np.asarray(p_values, dtype=np.float64)
    m = len(p)
    if m == 0:
        return np.zeros(0, dtype=bool), np.zeros(0)
    filled = np.where(np.isnan(p), 1.0, np.clip(p, 0.0, 1.0))
    order = np.argsort(filled, kind="stable")
    ranked = filled[order] * m / np.arange(1, m + 1)
    adjusted = np.empty(m)
    adjusted[order] = np.minimum.accumulate(ranked[::-1])[::-1].clip(max=1.0)
    return adjusted <= q, adjusted


def first_step_z(m: int, q: float) -> float:
    """The one-sided z a single outlier among m tests needs to be a BH discovery (the
    first step, q/m): what sets the smallest effect a family rule can see."""
    return float(norm.isf(q / max(int(m), 1)))


def one_sided_p(z: np.ndarray) -> np.ndarray:
    """P(Z >= z) for a standard normal Z, elementwise."""
    return norm.sf(np.asarray(z, dtype=np.float64))


def normal_tolerance_factor(n: int, coverage: float, confidence: float) -> float:
    """One-sided normal tolerance factor k (Krishnamoorthy & Mathew 2009, eq. 2.2.3):
    mean + k s of n draws exceeds the `coverage` quantile of the population with
    probability `confidence`. k = t'_{n-1; confidence}(z_coverage sqrt(n)) / sqrt(n), the
    noncentral t quantile. Needs n >= 2."""
    if n < 2:
        raise ValueError("a tolerance limit needs at least 2 known-good runs")
    delta = float(norm.ppf(coverage)) * math.sqrt(n)
    # scipy's noncentral t quantile warns on small df (2-3 runs) while its value is right
    # (Krishnamoorthy & Mathew table B1: 26.26 for n = 2, 7.656 for n = 3 at 95 %/95 %)
    with np.errstate(all="ignore"):
        quantile = float(nct.ppf(confidence, n - 1, delta))
    if not math.isfinite(quantile):
        quantile = float(brentq(lambda x: nct.cdf(x, n - 1, delta) - confidence, delta, 1e6))
    return quantile / math.sqrt(n)


def tolerance_limit(log_values: Sequence[float], coverage: float, confidence: float,
                    upper: bool) -> Tuple[float, float]:
    """(limit on the log scale, k): the upper (or lower) one-sided normal tolerance limit
    of the log figures of known-good runs."""
    v = np.asarray(log_values, dtype=np.float64)
    k = normal_tolerance_factor(len(v), coverage, confidence)
    spread = float(np.std(v, ddof=1))
    centre = float(np.mean(v))
    return (centre + k * spread if upper else centre - k * spread), k


def t_quantile(level: float, df: float) -> float:
    """Two-sided `level` quantile of Student's t with df degrees of freedom."""
    return float(student_t.ppf(0.5 + level / 2.0, df))


def log_difference_interval(log_a: Sequence[float], log_b: Sequence[float], level: float,
                            extra_ss: float = 0.0, extra_df: int = 0
                            ) -> Tuple[float, float, float, int]:
    """t interval of mean(log b) - mean(log a): (centre, low, high, df).

    The run-to-run variance is pooled over both sides' runs (df = na + nb - 2) and, when
    given, over an outside source of same-fabric runs (an A/A archive: its sum of squares
    about its own mean and its degrees of freedom). With no degree of freedom at all the
    interval is (-inf, inf): nothing measured how much runs vary."""
    a = np.asarray(log_a, dtype=np.float64)
    b = np.asarray(log_b, dtype=np.float64)
    centre = float(b.mean() - a.mean())
    ss = float(np.sum((a - a.mean()) ** 2) + np.sum((b - b.mean()) ** 2)) + extra_ss
    df = len(a) + len(b) - 2 + extra_df
    if df < 1:
        return centre, -math.inf, math.inf, 0
    se = math.sqrt(ss / df * (1.0 / len(a) + 1.0 / len(b)))
    half = t_quantile(level, df) * se
    return centre, centre - half, centre + half, df


def quantile_log_se(sorted_values: np.ndarray, q: float, z: float = 1.96) -> float:
    """Standard error of log(q-th quantile) from the distribution-free order-statistic
    interval (binomial, normal approximation): (log x_hi - log x_lo) / (2 z). Samples
    are taken as independent: consecutive iterations that are not make it too narrow,
    which the rules meet with the spread measured between units."""
    n = len(sorted_values)
    if n < 2:
        return math.inf
    p = q / 100.0
    half = z * math.sqrt(n * p * (1.0 - p))
    lo = int(max(0, math.floor(n * p - half) - 1))
    hi = int(min(n - 1, math.ceil(n * p + half)))
    x_lo, x_hi = float(sorted_values[lo]), float(sorted_values[hi])
    if not (x_lo > 0 and x_hi > 0):
        return math.inf
    return (math.log(x_hi) - math.log(x_lo)) / (2.0 * z)
