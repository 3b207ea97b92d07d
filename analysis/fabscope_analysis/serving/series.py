"""Raw samples to the sequences serving composes: a collective's time per iteration (its
slowest rank), a sequence at a size between two measured ones, and the instances of each
measured series and condition. impact and fit read the same sequences from here."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from ..reader import TestInstance
from ..run_analysis import format_bytes


# --- raw samples -> per-iteration collective times ---------------------------------------

def collective_times(samples: pd.DataFrame) -> np.ndarray:
    """Per iteration, the slowest measuring rank's time (ns), in iteration order: a
    collective is as slow as its slowest rank."""
    if samples.empty:
        return np.array([], dtype=np.float64)
    d = (samples["t_done_ns"].astype("int64") - samples["t_post_ns"].astype("int64"))
    per_iter = d.groupby(samples["iter"].to_numpy()).max().sort_index()
    return per_iter.to_numpy(dtype=np.float64)


def interpolate_sequence(lower: Tuple[int, np.ndarray], upper: Tuple[int, np.ndarray],
                         target: int) -> np.ndarray:
    """Times at `target` bytes between two measured sizes: each quantile affine in bytes
    (time = alpha + bytes / beta between the two), in the iteration order of the nearer
    size (its slow iterations stay where they were)."""
    (b1, s1), (b2, s2) = lower, upper
    w = (target - b1) / (b2 - b1)
    nearer = s1 if w <= 0.5 else s2
    if len(nearer) == 1:
        p = np.array([0.5])
    else:
        order = np.argsort(np.argsort(nearer, kind="stable"), kind="stable")
        p = order / (len(nearer) - 1)
    return (1 - w) * np.quantile(s1, p) + w * np.quantile(s2, p)


# --- matching measured instances ---------------------------------------------------------

def series_name(inst: TestInstance) -> str:
    return f"{inst.get('name')} ({inst.get('transport')}, {inst.get('memory')})"


def conditions_of(insts: Sequence[TestInstance]) -> List[str]:
    names = sorted({str(i.get("condition", "quiet")) for i in insts})
    return (["quiet"] if "quiet" in names else []) + [c for c in names if c != "quiet"]


def sequence_at_size(measured: Dict[int, np.ndarray], target: int) -> Tuple[Optional[np.ndarray], str]:
    """(times at target bytes, how) from {bytes: times}; None and why when it cannot."""
    sizes = sorted(b for b, t in measured.items() if len(t))
    if target in measured and len(measured[target]):
        return measured[target], f"measured at {format_bytes(target)}"
    lower = [b for b in sizes if b < target]
    upper = [b for b in sizes if b > target]
    if lower and upper:
        b1, b2 = lower[-1], upper[0]
        return (interpolate_sequence((b1, measured[b1]), (b2, measured[b2]), target),
                f"interpolated between measured {format_bytes(b1)} and {format_bytes(b2)}")
    have = ", ".join(format_bytes(b) for b in sizes) or "none"
    return None, f"{format_bytes(target)} not measured (measured: {have}); not extrapolated"


def series_by_condition(insts: Sequence[TestInstance]):
    """(series name, condition, its instances) for every series and condition measured."""
    series: Dict[str, List[TestInstance]] = {}
    for inst in insts:
        series.setdefault(series_name(inst), []).append(inst)
    for name, members in series.items():
        for condition in conditions_of(members):
            yield name, condition, [i for i in members
                                    if str(i.get("condition", "quiet")) == condition]


def add_inflation(rows: List[dict], baseline: str = "quiet") -> None:
    """Each congested row's p50/p99 (and mean, where rows have one) over its series' baseline
    row ("quiet" for conditions, "isolated" for the serving mix), where both exist."""
    for row in rows:
        base = next((r for r in rows if r["condition"] == baseline and r["series"] == row["series"]
                     and r.get("p99_ms") is not None), None)
        if row["condition"] != baseline and base and row.get("p99_ms") is not None:
            row["inflation_p50"] = row["p50_ms"] / base["p50_ms"]
            row["inflation_p99"] = row["p99_ms"] / base["p99_ms"]
            if "mean_ms" in row and "mean_ms" in base:
                row["inflation_mean"] = row["mean_ms"] / base["mean_ms"]
