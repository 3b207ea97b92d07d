"""The serving mix (src/kinds/mix): each class isolated, then all together.

The summary adds each class's inflation (together / isolated); fit and impact read its
classes (serving/measured.py, serving/impact_rows.py) as the mix class."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np

from ..reader import (FLAG_AUXILIARY_MASK, FLAG_MIX_CLASS_MASK, FLAG_MIX_CLASS_SHIFT,
                      FLAG_MIX_TOGETHER, MIX_CLASSES, TestInstance)
from ..run_analysis import format_number
from ..serving.series import add_inflation
from .base import NO_UNIT, SECONDS, US, KindAnalysis, KindMetric


def mix_instance_rows(inst: TestInstance) -> List[dict]:
    """Per traffic class and phase of one mix instance: samples, mean/p50/p99 (ms) from the
    raw samples (the headline rows: an api request's first-byte and gap rows are left out),
    with the together phase's inflation over the isolated one, paired as conditions are
    (series = test/class; the isolated phase is the baseline); the file's stored figures
    beside them (stored_inflation_*), so a reader sees both agree."""
    s = inst.samples()
    flags = s["flags"].astype("int64")
    head = s[(flags & FLAG_AUXILIARY_MASK) == 0]
    hflags = head["flags"].to_numpy(dtype=np.int64)
    took = (head["t_done_ns"] - head["t_post_ns"]).to_numpy(dtype=np.float64) / 1e6
    cls = (hflags & FLAG_MIX_CLASS_MASK) >> FLAG_MIX_CLASS_SHIFT
    together = (hflags & FLAG_MIX_TOGETHER) != 0
    stored = inst.mix_classes()
    rows = []
    for k, name in enumerate(MIX_CLASSES):
        for phase, is_together in (("isolated", False), ("together", True)):
            values = took[(cls == k + 1) & (together == is_together)]
            if not len(values):
                continue
            row = {"series": f"{inst.get('name')}/{name}", "test": str(inst.get("name")),
                   "class": name, "condition": phase, "samples": int(len(values)),
                   "mean_ms": float(np.mean(values)),
                   "p50_ms": float(np.percentile(values, 50)),
                   "p99_ms": float(np.percentile(values, 99))}
            match = stored[(stored["class"] == name) & (stored["phase"] == phase)]
            if is_together and not match.empty:
                row["stored_inflation_mean"] = float(match["inflation_mean"].iloc[0])
                row["stored_inflation_p99"] = float(match["inflation_p99"].iloc[0])
                row["verified"] = int(match["verified"].iloc[0])
                row["failed"] = int(match["failed"].iloc[0])
            rows.append(row)
    add_inflation(rows, baseline="isolated")
    return rows


@dataclass(frozen=True)
class MixClassFigures:
    """One class of a serving mix: isolated (None: no isolated phase) and together p50/p99
    in microseconds, and the inflation together / isolated (mean and p99; NaN without an
    isolated phase)."""
    cls: str
    isolated_p50_us: Optional[float]
    isolated_p99_us: Optional[float]
    together_p50_us: float
    together_p99_us: float
    inflation_mean: float
    inflation_p99: float


def mix_figures(inst: TestInstance) -> Tuple[MixClassFigures, ...]:
    """Each class with a together phase, from the raw samples (mix_instance_rows)."""
    rows = mix_instance_rows(inst)
    out = []
    for r in rows:
        if r["condition"] != "together":
            continue
        iso = next((i for i in rows if i["series"] == r["series"] and i["condition"] == "isolated"),
                   None)
        out.append(MixClassFigures(r["class"], iso["p50_ms"] * 1e3 if iso else None,
                                   iso["p99_ms"] * 1e3 if iso else None, r["p50_ms"] * 1e3,
                                   r["p99_ms"] * 1e3,
                                   r.get("inflation_mean", float("nan")),
                                   r.get("inflation_p99", float("nan"))))
    return tuple(out)


def mix_lines(classes: Tuple[MixClassFigures, ...]) -> List[str]:
    """A serving mix's classes: isolated and together p50/p99 and the inflation (together /
    isolated, mean and p99)."""
    lines = []
    for c in classes:
        before = (f"isolated p50/p99 {format_number(c.isolated_p50_us)}/"
                  f"{format_number(c.isolated_p99_us)} us, "
                  if c.isolated_p50_us is not None else "no isolated phase, ")
        lines.append(f"mix {c.cls}: {before}together {format_number(c.together_p50_us)}/"
                     f"{format_number(c.together_p99_us)} us; inflation (together/isolated) mean "
                     f"x{format_number(c.inflation_mean)}, p99 "
                     f"x{format_number(c.inflation_p99)}")
    return lines


def mix_metrics(classes: Tuple[MixClassFigures, ...]) -> List[KindMetric]:
    out = []
    for c in classes:
        cls = (("class", c.cls),)
        for figure, value in (("isolated_p50", c.isolated_p50_us), ("isolated_p99", c.isolated_p99_us),
                              ("together_p50", c.together_p50_us), ("together_p99", c.together_p99_us)):
            out.append(KindMetric(SECONDS, figure, None if value is None else value * US, cls))
        out.append(KindMetric(NO_UNIT, "inflation_mean", c.inflation_mean, cls))
        out.append(KindMetric(NO_UNIT, "inflation_p99", c.inflation_p99, cls))
    return out


ANALYSES = (KindAnalysis(("mix",), compute=mix_figures, summary_lines=mix_lines, metrics=mix_metrics,
                         serving_classes=frozenset({"mix"})),)
