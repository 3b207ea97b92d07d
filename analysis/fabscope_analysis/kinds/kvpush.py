"""The KV-cache push kind (src/kinds/kvpush): prefill -> decode transfers per request.

Its headline rows are requests; the report draws their timelines; the line rate reads
each request's bytes over its transfer time and makes it the headline (what a served
request waits for); fit's kv class reads its requests (serving/measured.py)."""

from __future__ import annotations

from typing import Optional

import numpy as np

from .. import html as H
from .. import plots
from ..run_analysis import RunAnalysis, format_bytes
from .base import KindAnalysis, ReportSection, Transfers

MAX_TIMELINE_SEGMENTS = 3000
REQUEST_COLUMNS = {"prefill_rank", "decode_rank", "bytes", "t_start_ns", "t_done_ns"}


def kv_section(analysis: RunAnalysis) -> str:
    figs = []
    for inst in analysis.instances:
        if inst.get("kind") not in KVPUSH.kinds:
            continue
        s = analysis.samples(inst)
        if s.empty:
            continue
        t0 = float(inst.get("t_start_ns", s["t_post_ns"].min()))
        shown = s.sort_values("t_post_ns").head(MAX_TIMELINE_SEGMENTS)
        rows = [(int(r.rank), (r.t_post_ns - t0) / 1e6, (r.t_done_ns - t0) / 1e6, int(r.peer))
                for r in shown.itertuples()]
        ev = inst.events()
        events = [((float(e.t_ns) - t0) / 1e6, int(e.rank), str(e.kind)) for e in ev.itertuples()]
        caption = f"test {inst.index:04d}, {len(s)} requests"
        if len(s) > MAX_TIMELINE_SEGMENTS:
            caption += f" (first {MAX_TIMELINE_SEGMENTS} shown)"
        figs.append(H.figure(plots.request_timeline(
            rows, events, f"{inst.get('name')} {format_bytes(inst.get('bytes'))} "
                          f"[{inst.get('condition')}]"), caption))
    if not figs:
        return ""
    return H.capped_section("kv", "KV-cache push request timelines", figs,
                            "Each bar is one request from post to completion on the global clock; "
                            "markers are events (faults, detection, reroute, recovery).")


def request_transfers(inst) -> Optional[Transfers]:
    """Each request: its bytes from the prefill to the decode rank over start -> done."""
    req = inst.requests()
    if req.empty or not REQUEST_COLUMNS <= set(req.columns):
        return None
    return (req["prefill_rank"].to_numpy(), req["decode_rank"].to_numpy(),
            req["bytes"].to_numpy(dtype=np.float64),
            (req["t_done_ns"] - req["t_start_ns"]).to_numpy(dtype=np.float64) / 1e9)


KVPUSH = KindAnalysis(("kvpush",), report_section=ReportSection("kv", "KV push", kv_section),
                      transfers=request_transfers, request_rows=True, line_rate_headline=True,
                      serving_classes=frozenset({"kv"}))
ANALYSES = (KVPUSH,)
