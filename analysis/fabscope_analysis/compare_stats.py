"""compare's decision for one figure: is side B's figure different from side A's?

Levels nest run > repeat > rank > block of iterations (resampling.py). Two sources
of interval, the wider one wins:

- the hierarchical bootstrap over every level the data has (within-run variation, and
  run-to-run variation when a side has several runs);
- a t interval on the runs' own log figures (Kalibera & Jones 2013: t at the top
  level when runs are few), with the run-to-run variance pooled over both sides' runs
  and, when given, over an A/A archive of same-fabric runs (aa_log_figures).

With one run per side and no archive nothing measured how much runs differ: a
difference the within-run interval sees is `cannot tell (one run per side)`, never
`better` or `worse`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .inference import log_difference_interval
from .resampling import Run, bootstrap_diffs, pooled, quantiles_of, tail_values
from .stats import TAIL_QUANTILES, is_bandwidth

DEFAULT_NEGLIGIBLE = 0.05
MIN_TAIL_SAMPLES = 10  # fewer samples beyond a percentile than this: the tail is a guess
ONE_RUN = "cannot tell (one run per side)"


@dataclass
class ArchiveSpread:
    """Run-to-run spread of one figure from A/A runs: sum of squares of the runs' log
    figures about their mean, its degrees of freedom (runs - 1), and where it is from."""
    ss: float
    df: int
    source: str


@dataclass
class FigureDiff:
    stat: str
    a_value: float
    b_value: float
    diff: float
    low: float
    high: float
    method: str          # what the interval holds, in words
    verdict: str
    thin_tail: bool
    runs_a: int
    runs_b: int
    n_a: int
    n_b: int


def run_log_figures(metric: str, runs: List[Run], stats: Sequence[str]) -> np.ndarray:
    """[run][stat] log of each run's own figure (its repeats pooled); NaN where not > 0."""
    qs = quantiles_of(stats)
    values = np.array([tail_values(metric, *pooled(run), qs) for run in runs],
                      dtype=float).reshape(len(runs), len(qs))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(values > 0, np.log(values), np.nan)


def archive_spread(log_figures: Sequence[float], source: str) -> Optional[ArchiveSpread]:
    v = np.asarray([x for x in log_figures if np.isfinite(x)], dtype=float)
    if len(v) < 2:
        return None
    return ArchiveSpread(float(np.sum((v - v.mean()) ** 2)), len(v) - 1, source)


def _t_interval(la: np.ndarray, lb: np.ndarray, level: float, archive: Optional[ArchiveSpread]
                ) -> Tuple[float, float, int]:
    """(low, high, df) of the figure difference from the t interval on log figures,
    mapped back to a difference around side A's level; (-inf, inf, 0) with no df."""
    if not (np.all(np.isfinite(la)) and np.all(np.isfinite(lb))) or not len(la) or not len(lb):
        return -math.inf, math.inf, 0
    ss, df_extra = (archive.ss, archive.df) if archive else (0.0, 0)
    _, lo, hi, df = log_difference_interval(la, lb, level, ss, df_extra)
    if df == 0:
        return -math.inf, math.inf, 0
    level_a = math.exp(float(np.mean(la)))
    return level_a * (math.exp(lo) - 1.0), level_a * (math.exp(hi) - 1.0), df


def difference_verdict(metric: str, low: float, high: float, n_a: int, n_b: int,
                       a_val: float, b_val: float, negligible: float,
                       thin_tail: bool = False, run_to_run_known: bool = True) -> str:
    """no samples | n/a | no clear difference | cannot tell (one run per side) |
    negligible (<X%) | better | worse.

    A thin tail (fewer than MIN_TAIL_SAMPLES samples beyond the percentile) is never
    called a difference. An interval that excludes 0 is a difference only when
    run-to-run variation is in it (run_to_run_known); otherwise cannot tell. A real
    difference smaller than ``negligible`` (relative) is 'negligible'.
    """
    if n_a == 0 or n_b == 0:
        return "no samples"
    if np.isnan(low) or np.isnan(high):
        return "n/a"
    if thin_tail or low <= 0.0 <= high:
        return "no clear difference"
    if not run_to_run_known:
        return ONE_RUN
    if a_val and abs(b_val / a_val - 1.0) < negligible:
        return f"negligible (<{100 * negligible:g}%)"
    higher = low > 0
    better = higher if is_bandwidth(metric) else not higher
    return "better" if better else "worse"


def compare_figures(metric: str, a: List[Run], b: List[Run], stats: Sequence[str],
                    resamples: int, seed: int, negligible: float = DEFAULT_NEGLIGIBLE,
                    archive: Optional[Dict[str, ArchiveSpread]] = None,
                    level: float = 0.95) -> List[FigureDiff]:
    """One FigureDiff per statistic of B against A (module docstring for the method)."""
    boot = bootstrap_diffs(metric, a, b, stats, resamples=resamples, seed=seed, level=level)
    qs = quantiles_of(stats)
    pooled_a, pooled_b = pooled(a), pooled(b)
    n_a, n_b = len(pooled_a[0]), len(pooled_b[0])
    a_vals = tail_values(metric, *pooled_a, qs)
    b_vals = tail_values(metric, *pooled_b, qs)
    la, lb = run_log_figures(metric, a, stats), run_log_figures(metric, b, stats)
    out = []
    for i, stat in enumerate(stats):
        diff, low, high = boot[i]
        spread = (archive or {}).get(stat)
        t_low, t_high, df = _t_interval(la[:, i], lb[:, i], level, spread)
        known = df > 0
        if known:
            low, high = min(low, t_low), max(high, t_high)
        method = _method_text(len(a), len(b), df, spread)
        tail_n = min(n_a, n_b) * (1 - TAIL_QUANTILES[stat] / 100.0)
        thin = stat != "p50" and tail_n < MIN_TAIL_SAMPLES
        out.append(FigureDiff(
            stat, float(a_vals[i]), float(b_vals[i]), diff, low, high, method,
            difference_verdict(metric, low, high, n_a, n_b, a_vals[i], b_vals[i], negligible,
                               thin, known), thin, len(a), len(b), n_a, n_b))
    return out


def _method_text(runs_a: int, runs_b: int, df: int, spread: Optional[ArchiveSpread]) -> str:
    if df == 0:
        return ("hierarchical bootstrap within each run only (ranks, blocks of iterations): "
                "run-to-run variation unknown")
    parts = [f"hierarchical bootstrap and t on log run figures, {df} df"]
    if spread is not None:
        parts.append(f"run-to-run spread pooled with {spread.df + 1} A/A runs ({spread.source})")
    return "; ".join(parts)


def verdict_text(row) -> str:
    return row["verdict"] + (" (thin tail)" if row["thin_tail"] else "")


def tally(frame) -> Dict[str, int]:
    """How many rows got each verdict class: worse, better, negligible, cannot tell,
    no clear difference."""
    out = {"worse": 0, "better": 0, "negligible": 0, "cannot tell": 0, "no clear difference": 0,
           "other": 0}
    for v in (frame["verdict"] if not frame.empty else []):
        key = "negligible" if str(v).startswith("negligible") else \
            "cannot tell" if str(v).startswith("cannot tell") else v
        out[key if key in out else "other"] += 1
    return out


def headline(frame) -> str:
    t = tally(frame)
    return (f"compare: {t['worse']} worse, {t['better']} better, {t['negligible']} negligible, "
            f"{t['cannot tell']} cannot tell (one run per side), "
            f"{t['no clear difference']} no clear difference (of {len(frame)} rows)")
