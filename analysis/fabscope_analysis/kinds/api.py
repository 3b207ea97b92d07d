"""The front-end API kind (src/kinds/api): requests over the front-end network.

Its headline rows are whole requests (connect -> last byte); the summary adds their
anatomy; fit's api class reads the time to first byte beyond the server's service time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np

from ..reader import FLAG_AUXILIARY_MASK, FLAG_CHUNK_GAP, FLAG_FIRST_BYTE, TestInstance
from ..run_analysis import format_number
from .base import NO_UNIT, SECONDS, US, KindAnalysis, KindMetric

PERCENTILES = (50, 99, 99.9)


@dataclass(frozen=True)
class ApiFigures:
    """A front-end test's request anatomy: p50/p99/p99.9 in microseconds of each part
    (None: no such rows)."""
    interface: str
    network: str
    requests_ok: int
    requests: int
    connect_us: Optional[Tuple[float, ...]]
    first_byte_us: Optional[Tuple[float, ...]]
    chunk_gap_us: Optional[Tuple[float, ...]]
    whole_answer_us: Optional[Tuple[float, ...]]
    errors_by_server: str


def _percentiles(values) -> Optional[Tuple[float, ...]]:
    if len(values) == 0:
        return None
    return tuple(float(np.percentile(values, q)) for q in PERCENTILES)


def api_figures(inst: TestInstance) -> ApiFigures:
    """The headline rows are whole requests (connect -> last byte); time to first byte and
    chunk gaps are flagged rows of their own, the connect time a column of api_requests."""
    s = inst.samples()
    took = (s["t_done_ns"] - s["t_post_ns"]).astype("float64") / 1e3
    flags = s["flags"].astype("int64")
    rows = inst.api_requests()
    connect = rows.loc[rows["connect_ns"] >= 0, "connect_ns"].to_numpy(dtype="float64") / 1e3
    ok = int((rows["status"] == "ok").sum()) if not rows.empty else 0
    return ApiFigures(str(inst.get("interface", "?")), str(inst.get("network", "?")),
                      ok, len(rows), _percentiles(connect),
                      _percentiles(took[(flags & FLAG_FIRST_BYTE) != 0]),
                      _percentiles(took[(flags & FLAG_CHUNK_GAP) != 0]),
                      _percentiles(took[(flags & FLAG_AUXILIARY_MASK) == 0]),
                      str(inst.get("request_errors", "") or ""))


def _pct(values: Optional[Tuple[float, ...]]) -> str:
    return "-" if values is None else "/".join(format_number(v) for v in values)


def api_lines(f: ApiFigures) -> List[str]:
    return [f"API over {f.interface} ({f.network}): {f.requests_ok}/{f.requests} "
            f"requests ok; p50/p99/p99.9 us: connect {_pct(f.connect_us)}, first byte "
            f"{_pct(f.first_byte_us)}, chunk gap {_pct(f.chunk_gap_us)}, whole answer "
            f"{_pct(f.whole_answer_us)}" +
            (f"; errors by server: {f.errors_by_server}" if f.errors_by_server else "")]


def api_metrics(f: ApiFigures) -> List[KindMetric]:
    out = [KindMetric(NO_UNIT, "requests_ok", f.requests_ok),
           KindMetric(NO_UNIT, "requests", f.requests)]
    for figure, values in (("connect", f.connect_us), ("first_byte", f.first_byte_us),
                           ("chunk_gap", f.chunk_gap_us), ("whole_answer", f.whole_answer_us)):
        for q, value in zip(PERCENTILES, values or ()):
            out.append(KindMetric(SECONDS, figure, value * US, (("stat", f"p{q:g}"),)))
    return out


ANALYSES = (KindAnalysis(("api",), compute=api_figures, summary_lines=api_lines, metrics=api_metrics,
                         serving_classes=frozenset({"api"})),)
