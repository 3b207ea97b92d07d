"""Resampling of a side's samples by the levels the data has: run > repeat > rank >
block of consecutive iterations (Kalibera & Jones 2013; Saravanan, Berman, Sober 2020;
moving blocks, Kuensch 1989).

A *run* is one result file. A *repeat* is one instance of a case inside a run (a
scenario's ``repeats: N``): repeats share their run's placement, clocks and
background, so they are a level below runs, never runs themselves. A *rank* is one
measuring rank's samples of a repeat, in iteration order.

compare uses the two-sided bootstrap of differences; accept the one-sided interval of
one figure (figure_interval).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from .stats import TAIL_QUANTILES, is_bandwidth, mean_value, tail_value, worse_is_higher_times


@dataclass
class Unit:
    """One rank's samples in one repeat of one run, in the order they were measured."""
    times: np.ndarray   # worse-is-higher times (ns): latency or duration
    nbytes: np.ndarray


Repeat = List[Unit]          # the ranks of one repeat
Run = List[Repeat]           # the repeats of one run
SINGLE_RUN_BLOCKS = 8


def block_length(n: int, single_run: bool = False) -> int:
    """Blocks of consecutive iterations for the block bootstrap: about n^(1/3) long
    (Kuensch 1989; Hall, Horowitz, Jing 1995), at least 1, at most n. With one run and
    one repeat per side nothing above the ranks can be resampled, so the slowest
    structure the run has is used instead: SINGLE_RUN_BLOCKS long blocks per rank (drift
    within the run widens the interval rather than being averaged away)."""
    if single_run:
        return max(1, -(-n // SINGLE_RUN_BLOCKS))
    return max(1, min(n, int(round(n ** (1.0 / 3.0)))))


def rank_units(s: pd.DataFrame, metric: str) -> Repeat:
    """One repeat's samples -> a Unit per measuring rank, sorted by iteration (one numpy
    sort of the whole frame: a pandas sort and groupby of 5 million samples took 20 s)."""
    if not len(s):
        return []
    keys = [s[c].to_numpy() for c in ("t_post_ns", "iter", "rank") if c in s.columns]
    ranks, times = s["rank"].to_numpy(), worse_is_higher_times(s, metric)
    nbytes = s["bytes"].to_numpy(dtype=np.float64)
    if not _in_order(keys):  # files are written in this order: the sort is then skipped
        order = np.lexsort(keys)
        ranks, times, nbytes = ranks[order], times[order], nbytes[order]
    cuts = np.flatnonzero(ranks[1:] != ranks[:-1]) + 1
    return [Unit(t, b) for t, b in zip(np.split(times, cuts), np.split(nbytes, cuts))]


def _in_order(keys: Sequence[np.ndarray]) -> bool:
    """Whether rows are already sorted by keys[-1], then keys[-2], ... (np.lexsort's order)."""
    if len(keys[0]) < 2:
        return True
    ahead = np.zeros(len(keys[0]) - 1, dtype=bool)   # decided: this row is before the next
    for k in reversed(keys):
        step = np.diff(k)
        if np.any(~ahead & (step < 0)):
            return False
        ahead |= step > 0
    return True


def side_units(replicates: Sequence[pd.DataFrame], metric: str) -> List[Repeat]:
    """[replicate][rank] -> Unit (one level above ranks; kept for scripts and pooled)."""
    return [r for r in (rank_units(s, metric) for s in replicates) if r]


def run_units(runs: Sequence[Sequence[pd.DataFrame]], metric: str) -> List[Run]:
    """[run][repeat] sample frames -> [run][repeat][rank] Units (empty ones dropped)."""
    out = []
    for repeats in runs:
        run = [r for r in (rank_units(s, metric) for s in repeats) if r]
        if run:
            out.append(run)
    return out


def _flat_units(units) -> List[Unit]:
    if isinstance(units, Unit):
        return [units]
    return [u for item in units for u in _flat_units(item)]


def pooled(units) -> Tuple[np.ndarray, np.ndarray]:
    """Every sample of a nested list of Units (any depth), times and bytes."""
    flat = _flat_units(units)
    if not flat:
        return np.zeros(0), np.zeros(0)
    return np.concatenate([u.times for u in flat]), np.concatenate([u.nbytes for u in flat])


def tail_values(metric: str, times: np.ndarray, sample_bytes: np.ndarray,
                quantiles: np.ndarray) -> np.ndarray:
    """tail_value for several quantiles at once (the bootstrap's inner loop)."""
    if len(times) == 0:
        return np.full(len(quantiles), np.nan)
    if not is_bandwidth(metric):
        return np.percentile(times, quantiles) / 1e3
    if np.all(sample_bytes == sample_bytes[0]):
        t = np.percentile(times, quantiles)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(t > 0, float(sample_bytes[0]) / t, np.nan)
    return np.array([tail_value(metric, times, sample_bytes, q) for q in quantiles])


def figures_of(metric: str, times: np.ndarray, sample_bytes: np.ndarray,
               stats: Sequence[str]) -> np.ndarray:
    """Tail statistics (one percentile call for all of them) and the mean, in `stats` order."""
    tails = [s for s in stats if s != "mean"]
    values = dict(zip(tails, tail_values(metric, times, sample_bytes, quantiles_of(tails))))
    if "mean" in stats:
        values["mean"] = mean_value(metric, times, sample_bytes)
    return np.array([values[s] for s in stats], dtype=float)


def quantiles_of(stats: Sequence[str]) -> np.ndarray:
    return np.asarray([TAIL_QUANTILES["p99.9" if s == "p999" else s] for s in stats])


class _LaidRepeat:
    """One repeat's ranks laid out once for resampling (not once per draw: at 1,024 ranks
    per-rank calls made `compare` take 90 s): every rank's samples concatenated, with
    each rank's offset, length and block length."""

    def __init__(self, ranks: Repeat, single_run: bool):
        self.n = np.asarray([len(u.times) for u in ranks], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.n)[:-1]]).astype(np.int64)
        self.blocks = np.asarray([block_length(int(k), single_run) for k in self.n], dtype=np.int64)
        self.times = np.concatenate([u.times for u in ranks]) if ranks else np.zeros(0)
        self.nbytes = np.concatenate([u.nbytes for u in ranks]) if ranks else np.zeros(0)


class Laid:
    """A side's runs laid out for resampling: [run][repeat] -> _LaidRepeat."""

    def __init__(self, runs: List[Run], long_blocks: Optional[bool] = None):
        """long_blocks: SINGLE_RUN_BLOCKS blocks per rank (block_length); by default when
        the side is one run of one repeat."""
        single = len(runs) == 1 and len(runs[0]) == 1 if long_blocks is None else long_blocks
        self.runs = [[_LaidRepeat(rep, single) for rep in run] for run in runs]

    def draw(self, rng: np.random.Generator, resample_ranks: bool = True
             ) -> Tuple[np.ndarray, np.ndarray]:
        """One hierarchical draw: runs with replacement, then repeats within each drawn
        run, then ranks within each drawn repeat, then moving blocks within each rank.
        resample_ranks=False keeps every rank once (the ranks are the fabric judged, not
        a sample of ranks): only blocks of iterations are drawn."""
        times_out, bytes_out = [], []
        for r in rng.integers(0, len(self.runs), size=len(self.runs)):
            run = self.runs[r]
            for p in rng.integers(0, len(run), size=len(run)):
                _draw_ranks(run[p], rng, times_out, bytes_out, resample_ranks)
        if not times_out:
            return np.zeros(0), np.zeros(0)
        return np.concatenate(times_out), np.concatenate(bytes_out)


def _draw_ranks(rep: _LaidRepeat, rng: np.random.Generator, times_out: list, bytes_out: list,
                resample_ranks: bool = True):
    """Ranks (drawn with replacement, or each once), then moving blocks of each rank's
    consecutive iterations, each rank cut back to its own length; vectorised over ranks."""
    if len(rep.n) == 0:
        return
    picks = rng.integers(0, len(rep.n), size=len(rep.n)) if resample_ranks else \
        np.arange(len(rep.n))
    n, offsets, blocks = rep.n[picks], rep.offsets[picks], rep.blocks[picks]
    keep = n > 0
    n, offsets, blocks = n[keep], offsets[keep], blocks[keep]
    if not len(n):
        return
    per_rank = -(-n // blocks)                       # blocks drawn for each rank
    owner = np.repeat(np.arange(len(n)), per_rank)   # the rank of each drawn block
    first = np.cumsum(per_rank) - per_rank
    position = np.arange(len(owner)) - first[owner]  # block number within its rank
    starts = offsets[owner] + (rng.random(len(owner)) * (n - blocks + 1)[owner]).astype(np.int64)
    width = int(blocks.max())
    j = np.arange(width)[None, :]
    idx = starts[:, None] + j
    valid = (j < blocks[owner][:, None]) & (position[:, None] * blocks[owner][:, None] + j
                                            < n[owner][:, None])
    idx = idx[valid]
    times_out.append(rep.times[idx])
    bytes_out.append(rep.nbytes[idx])


def thin(runs: List[Run], max_samples: int) -> List[Run]:
    """Every rank thinned by one fixed stride (keeping order) when the side has more than
    max_samples samples: the interval only gets wider."""
    total = sum(len(u.times) for u in _flat_units(runs))
    if total <= max_samples:
        return runs
    stride = -(-total // max_samples)
    return [[[Unit(u.times[::stride], u.nbytes[::stride]) for u in rep] for rep in run]
            for run in runs]


def bootstrap_diffs(metric: str, a: List[Run], b: List[Run], stats: Sequence[str],
                    resamples: int = 400, seed: int = 12345, level: float = 0.95,
                    max_samples: int = 20000) -> List[Tuple[float, float, float]]:
    """Percentile intervals of figure(b) - figure(a) for each statistic, by hierarchical
    bootstrap (Laid.draw). The point estimate is the figure on all of a side's samples
    pooled. Fixed seed: same files, same answer. Returns [(diff, low, high)]."""
    nan = (float("nan"),) * 3
    if not a or not b:
        return [nan for _ in stats]
    qs = quantiles_of(stats)
    point = tail_values(metric, *pooled(b), qs) - tail_values(metric, *pooled(a), qs)
    rng = np.random.default_rng(seed)
    laid_a, laid_b = Laid(thin(a, max_samples)), Laid(thin(b, max_samples))
    diffs = np.empty((resamples, len(qs)))
    for i in range(resamples):
        diffs[i] = (tail_values(metric, *laid_b.draw(rng), qs)
                    - tail_values(metric, *laid_a.draw(rng), qs))
    alpha = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore"):
        low = np.nanpercentile(diffs, 100 * alpha, axis=0)
        high = np.nanpercentile(diffs, 100 * (1 - alpha), axis=0)
    return [(float(p), float(lo), float(hi)) for p, lo, hi in zip(point, low, high)]


def figure_interval(metric: str, runs: List[Run], stats: Sequence[str], resamples: int = 200,
                    seed: int = 12345, level: float = 0.95, max_samples: int = 20000,
                    resample_ranks: bool = False) -> List[Tuple[float, float, float]]:
    """(figure, low, high) of each tail statistic of one side: the bootstrap's percentile
    interval (two-sided `level`; each bound is one-sided at (1 + level) / 2). By default
    every rank is kept once and blocks of its iterations are drawn: what is uncertain
    about a fabric's figure is how its ranks' samples fell, not which ranks it has."""
    point = figures_of(metric, *pooled(runs), stats)
    if not runs:
        return [(float("nan"),) * 3 for _ in stats]
    rng = np.random.default_rng(seed)
    laid = Laid(thin(runs, max_samples))
    draws = np.array([figures_of(metric, *laid.draw(rng, resample_ranks), stats)
                      for _ in range(resamples)])
    alpha = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore"):
        low = np.nanpercentile(draws, 100 * alpha, axis=0)
        high = np.nanpercentile(draws, 100 * (1 - alpha), axis=0)
    return [(float(p), float(lo), float(hi)) for p, lo, hi in zip(point, low, high)]


def bootstrap_quantile_diffs(a: np.ndarray, b: np.ndarray, quantiles: Sequence[float],
                             resamples: int = 400, max_samples: int = 20000, seed: int = 12345,
                             level: float = 0.95) -> List[Tuple[float, float, float]]:
    """Plain i.i.d. bootstrap of percentile_q(b) - percentile_q(a) (kept for scripts).

    compare does not use it: samples of one run are not independent.
    """
    rng = np.random.default_rng(seed)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if len(a) == 0 or len(b) == 0:
        return [(float("nan"),) * 3 for _ in quantiles]
    qs = np.asarray(list(quantiles), dtype=np.float64)
    point = np.percentile(b, qs) - np.percentile(a, qs)
    if len(a) > max_samples:
        a = rng.choice(a, max_samples, replace=False)
    if len(b) > max_samples:
        b = rng.choice(b, max_samples, replace=False)
    chunk = max(1, min(resamples, 2_000_000 // max(len(a), len(b))))
    diffs, done = [], 0
    while done < resamples:
        n = min(chunk, resamples - done)
        ra = a[rng.integers(0, len(a), size=(n, len(a)))]
        rb = b[rng.integers(0, len(b), size=(n, len(b)))]
        diffs.append(np.percentile(rb, qs, axis=1) - np.percentile(ra, qs, axis=1))
        done += n
    d = np.concatenate(diffs, axis=1)
    alpha = (1.0 - level) / 2.0
    low = np.percentile(d, 100 * alpha, axis=1)
    high = np.percentile(d, 100 * (1 - alpha), axis=1)
    return [(float(p), float(lo), float(hi)) for p, lo, hi in zip(point, low, high)]
