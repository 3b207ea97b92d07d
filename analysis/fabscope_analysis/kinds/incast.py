"""The incast kind (src/kinds/incast): many senders into one receiver.

Its headline rows are the probe's latency; the report shows each sender's share (Jain's
index); the line rate reads the receiver's aggregate rows; diagnose's sender evidence
names a sender far below the median sender."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np
import pandas as pd

from .. import html as H
from .. import plots
from ..run_analysis import RunAnalysis, format_bytes, format_number
from ..stats import incast_senders, jain_index
from .base import SENDER_EVIDENCE, KindAnalysis, ReportSection, Transfers, attr_number

INCAST_AGGREGATE = 1 << 8     # sample flag: the incast receiver's aggregate row


@dataclass(frozen=True)
class IncastFigures:
    """One incast instance's senders: each one's throughput (bytes sent / its active span)
    and Jain's index over them."""
    index: int
    name: str
    bytes: Optional[float]
    condition: str
    sender_labels: Tuple[str, ...]       # as the report names ranks (host and rank)
    sender_gbps: Tuple[float, ...]
    jain: float
    total_gbps: float                    # every sender's bytes over the instance's span
    min_gbps: float                      # the slowest and fastest sender (NaNs left out)
    max_gbps: float


def incast_figures(analysis: RunAnalysis) -> Tuple[IncastFigures, ...]:
    out = []
    for inst in analysis.instances:
        if inst.get("kind") not in INCAST.kinds:
            continue
        senders = incast_senders(analysis.samples(inst))
        if senders.empty:
            continue
        out.append(IncastFigures(
            inst.index, str(inst.get("name")), attr_number(inst.get("bytes")),
            str(inst.get("condition")),
            tuple(analysis.describe_rank(s) for s in senders["sender"]),
            tuple(senders["gbps"].tolist()), float(jain_index(senders["gbps"])),
            float(senders["bytes"].sum()) / _incast_span(analysis.samples(inst)),
            float(senders["gbps"].min()), float(senders["gbps"].max())))
    return tuple(out)


def incast_section(incasts: Tuple[IncastFigures, ...]) -> str:
    figs, rows = [], []
    for f in incasts:
        figs.append(H.figure(plots.sender_bars(
            list(f.sender_labels), list(f.sender_gbps),
            f"{f.name} {format_bytes(f.bytes)} [{f.condition}]", f.jain), f"test {f.index:04d}"))
        rows.append({"#": f"{f.index:04d}", "test": f.name, "condition": f.condition,
                     "senders": len(f.sender_gbps), "total GB/s": format_number(f.total_gbps),
                     "min / max sender GB/s": f"{format_number(f.min_gbps)} / "
                                              f"{format_number(f.max_gbps)}",
                     "Jain index": format_number(f.jain)})
    if not figs:
        return ""
    return H.section("incast", "Incast fairness",
                     [H.table(pd.DataFrame(rows), left=["test", "condition"]), H.grid(figs)],
                     intro="Per-sender throughput = bytes sent / the sender's active span. "
                           "Jain's index (sum x)^2 / (n sum x^2): 1 = every sender got the same "
                           "share, 1/n = one sender got everything. Red bars: below 80% of the "
                           "mean.")


def _incast_span(samples: pd.DataFrame) -> float:
    return float(samples["t_done_ns"].max() - samples["t_post_ns"].min()) if len(samples) else \
        float("nan")


def aggregate_transfers(inst) -> Optional[Transfers]:
    """The receiver's aggregate rows: rank = receiver, senders unnamed."""
    s = inst.samples()
    s = s[(s["flags"].astype("int64").to_numpy() & INCAST_AGGREGATE) != 0]
    if s.empty:
        return None
    return (np.full(len(s), -1), s["rank"].to_numpy(), s["bytes"].to_numpy(dtype=np.float64),
            (s["t_done_ns"] - s["t_post_ns"]).to_numpy(dtype=np.float64) / 1e9)


INCAST = KindAnalysis(("incast",), report_section=ReportSection("incast", "Incast", incast_figures,
                                                                incast_section),
                      evidence=frozenset({SENDER_EVIDENCE}), transfers=aggregate_transfers)
ANALYSES = (INCAST,)
