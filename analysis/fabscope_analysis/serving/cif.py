"""Congestion impact factor (GPCNeT's): congested / quiet, per serving class.

For each class (TP all-reduce, MoE dispatch + combine, KV push, API, and each serving-mix
class with its together phase over its isolated one) and each neighbour condition, the
ratio of the per-operation time percentiles at p50, p99 and p99.9, at the deployment's
sizes (measured.py). Above 1 is worse. A percentile is read only from enough values
(resample.MIN_VALUES: 100 for a p99, 1000 for a p99.9), else it is left out and said so.
Each row names its canaries (how many ranks measured, of how many, placed how, while
the rest congested), GPCNeT's layout being 20 % measuring. The p99 carries a 90 %
interval; the rule `cif_p99` (default 2) passes a row when the
whole interval is at or below the limit and fails it when the whole interval is above.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

from . import resample as R
from .checks import CANNOT_TELL, FAIL, PASS, Check, worst_status
from .measured import CLASS_TITLES, ClassSeries, Measured

QUANTILES = (50.0, 99.0, 99.9)


@dataclass
class CifRow:
    cls: str
    series: str
    condition: str
    samples: int
    quiet_samples: int
    cif: Dict[str, Optional[float]] = field(default_factory=dict)   # p50, p99, p99.9
    p99_interval: Optional[tuple] = None
    status: str = "CANNOT TELL"
    why: str = ""
    canaries: str = ""     # which ranks measured the congested side (GPCNeT's canaries)

    def title(self) -> str:
        return CLASS_TITLES.get(self.cls, self.cls.replace("mix/", "serving mix: ")
                                .replace("gpcnet/", "GPCNeT canaries: "))

    def to_json(self) -> dict:
        return {"class": self.cls, "series": self.series, "condition": self.condition,
                "samples": self.samples, "quiet_samples": self.quiet_samples,
                "cif": self.cif, "p99_interval": self.p99_interval, "status": self.status,
                "why": self.why, "canaries": self.canaries}


def _label(q: float) -> str:
    return f"p{q:g}"


def cif_quantiles(loaded: np.ndarray, quiet: np.ndarray) -> Dict[str, Optional[float]]:
    """{"p50", "p99", "p99.9"}: loaded / quiet at each percentile, None where either side
    has fewer values than the percentile needs (resample.MIN_VALUES)."""
    fewest = min(len(quiet), len(loaded))
    out: Dict[str, Optional[float]] = {}
    for q in QUANTILES:
        base = float(np.percentile(quiet, q)) if fewest >= R.min_values(q) else 0.0
        out[_label(q)] = float(np.percentile(loaded, q)) / base if base > 0 else None
    return out


def _row(series: ClassSeries, condition: str, limit: float) -> CifRow:
    quiet, loaded = series.by_condition["quiet"], series.by_condition[condition]
    row = CifRow(series.cls, series.series, condition, len(loaded), len(quiet),
                 canaries=series.canaries.get(condition, ""))
    fewest = min(len(quiet), len(loaded))
    row.cif = cif_quantiles(loaded, quiet)
    if fewest < R.min_values(99.0):
        row.why = f"{fewest} operations on the smaller side, a p99 needs {R.min_values(99.0)}"
        return row
    point, low, high = R.ratio_quantile(loaded, quiet, 99.0)
    row.p99_interval = (low, high)
    row.status = R.judge(low, high, limit)
    return row


def cif_rows(measured: Measured, limit: float) -> List[CifRow]:
    rows = []
    for series in list(measured.classes.values()) + measured.mix:
        if "quiet" not in series.by_condition:
            continue
        for condition in series.conditions():
            if condition != "quiet":
                rows.append(_row(series, condition, limit))
    return rows


def gpcnet_rows(measured: Measured) -> List[CifRow]:
    """GPCNeT's own canary tests' factors, shown beside the serving classes' and not
    judged: the SLO is about serving traffic; these say how the fabric congests at all."""
    rows = []
    for series in measured.gpcnet:
        if "quiet" not in series.by_condition:
            continue
        for condition in series.conditions():
            if condition != "quiet":
                row = _row(series, condition, float("inf"))
                row.status = "not judged"
                rows.append(row)
    return rows


def cif_check(rows: List[CifRow], measured: Measured, limit: float):
    """The SLO verdict's congestion rule over every row (fit.Check)."""
    quiet_only = [CLASS_TITLES[c] for c, s in measured.classes.items()
                  if set(s.by_condition) == {"quiet"}]
    missing = [f"{title}: measured quiet only" for title in quiet_only]
    if not rows:
        return Check("cif_p99", CANNOT_TELL,
                     f"congestion impact factor p99 <= {limit:g}: CANNOT TELL, no serving class "
                     "was measured under a neighbour condition (add conditions: [incast, "
                     "alltoall, ...] to the tests)", missing=missing or ["no congested run"])
    status = worst_status(r.status for r in rows)
    shown = [r for r in rows if r.status == status] if status != PASS else rows
    parts = []
    for r in shown[:6]:
        p99 = r.cif.get("p99")
        interval = (f", 90 % interval {r.p99_interval[0]:.3g}-{r.p99_interval[1]:.3g}"
                    if r.p99_interval else "")
        parts.append(f"{r.title()} [{r.condition}] x{p99:.3g}{interval}" if p99 is not None
                     else f"{r.title()} [{r.condition}] ({r.why})")
    more = f" and {len(shown) - 6} more" if len(shown) > 6 else ""
    text = (f"congestion impact factor p99 <= {limit:g}: {status} "
            f"({'; '.join(parts)}{more})")
    if missing:
        text += f" [not judged: {'; '.join(missing)}]"
    check = Check("cif_p99", status, text, figures={"rows": len(rows)}, missing=missing)
    if status == FAIL:
        check.condition = ", ".join(sorted({r.condition for r in shown}))
    return check
