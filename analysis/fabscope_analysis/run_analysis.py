"""Per-run analysis shared by summary, report, compare and accept.

Derived samples and statistics are computed once per instance and cached; quiet and
congested instances are paired by ``case`` (via ``quiet_index`` when the file has it).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Dict, List, Optional, Tuple

import numpy as np
import pandas as pd

from .reader import ResultFile, TestInstance
from .stats import (InstanceStats, impact_factor, instance_stats, is_bandwidth, unit_of,
                    with_derived)


def instance_key(inst: TestInstance) -> Tuple[str, str, str]:
    """What identifies 'the same measurement' across runs: case, condition, pass."""
    return (str(inst.get("case", inst.get("name", ""))), str(inst.get("condition", "")),
            str(inst.get("pass", "")))


def describe_instance(inst: TestInstance) -> str:
    return (f"test {inst.index:04d} {inst.get('name', '?')} [{inst.get('kind', '?')}, "
            f"{inst.get('bytes', '?')} B, condition {inst.get('condition', '?')}]")


class RunAnalysis:
    def __init__(self, result: ResultFile, straggler_ratio: float = 2.0):
        self.result = result
        self.straggler_ratio = straggler_ratio
        self.instances: List[TestInstance] = result.instances()
        self.hosts: Dict[int, str] = result.host_of_rank()
        # Samples are the big part of a file: keep only the few most recently used.
        self._samples: "OrderedDict[int, pd.DataFrame]" = OrderedDict()
        self._stats: Dict[int, InstanceStats] = {}

    SAMPLE_CACHE_SIZE = 4

    def samples(self, inst: TestInstance) -> pd.DataFrame:
        """Samples with duration_ns/latency_ns/gbps columns (cached, bounded)."""
        if inst.index in self._samples:
            self._samples.move_to_end(inst.index)
        else:
            self._samples[inst.index] = with_derived(inst.samples(), inst.sample_divisor)
            while len(self._samples) > self.SAMPLE_CACHE_SIZE:
                self._samples.popitem(last=False)
        return self._samples[inst.index]

    def stats(self, inst: TestInstance) -> InstanceStats:
        if inst.index not in self._stats:
            self._stats[inst.index] = instance_stats(inst, self.samples(inst),
                                                     self.straggler_ratio)
        return self._stats[inst.index]

    def quiet_partner(self, inst: TestInstance) -> Optional[TestInstance]:
        """The quiet instance a congested one is compared with (None for quiet ones)."""
        if str(inst.get("condition", "quiet")) == "quiet":
            return None
        by_index = {i.index: i for i in self.instances}
        quiet_index = inst.get("quiet_index")
        if quiet_index is not None and int(quiet_index) in by_index:
            return by_index[int(quiet_index)]
        case = inst.get("case")
        candidates = [i for i in self.instances
                      if i.get("case") == case and str(i.get("condition")) == "quiet"]
        same_pass = [i for i in candidates if i.get("pass") == inst.get("pass")]
        chosen = same_pass or candidates
        return chosen[0] if chosen else None

    def impacts(self, inst: TestInstance) -> Tuple[float, float]:
        """(impact_mean, impact_p99) recomputed from samples; NaN when not applicable."""
        quiet = self.quiet_partner(inst)
        if quiet is None:
            return float("nan"), float("nan")
        q, c = self.stats(quiet), self.stats(inst)
        return (impact_factor(inst.metric, q.mean, c.mean),
                impact_factor(inst.metric, q.p99, c.p99))

    def summary_frame(self) -> pd.DataFrame:
        """One row per instance: the numbers of the `summary` command."""
        rows = []
        for inst in self.instances:
            st = self.stats(inst)
            impact_mean, impact_p99 = self.impacts(inst)
            status = str(inst.get("status", "?"))
            error = str(inst.get("error", "") or "")
            flagged = []
            if st.flagged_data:
                flagged.append(f"{st.flagged_data} data-check")
            if st.flagged_deadline:
                flagged.append(f"{st.flagged_deadline} deadline")
            rows.append({
                "index": inst.index, "name": inst.get("name", ""), "kind": inst.get("kind", ""),
                "case": inst.get("case", ""), "condition": inst.get("condition", ""),
                "transport": inst.get("transport", ""), "memory": inst.get("memory", ""),
                "pass": inst.get("pass", ""), "bytes": inst.get("bytes", 0),
                "metric": inst.metric, "unit": unit_of(inst.metric), "samples": st.n_samples,
                "p50": st.p50, "p99": st.p99, "p99.9": st.p999, "worst": st.worst,
                "mean": st.mean, "impact_mean": impact_mean, "impact_p99": impact_p99,
                "status": status, "flagged": ", ".join(flagged), "error": error,
                "stragglers": ", ".join(self.describe_rank(r) for r in st.stragglers),
            })
        return pd.DataFrame(rows)

    def describe_rank(self, rank: int) -> str:
        host = self.hosts.get(int(rank))
        return f"{int(rank)}@{host}" if host else str(int(rank))


def format_number(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "-"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    v = float(value)
    if v == 0:
        return "0"
    if v.is_integer() and abs(v) < 1e6:
        return str(int(v))
    mag = abs(v)
    if mag >= 1000:
        return f"{v:,.0f}"
    if mag >= 100:
        return f"{v:.1f}"
    if mag >= 1:
        return f"{v:.{digits - 1}f}".rstrip("0").rstrip(".") if digits > 1 else f"{v:.0f}"
    return f"{v:.{digits}g}"


def format_bytes(n) -> str:
    try:
        n = int(n)
    except (TypeError, ValueError):
        return str(n)
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def metric_label(metric: str) -> str:
    return "GB/s (tails = slow side)" if is_bandwidth(metric) else "latency us"
