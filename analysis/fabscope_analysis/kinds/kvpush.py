"""The KV-cache push kind (src/kinds/kvpush): prefill -> decode transfers per request.

Its headline rows are requests; the report draws their timelines; the line rate reads
each request's bytes over its transfer time and makes it the headline (what a served
request waits for); fit's kv class reads its requests (serving/measured.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from .. import html as H
from .. import plots
from ..run_analysis import RunAnalysis, format_bytes
from .base import KindAnalysis, ReportSection, Transfers, attr_number

MAX_TIMELINE_SEGMENTS = 3000
REQUEST_COLUMNS = {"prefill_rank", "decode_rank", "bytes", "t_start_ns", "t_done_ns"}


@dataclass(frozen=True)
class KvTimeline:
    """One KV push instance's requests on the global clock (ms since it started): the
    first MAX_TIMELINE_SEGMENTS by post time, and its events."""
    index: int
    name: str
    bytes: Optional[float]
    condition: str
    requests: int
    segments: Tuple[Tuple[int, float, float, int], ...]    # (rank, start, end, peer)
    events: Tuple[Tuple[float, int, str], ...]             # (t, rank, kind)


def kv_timelines(analysis: RunAnalysis) -> Tuple[KvTimeline, ...]:
    out = []
    for inst in analysis.instances:
        if inst.get("kind") not in KVPUSH.kinds:
            continue
        s = analysis.samples(inst)
        if s.empty:
            continue
        t0 = float(inst.get("t_start_ns", s["t_post_ns"].min()))
        shown = s.sort_values("t_post_ns").head(MAX_TIMELINE_SEGMENTS)
        segments = tuple((int(r.rank), (r.t_post_ns - t0) / 1e6, (r.t_done_ns - t0) / 1e6,
                          int(r.peer)) for r in shown.itertuples())
        events = tuple(((float(e.t_ns) - t0) / 1e6, int(e.rank), str(e.kind))
                       for e in inst.events().itertuples())
        out.append(KvTimeline(inst.index, str(inst.get("name")), attr_number(inst.get("bytes")),
                              str(inst.get("condition")), len(s), segments, events))
    return tuple(out)


def kv_section(timelines: Tuple[KvTimeline, ...]) -> str:
    figs = []
    for f in timelines:
        caption = f"test {f.index:04d}, {f.requests} requests"
        if f.requests > MAX_TIMELINE_SEGMENTS:
            caption += f" (first {MAX_TIMELINE_SEGMENTS} shown)"
        figs.append(H.figure(plots.request_timeline(
            list(f.segments), list(f.events), f"{f.name} {format_bytes(f.bytes)} "
                                              f"[{f.condition}]"), caption))
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


KVPUSH = KindAnalysis(("kvpush",), report_section=ReportSection("kv", "KV push", kv_timelines, kv_section),
                      transfers=request_transfers, request_rows=True, line_rate_headline=True,
                      serving_classes=frozenset({"kv"}))
ANALYSES = (KVPUSH,)
