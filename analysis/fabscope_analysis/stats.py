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
from typing import Dict, List, Optional, Sequence, Tuple

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


def rank_tails(s: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per measuring rank: sample count, p50 and p99 in display units, p99 time in ns."""
    rows = []
    for rank, group in s.groupby("rank", sort=True):
        times = worse_is_higher_times(group, metric)
        b = group["bytes"].to_numpy(dtype=np.float64)
        rows.append({"rank": int(rank), "samples": len(group),
                     "p50": tail_value(metric, times, b, 50.0),
                     "p99": tail_value(metric, times, b, 99.0),
                     "p99_time_ns": _pct(times, 99.0)})
    return pd.DataFrame(rows, columns=["rank", "samples", "p50", "p99", "p99_time_ns"])


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
        p50=tail_value(metric, times, b, 50.0), p99=tail_value(metric, times, b, 99.0),
        p999=tail_value(metric, times, b, 99.9), worst=worst_value(metric, times, b),
        mean=mean_value(metric, times, b),
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


def bootstrap_quantile_diffs(a: np.ndarray, b: np.ndarray, quantiles: Sequence[float],
                             resamples: int = 400, max_samples: int = 20000, seed: int = 12345,
                             level: float = 0.95) -> List[Tuple[float, float, float]]:
    """Bootstrap CIs of percentile_q(b) - percentile_q(a) for each q, resampling both sides.

    Both sides are resampled independently with replacement, ``resamples`` times, from a
    generator with a fixed seed, so the same files always give the same intervals. When a
    side has more than max_samples values a fixed random subset is used, which only widens
    the interval (conservative). Returns [(diff, low, high)] in the order of ``quantiles``.
    """
    rng = np.random.default_rng(seed)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    nan = (float("nan"),) * 3
    if len(a) == 0 or len(b) == 0:
        return [nan for _ in quantiles]
    qs = np.asarray(list(quantiles), dtype=np.float64)
    point = np.percentile(b, qs) - np.percentile(a, qs)
    if len(a) > max_samples:
        a = rng.choice(a, max_samples, replace=False)
    if len(b) > max_samples:
        b = rng.choice(b, max_samples, replace=False)
    chunk = max(1, min(resamples, 2_000_000 // max(len(a), len(b))))
    diffs = []
    done = 0
    while done < resamples:
        n = min(chunk, resamples - done)
        ra = a[rng.integers(0, len(a), size=(n, len(a)))]
        rb = b[rng.integers(0, len(b), size=(n, len(b)))]
        # percentile with several q along axis 1 -> shape (len(qs), n)
        diffs.append(np.percentile(rb, qs, axis=1) - np.percentile(ra, qs, axis=1))
        done += n
    d = np.concatenate(diffs, axis=1)
    alpha = (1.0 - level) / 2.0
    low = np.percentile(d, 100 * alpha, axis=1)
    high = np.percentile(d, 100 * (1 - alpha), axis=1)
    return [(float(p), float(lo), float(hi)) for p, lo, hi in zip(point, low, high)]


def sample_values_for_compare(s: pd.DataFrame, metric: str) -> np.ndarray:
    """Per-sample values in display units for comparison: latency us, or GB/s."""
    if is_bandwidth(metric):
        v = s["gbps"].to_numpy(dtype=np.float64)
        return v[np.isfinite(v)]
    return s["latency_ns"].to_numpy(dtype=np.float64) / 1e3


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
