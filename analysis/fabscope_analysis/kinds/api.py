"""The front-end API kind (src/kinds/api): requests over the front-end network.

Its headline rows are whole requests (connect -> last byte); the summary adds their
anatomy; fit's api class reads the time to first byte beyond the server's service time."""

from __future__ import annotations

from typing import List

import numpy as np

from ..reader import FLAG_AUXILIARY_MASK, FLAG_CHUNK_GAP, FLAG_FIRST_BYTE
from ..run_analysis import format_number
from .base import KindAnalysis


def api_line(inst) -> str:
    """A front-end test's request anatomy: the headline rows are whole requests (connect
    -> last byte); time to first byte and chunk gaps are flagged rows of their own, the
    connect time a column of api_requests."""
    s = inst.samples()
    took = (s["t_done_ns"] - s["t_post_ns"]).astype("float64") / 1e3
    flags = s["flags"].astype("int64")

    def pct(values) -> str:
        if len(values) == 0:
            return "-"
        return "/".join(format_number(float(np.percentile(values, q))) for q in (50, 99, 99.9))

    rows = inst.api_requests()
    connect = rows.loc[rows["connect_ns"] >= 0, "connect_ns"].to_numpy(dtype="float64") / 1e3
    ok = int((rows["status"] == "ok").sum()) if not rows.empty else 0
    errors = str(inst.get("request_errors", "") or "")
    return (f"API over {inst.get('interface', '?')} ({inst.get('network', '?')}): {ok}/{len(rows)} "
            f"requests ok; p50/p99/p99.9 us: connect {pct(connect)}, first byte "
            f"{pct(took[(flags & FLAG_FIRST_BYTE) != 0])}, chunk gap "
            f"{pct(took[(flags & FLAG_CHUNK_GAP) != 0])}, whole answer "
            f"{pct(took[(flags & FLAG_AUXILIARY_MASK) == 0])}" +
            (f"; errors by server: {errors}" if errors else ""))


def api_lines(inst) -> List[str]:
    return [api_line(inst)]


ANALYSES = (KindAnalysis(("api",), summary_lines=api_lines, serving_classes=frozenset({"api"})),)
