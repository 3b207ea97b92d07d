"""compare's decision for one figure: is side B's figure different from side A's?

Levels nest run > repeat > rank > block of iterations (resampling.py). What decides is a
run-level model of each figure's log (Kalibera & Jones 2013: t at the top level when
runs are few):

    log figure of run j = side's level + run-to-run variation u_j + within-run error w_j

- w_j's variance v_j is measured inside run j: a block bootstrap of each rank's
  consecutive iterations, every rank and repeat kept (the ranks are the same fabric on
  both sides: what varies within a run is how their iterations fell);
- the run-to-run variance is the pooled variance of the runs' log figures about their
  side's mean (it holds u and w), over both sides' runs (df = runs - 2) and, when given,
  an A/A archive of same-fabric runs. Pooled, not Welch: compare's null hypothesis is
  "one fabric", under which both sides' runs have one distribution;
- that variance is never taken below the within-run variance the runs themselves show
  (mean v_j, many bootstrap df): the larger estimate is used, with its own df.

The interval is the t interval of mean log B - mean log A, mapped back to a difference
of figures. The t assumes normally spread run levels; runs on two levels (placement or
routing fixed at start) break that. Under "one fabric" the runs are exchangeable whatever
their distribution, so where the splits of the runs into the two sides can reach the
level (4 vs 4: 70 splits, smallest p 2/70; 3 vs 3: 20 splits, never below 0.1) a
difference also needs the permutation test of the runs' t; else `cannot tell (runs'
permutation test)`. With one run per side and no archive nothing measured how much runs differ:
the interval is the hierarchical bootstrap's within both runs, and a difference it sees is
`cannot tell (one run per side)`, never `better` or `worse`.

A comparison has many rows (cases x sizes x p50/p99/p99.9), each its own 95 % test: on one
fabric about 5 % of them would each be called different by chance. So a difference also
has to hold over all the rows of its comparison (rows_false_differences): each row's p
(its run-level t and, where it applies, the runs' permutation test) goes through one
Benjamini-Hochberg over the comparison's testable rows at 1 - level. On one fabric (A/A)
every difference is false and the chance of any among all rows is then at most 5 %
(rows share runs: positively dependent, where BH holds); on two fabrics at most 5 % of
the rows called different are expected false. A row whose own interval excludes 0 but
that fails it is `cannot tell (over all N rows: Benjamini-Hochberg)`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from scipy.stats import t as student_t

from .inference import benjamini_hochberg, t_quantile
from .resampling import Laid, Run, bootstrap_diffs, pooled, quantiles_of, tail_values
from .stats import TAIL_QUANTILES, is_bandwidth

DEFAULT_NEGLIGIBLE = 0.05
MIN_TAIL_SAMPLES = 10  # fewer samples beyond a percentile than this: the tail is a guess
ONE_RUN = "cannot tell (one run per side)"
RUNS_UNSURE = "cannot tell (runs' permutation test)"
DIFFERENT = ("better", "worse", "negligible")  # verdicts that say the figures differ
PERMUTATION_DRAWS = 2000  # splits of the runs drawn at random when there are more than this


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
    p: float = math.nan  # two-sided p of "no difference"; NaN: the row cannot be called different


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


def within_run_log_variance(metric: str, run: Run, stats: Sequence[str], resamples: int,
                            rng: np.random.Generator) -> np.ndarray:
    """[stat] variance of the run's log figure from a block bootstrap of each rank's
    consecutive iterations, every repeat and rank kept once (NaN when not measurable)."""
    qs = quantiles_of(stats)
    laid = Laid([run], long_blocks=False)
    draws = np.array([tail_values(metric, *laid.draw(rng, resample_ranks=False), qs)
                      for _ in range(max(resamples, 2))], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(draws > 0, np.log(draws), np.nan)
    out = np.full(logs.shape[1], np.nan)
    for i in range(logs.shape[1]):
        column = logs[np.isfinite(logs[:, i]), i]
        if len(column) >= 2:  # no figure in most draws (too few samples): not measurable
            out[i] = float(np.var(column, ddof=1))
    return out


@dataclass
class RunModel:
    """The run-level model's interval of one figure's log difference (B - A)."""
    centre: float
    low: float
    high: float
    df: float           # 0: nothing measured run-to-run variation
    within_bound: bool  # the within-run variance was the larger estimate
    p: float = math.nan  # two-sided p of the t: centre / its standard error at df



def run_level_interval(la: np.ndarray, lb: np.ndarray, va: np.ndarray, vb: np.ndarray,
                       level: float, archive: Optional[ArchiveSpread], within_df: int
                       ) -> RunModel:
    """t interval of mean(lb) - mean(la) under the module's run-level model: la, lb the
    runs' log figures, va, vb their within-run variances (within_df: the bootstrap draws
    behind each, less one)."""
    nan = RunModel(math.nan, -math.inf, math.inf, 0, False)
    if not (len(la) and len(lb) and np.all(np.isfinite(la)) and np.all(np.isfinite(lb))):
        return nan
    centre = float(np.mean(lb) - np.mean(la))
    ss = float(np.sum((la - la.mean()) ** 2) + np.sum((lb - lb.mean()) ** 2))
    df = len(la) + len(lb) - 2
    if archive is not None:
        ss, df = ss + archive.ss, df + archive.df
    if df < 1:
        return RunModel(centre, -math.inf, math.inf, 0, False)
    between = ss / df
    within = np.concatenate([va, vb])
    within = float(np.mean(within)) if np.all(np.isfinite(within)) else 0.0
    within_bound = within > between
    variance, used_df = (within, within_df) if within_bound else (between, df)
    se = math.sqrt(variance * (1.0 / len(la) + 1.0 / len(lb)))
    half = t_quantile(level, used_df) * se
    p = float(2.0 * student_t.sf(abs(centre) / se, used_df)) if se > 0 else float(centre == 0)
    return RunModel(centre, centre - half, centre + half, used_df, within_bound, p)


def _run_level_figures(la: np.ndarray, lb: np.ndarray) -> Tuple[float, float]:
    """Each side's figure as the run-level model sees it: the geometric mean of its runs'
    own figures. The interval is built around their log difference, so the difference
    shown (B - A of these) lies inside it; the figure of all samples pooled would let one
    run's tail outweigh the others' and can fall outside it."""
    return math.exp(float(np.mean(la))), math.exp(float(np.mean(lb)))


def _figure_interval(model: RunModel, la: np.ndarray) -> Tuple[float, float]:
    """The log interval mapped back to a difference of figures around side A's level."""
    level_a = math.exp(float(np.mean(la)))
    return level_a * math.expm1(model.low), level_a * math.expm1(model.high)


def permutation_splits(runs_a: int, runs_b: int) -> int:
    """How many ways the runs of both sides split into sides of these sizes."""
    return math.comb(runs_a + runs_b, runs_b)


def permutation_reaches(runs_a: int, runs_b: int, level: float) -> bool:
    """Whether the runs' permutation test can reach `level` at all: its smallest p is the
    share of splits as extreme as the most extreme one (it and, at equal sizes, its
    mirror). 3 vs 3 runs: 2 of 20 splits, p >= 0.1, never below 0.05."""
    if runs_a < 2 or runs_b < 2:
        return False
    return (2 if runs_a == runs_b else 1) / permutation_splits(runs_a, runs_b) <= 1.0 - level


def _split_abs_t(x: np.ndarray, in_b: np.ndarray) -> np.ndarray:
    """|pooled t| of mean(B) - mean(A) for each split (in_b: [split][run] True on side B)."""
    n, kb = len(x), int(in_b[0].sum())
    ka = n - kb
    sum_b, sq_b = in_b @ x, in_b @ (x * x)
    mean_b, mean_a = sum_b / kb, (x.sum() - sum_b) / ka
    ss = (sq_b - kb * mean_b ** 2) + (float(x @ x) - sq_b - ka * mean_a ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(mean_b - mean_a) / np.sqrt(np.maximum(ss, 0.0) / (n - 2) * (1 / ka + 1 / kb))
    return np.nan_to_num(t, nan=0.0, posinf=np.inf)


def runs_permutation_p(la: np.ndarray, lb: np.ndarray, rng: np.random.Generator) -> float:
    """Two-sided permutation p of the runs' log figures: the share of the splits of all
    runs into sides of these sizes whose |pooled t| is at least the observed one (every
    split, or PERMUTATION_DRAWS random ones and the observed when there are more). Under
    one fabric the runs are exchangeable whatever the distribution of their levels (two
    levels, heavy tails), so this p holds without the t's normal run levels."""
    x = np.concatenate([la, lb]).astype(float)
    n, kb = len(x), len(lb)
    if permutation_splits(len(la), kb) <= PERMUTATION_DRAWS:
        in_b = np.zeros((permutation_splits(len(la), kb), n))
        for i, chosen in enumerate(itertools.combinations(range(n), kb)):
            in_b[i, list(chosen)] = 1.0
        drawn = 0
    else:
        picks = np.argsort(rng.random((PERMUTATION_DRAWS, n)), axis=1)[:, :kb]
        in_b = np.zeros((PERMUTATION_DRAWS + 1, n))
        np.put_along_axis(in_b[1:], picks, 1.0, axis=1)
        drawn = 1
    observed = np.r_[np.zeros(len(la)), np.ones(kb)]
    if drawn:
        in_b[0] = observed
    t_obs = float(_split_abs_t(x, observed[None, :])[0])
    t = _split_abs_t(x, in_b)
    return float(np.mean(t >= t_obs * (1.0 - 1e-9)))


def difference_verdict(metric: str, low: float, high: float, n_a: int, n_b: int,
                       a_val: float, b_val: float, negligible: float,
                       thin_tail: bool = False, run_to_run_known: bool = True,
                       runs_confirm: bool = True) -> str:
    """no samples | n/a | no clear difference | cannot tell (one run per side) |
    cannot tell (runs' permutation test) | negligible (<X%) | better | worse.

    A thin tail (fewer than MIN_TAIL_SAMPLES samples beyond the percentile) is never
    called a difference. An interval that excludes 0 is a difference only when
    run-to-run variation is in it (run_to_run_known) and the runs' permutation test,
    where it could tell, agrees (runs_confirm); otherwise cannot tell. A real
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
    if not runs_confirm:
        return RUNS_UNSURE
    # a factor either way (|log b/a| < log(1 + X)), not |b/a - 1| < X: the verdict of A
    # against B mirrors B against A, whichever side is the reference
    if a_val and b_val and abs(math.log(b_val / a_val)) < math.log1p(negligible):
        return f"negligible (<{100 * negligible:g}%)"
    higher = low > 0
    better = higher if is_bandwidth(metric) else not higher
    return "better" if better else "worse"


def compare_figures(metric: str, a: List[Run], b: List[Run], stats: Sequence[str],
                    resamples: int, seed: int, negligible: float = DEFAULT_NEGLIGIBLE,
                    archive: Optional[Dict[str, ArchiveSpread]] = None,
                    level: float = 0.95) -> List[FigureDiff]:
    """One FigureDiff per statistic of B against A (module docstring for the method)."""
    qs = quantiles_of(stats)
    pooled_a, pooled_b = pooled(a), pooled(b)
    n_a, n_b = len(pooled_a[0]), len(pooled_b[0])
    a_vals = tail_values(metric, *pooled_a, qs)
    b_vals = tail_values(metric, *pooled_b, qs)
    la, lb = run_log_figures(metric, a, stats), run_log_figures(metric, b, stats)
    rng = np.random.default_rng(seed)
    va = np.array([within_run_log_variance(metric, run, stats, resamples, rng) for run in a])
    vb = np.array([within_run_log_variance(metric, run, stats, resamples, rng) for run in b])
    one_run = len(a) == 1 and len(b) == 1 and not any((archive or {}).values())
    boot = bootstrap_diffs(metric, a, b, stats, resamples=resamples, seed=seed, level=level) \
        if one_run and n_a and n_b else None
    perm, out = np.random.default_rng([seed, 1]), []
    for i, stat in enumerate(stats):
        spread = (archive or {}).get(stat)
        model = run_level_interval(la[:, i], lb[:, i], va[:, i], vb[:, i], level, spread,
                                   max(resamples, 2) - 1) \
            if n_a and n_b else RunModel(math.nan, -math.inf, math.inf, 0, False)
        known = model.df > 0
        value_a, value_b = float(a_vals[i]), float(b_vals[i])
        if boot is not None:
            _, low, high = boot[i]
        else:
            low, high = _figure_interval(model, la[:, i]) if known else (-math.inf, math.inf)
            if known:
                value_a, value_b = _run_level_figures(la[:, i], lb[:, i])
        # in exact fractions: (1 - 99.9 / 100) x 10,000 in floats is 9.99999999999989
        tail_n = min(n_a, n_b) * (100 - Fraction(str(TAIL_QUANTILES[stat]))) / 100
        thin = stat != "p50" and tail_n < MIN_TAIL_SAMPLES
        p = model.p if known and boot is None and not thin and n_a and n_b else math.nan
        confirm = True
        if known and (low > 0 or high < 0) and permutation_reaches(len(a), len(b), level):
            p_runs = runs_permutation_p(la[:, i], lb[:, i], perm)
            confirm, p = p_runs <= 1 - level, max(p, p_runs)
        out.append(FigureDiff(
            stat, value_a, value_b, value_b - value_a, low, high,
            _method_text(len(a), len(b), model, spread, level),
            difference_verdict(metric, low, high, n_a, n_b, value_a, value_b, negligible,
                               thin, known, confirm), thin, len(a), len(b), n_a, n_b, p))
    return out


def rows_method(tested: int, rows: int, level: float = 0.95) -> str:
    """The per-comparison false-difference rate of rows_false_differences, in words."""
    q = 100 * (1 - level)
    if tested == 0:
        return (f"false differences over all {rows} rows: none can be called different "
                "(run-to-run variation unknown, or thin tails), so none is false")
    return (f"false differences over all {rows} rows: Benjamini-Hochberg at {q:g} % over the "
            f"{tested} rows that can be called different (a row is better, worse or negligible "
            f"only when it passes); on one fabric the chance of any false difference among them "
            f"is at most {q:g} %, else at most {q:g} % of the rows called different are expected "
            "false (rows share runs: positively dependent)")


def rows_false_differences(p_values: Sequence[float], verdicts: Sequence[str],
                           level: float = 0.95) -> Tuple[List[str], np.ndarray, str]:
    """One comparison's rows together: Benjamini-Hochberg at 1 - level over the rows with a
    p (NaN: a row that cannot be called different, outside the family). A row called
    different on its own that fails it becomes `cannot tell (over all N rows: ...)`.
    Returns (verdicts, adjusted p per row (NaN outside the family), the method in words)."""
    p = np.asarray(p_values, dtype=float)
    tested = np.flatnonzero(np.isfinite(p))
    adjusted = np.full(len(p), np.nan)
    out = list(verdicts)
    if len(tested):
        rejected, adj = benjamini_hochberg(p[tested], 1 - level)
        adjusted[tested] = adj
        for i, ok in zip(tested, rejected):
            if not ok and str(out[i]).startswith(DIFFERENT):
                out[i] = f"cannot tell (over all {len(p)} rows: Benjamini-Hochberg)"
    return out, adjusted, rows_method(len(tested), len(p), level)


def _method_text(runs_a: int, runs_b: int, model: RunModel, spread: Optional[ArchiveSpread],
                 level: float) -> str:
    if model.df == 0:
        return ("hierarchical bootstrap within each run only (ranks, blocks of iterations): "
                "run-to-run variation unknown")
    parts = [f"run-level t on log figures, {runs_a} vs {runs_b} runs"]
    if model.within_bound:
        parts.append("within-run variance (block bootstrap) larger than the runs' spread")
    else:
        parts.append(f"run-to-run variance pooled over the runs, {model.df:g} df")
    if spread is not None:
        parts.append(f"with {spread.df + 1} A/A runs ({spread.source})")
    splits = permutation_splits(runs_a, runs_b)
    if permutation_reaches(runs_a, runs_b, level):
        parts.append(f"a difference also needs the runs' permutation test ({splits} splits"
                     + (f", {PERMUTATION_DRAWS} drawn" if splits > PERMUTATION_DRAWS else "")
                     + "), which holds whatever the run levels' distribution")
    else:
        parts.append(f"too few runs for a permutation test ({splits} splits): "
                     "the t assumes normally spread run levels")
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
            f"{t['cannot tell']} cannot tell, "
            f"{t['no clear difference']} no clear difference (of {len(frame)} rows)")
