"""Statistics over raw samples: percentiles, per-rank/per-pair tails, impact, fairness.

Conventions (same as the file's own attributes, docs/file-format.md):
- a latency sample is (t_done_ns - t_post_ns) / sample_divisor;
- a bandwidth sample is bytes / (t_done_ns - t_post_ns) in GB/s (bytes per ns);
- percentiles are linear-interpolated (numpy.percentile);
- for bandwidth the "p99" is the slow tail: bytes / (p99 of the sample times),
  i.e. 99% of the samples were at least this fast; "worst" is the slowest sample.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
import pandas as pd

from .reader import FLAG_DATA_CHECK_FAILED, TestInstance

TAIL_QUANTILES = {"p50": 50.0, "p99": 99.0, "p99.9": 99.9}


def is_bandwidth(metric: str) -> bool:
    return str(metric) == "bandwidth"


def unit_of(metric: str) -> str:
    return "GB/s" if is_bandwidth(metric) else "us"


def with_derived(samples: pd.DataFrame, divisor: int) -> pd.DataFrame:
    """Add duration_ns, latency_ns (after the divisor) and gbps columns."""
    s = samples.copy()
    duration = (s["t_done_ns"].astype("int64") - s["t_post_ns"].astype("int64")).astype("float64")
    s["duration_ns"] = duration
    s["latency_ns"] = duration / max(int(divisor), 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        s["gbps"] = np.where(duration > 0, s["bytes"].astype("float64") / duration, np.nan)
    return s


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


def tail_value(metric: str, times_ns: np.ndarray, sample_bytes: np.ndarray, q: float) -> float:
    """The q-th tail percentile in display units: us for latency, GB/s for bandwidth.

    times_ns are latencies (latency metric) or durations (bandwidth metric).
    """
    if len(times_ns) == 0:
        return float("nan")
    if not is_bandwidth(metric):
        return _pct(times_ns, q) / 1e3
    if len(sample_bytes) and np.all(sample_bytes == sample_bytes[0]):
        t = _pct(times_ns, q)
        return float(sample_bytes[0]) / t if t > 0 else float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        gbps = sample_bytes / times_ns
    return _pct(gbps[np.isfinite(gbps)], 100.0 - q)


def mean_value(metric: str, times_ns: np.ndarray, sample_bytes: np.ndarray) -> float:
    """Mean latency in us, or total bytes / total time in GB/s."""
    if len(times_ns) == 0:
        return float("nan")
    if not is_bandwidth(metric):
        return float(np.mean(times_ns)) / 1e3
    total = float(np.sum(times_ns))
    return float(np.sum(sample_bytes)) / total if total > 0 else float("nan")


def worst_value(metric: str, times_ns: np.ndarray, sample_bytes: np.ndarray) -> float:
    if len(times_ns) == 0:
        return float("nan")
    if not is_bandwidth(metric):
        return float(np.max(times_ns)) / 1e3
    with np.errstate(divide="ignore", invalid="ignore"):
        gbps = sample_bytes / times_ns
    gbps = gbps[np.isfinite(gbps)]
    return float(np.min(gbps)) if len(gbps) else float("nan")


def worse_is_higher_times(s: pd.DataFrame, metric: str) -> np.ndarray:
    """The per-sample quantity whose high values are bad: latency or duration (ns)."""
    col = "duration_ns" if is_bandwidth(metric) else "latency_ns"
    return s[col].to_numpy(dtype=np.float64)


@dataclass
class InstanceStats:
    index: int
    metric: str
    n_samples: int
    p50: float
    p99: float
    p999: float
    worst: float
    mean: float
    flagged_data: int
    rank_tails: pd.DataFrame  # rank, samples, p50, p99 (display units), p99_time_ns
    stragglers: List[int] = field(default_factory=list)
    straggler_ratio: float = 2.0

    @property
    def unit(self) -> str:
        return unit_of(self.metric)

    def value(self, key: str) -> float:
        return {"p50": self.p50, "p99": self.p99, "p99.9": self.p999, "p999": self.p999,
                "worst": self.worst, "max": self.worst, "mean": self.mean}[key]


def group_order(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The permutation that sorts by integer key, then by value within a key, as
    np.lexsort((values, keys)) does but from one float sort (several times faster at
    millions of samples): key + the value scaled into [0, 1). Values closer than about
    1e-9 of their range may swap, which moves no median or percentile by more than that."""
    if not len(keys):
        return np.zeros(0, dtype=np.int64)
    dense = keys - keys.min()
    if dense.max() >= 2 ** 20:
        _, dense = np.unique(keys, return_inverse=True)
    low, span = float(values.min()), float(values.max() - values.min())
    if dense.max() >= 2 ** 20 or not np.isfinite(span):
        return np.lexsort((values, keys))  # too many keys for the precision: exact sort
    fraction = (values - low) / (span * (1.0 + 1e-12)) if span > 0 else np.zeros(len(values))
    return np.argsort(dense + fraction, kind="quicksort")


def _grouped_percentile(sorted_values: np.ndarray, starts: np.ndarray, counts: np.ndarray,
                        q: float) -> np.ndarray:
    """numpy.percentile's linear interpolation within each group of an array sorted
    group by group (groups start at ``starts``, ``counts`` long, none empty)."""
    pos = q / 100.0 * (counts - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, counts - 1)
    low, high = sorted_values[starts + lo], sorted_values[starts + hi]
    return low + (high - low) * (pos - lo)


def rank_tails(s: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per measuring rank: sample count, p50 and p99 in display units, p99 time in ns.

    One sort for all ranks (a percentile call per rank took minutes at
    thousands of ranks); the same numbers as tail_value per rank."""
    columns = ["rank", "samples", "p50", "p99", "p99_time_ns"]
    if not len(s):
        return pd.DataFrame(columns=columns)
    times = worse_is_higher_times(s, metric)
    ranks = s["rank"].to_numpy(dtype=np.int64)
    b = s["bytes"].to_numpy(dtype=np.float64)
    order = group_order(ranks, times)
    t, r, b = times[order], ranks[order], b[order]
    first = np.r_[True, r[1:] != r[:-1]]
    starts = np.flatnonzero(first)
    counts = np.diff(np.r_[starts, len(r)])
    p50_t, p99_t = (_grouped_percentile(t, starts, counts, q) for q in (50.0, 99.0))
    if not is_bandwidth(metric):
        p50, p99 = p50_t / 1e3, p99_t / 1e3
    elif np.all(b == b[starts].repeat(counts)):  # one message size per rank: bytes / time
        with np.errstate(divide="ignore", invalid="ignore"):
            p50 = np.where(p50_t > 0, b[starts] / p50_t, np.nan)
            p99 = np.where(p99_t > 0, b[starts] / p99_t, np.nan)
    else:  # mixed sizes within a rank: per rank, as tail_value does
        p50 = np.array([tail_value(metric, t[a:a + n], b[a:a + n], 50.0) for a, n in zip(starts, counts)])
        p99 = np.array([tail_value(metric, t[a:a + n], b[a:a + n], 99.0) for a, n in zip(starts, counts)])
    return pd.DataFrame({"rank": r[starts].astype(int), "samples": counts.astype(int), "p50": p50,
                         "p99": p99, "p99_time_ns": p99_t}, columns=columns)


def find_stragglers(tails: pd.DataFrame, ratio: float = 2.0) -> List[int]:
    """Ranks whose p99 time exceeds ratio x the median of the ranks' p99 times."""
    if len(tails) < 2:
        return []
    median = float(np.median(tails["p99_time_ns"]))
    if not median > 0:
        return []
    return [int(r) for r, t in zip(tails["rank"], tails["p99_time_ns"]) if t > ratio * median]


def instance_stats(inst: TestInstance, samples: Optional[pd.DataFrame] = None,
                   straggler_ratio: float = 2.0) -> InstanceStats:
    if samples is None:
        samples = with_derived(inst.samples(), inst.sample_divisor)
    metric = inst.metric
    times = worse_is_higher_times(samples, metric)
    b = samples["bytes"].to_numpy(dtype=np.float64)
    flags = samples["flags"].to_numpy(dtype=np.int64) if len(samples) else np.zeros(0, np.int64)
    tails = rank_tails(samples, metric)
    return InstanceStats(
        index=inst.index, metric=metric, n_samples=len(samples),
        p50=figure_value(metric, "p50", times, b), p99=figure_value(metric, "p99", times, b),
        p999=figure_value(metric, "p99.9", times, b), worst=figure_value(metric, "worst", times, b),
        mean=figure_value(metric, "mean", times, b),
        flagged_data=int(np.count_nonzero(flags & FLAG_DATA_CHECK_FAILED)),
        rank_tails=tails, stragglers=find_stragglers(tails, straggler_ratio),
        straggler_ratio=straggler_ratio)


def impact_factor(metric: str, quiet: float, congested: float) -> float:
    """>1 is always worse: congested/quiet for latency, quiet/congested for bandwidth."""
    if not (np.isfinite(quiet) and np.isfinite(congested)) or quiet <= 0 or congested <= 0:
        return float("nan")
    return quiet / congested if is_bandwidth(metric) else congested / quiet


def pair_values(s: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per directed pair (rank -> peer): samples and median latency (us) or GB/s."""
    s = s[s["peer"] >= 0]
    rows = []
    for (rank, peer), group in s.groupby(["rank", "peer"], sort=True):
        times = worse_is_higher_times(group, metric)
        b = group["bytes"].to_numpy(dtype=np.float64)
        rows.append({"rank": int(rank), "peer": int(peer), "samples": len(group),
                     "median": tail_value(metric, times, b, 50.0)})
    return pd.DataFrame(rows, columns=["rank", "peer", "samples", "median"])


def jain_index(values) -> float:
    """Jain's fairness index: (sum x)^2 / (n * sum x^2); 1 = perfectly fair."""
    x = np.asarray([v for v in values if np.isfinite(v)], dtype=np.float64)
    if len(x) == 0 or not np.any(x):
        return float("nan")
    return float(x.sum() ** 2 / (len(x) * np.sum(x ** 2)))


def incast_senders(s: pd.DataFrame) -> pd.DataFrame:
    """Per-sender throughput of an incast test, in GB/s over the sender's active span.

    The file format does not say which side measures an incast; when every sample has
    the same ``rank`` the receiver measured (senders are the peers), otherwise the
    senders measured (senders are the ranks).
    """
    if s.empty:
        return pd.DataFrame(columns=["sender", "receiver", "bytes", "span_ns", "gbps"])
    receiver_measured = s["rank"].nunique() == 1 and s["peer"].nunique() > 1
    sender_col, receiver_col = ("peer", "rank") if receiver_measured else ("rank", "peer")
    rows = []
    for sender, group in s.groupby(sender_col, sort=True):
        span = float(group["t_done_ns"].max() - group["t_post_ns"].min())
        total = float(group["bytes"].sum())
        receivers = sorted(int(r) for r in group[receiver_col].unique())
        rows.append({"sender": int(sender),
                     "receiver": receivers[0] if len(receivers) == 1 else receivers,
                     "bytes": total, "span_ns": span,
                     "gbps": total / span if span > 0 else float("nan")})
    return pd.DataFrame(rows)


STAT_QUANTILES = TAIL_QUANTILES  # the statistics compare reports, by name


def figure_value(metric: str, stat: str, times_ns: np.ndarray, sample_bytes: np.ndarray) -> float:
    """THE definition of every figure fabscope_analysis shows, in display units.

    ``stat`` is p50, p99, p99.9 (or p999), mean, worst (or max). summary, report, compare,
    accept and the JSON/metrics outputs all call this (directly or through InstanceStats),
    so one file gives one number per figure everywhere. Bandwidth tails are
    bytes / (the q-th percentile of the sample times): the slow side (tail_value).
    """
    if stat in ("p999",):
        stat = "p99.9"
    if stat in TAIL_QUANTILES:
        return tail_value(metric, times_ns, sample_bytes, TAIL_QUANTILES[stat])
    if stat == "mean":
        return mean_value(metric, times_ns, sample_bytes)
    if stat in ("worst", "max"):
        return worst_value(metric, times_ns, sample_bytes)
    raise KeyError(f"unknown statistic {stat!r}")


def sample_values_for_plot(s: pd.DataFrame, metric: str) -> np.ndarray:
    """Per-sample values for distribution plots: latency us, or GB/s per sample."""
    if is_bandwidth(metric):
        v = s["gbps"].to_numpy(dtype=np.float64)
        return v[np.isfinite(v)]
    return s["latency_ns"].to_numpy(dtype=np.float64) / 1e3


sample_values_for_compare = sample_values_for_plot  # old name, kept for scripts


def display_quantile(metric: str, key: str) -> float:
    """Percentile of the per-sample display values that a tail name means.

    For bandwidth the tails are the slow side: p99 -> 1st percentile of per-sample GB/s.
    """
    q = TAIL_QUANTILES[key]
    return 100.0 - q if is_bandwidth(metric) else q


def describe_rank(rank: int, hosts: Dict[int, str]) -> str:
    host = hosts.get(int(rank))
    return f"rank {int(rank)} ({host})" if host else f"rank {int(rank)}"


def describe_pair(rank: int, peer: int, hosts: Dict[int, str]) -> str:
    return f"{describe_rank(rank, hosts)} -> {describe_rank(peer, hosts)}"
