"""The incast kind (src/kinds/incast): many senders into one receiver.

Its headline rows are the probe's latency; the report shows each sender's share (Jain's
index); the line rate reads the receiver's aggregate rows; diagnose's sender evidence
names a sender far below the median sender."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from .. import html as H
from .. import plots
from ..run_analysis import RunAnalysis, format_bytes, format_number
from ..stats import incast_senders, jain_index
from .base import SENDER_EVIDENCE, KindAnalysis, ReportSection, Transfers

INCAST_AGGREGATE = 1 << 8     # sample flag: the incast receiver's aggregate row


def incast_section(analysis: RunAnalysis) -> str:
    figs, rows = [], []
    for inst in analysis.instances:
        if inst.get("kind") not in INCAST.kinds:
            continue
        senders = incast_senders(analysis.samples(inst))
        if senders.empty:
            continue
        jain = jain_index(senders["gbps"])
        labels = [analysis.describe_rank(s) for s in senders["sender"]]
        figs.append(H.figure(plots.sender_bars(
            labels, senders["gbps"].tolist(),
            f"{inst.get('name')} {format_bytes(inst.get('bytes'))} [{inst.get('condition')}]",
            jain), f"test {inst.index:04d}"))
        g = senders["gbps"]
        rows.append({"#": f"{inst.index:04d}", "test": inst.get("name"),
                     "condition": inst.get("condition"), "senders": len(senders),
                     "total GB/s": format_number(float(senders["bytes"].sum()) /
                                                 _incast_span(analysis.samples(inst))),
                     "min / max sender GB/s": f"{format_number(g.min())} / "
                                              f"{format_number(g.max())}",
                     "Jain index": format_number(jain)})
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


INCAST = KindAnalysis(("incast",), report_section=ReportSection("incast", "Incast", incast_section),
                      evidence=frozenset({SENDER_EVIDENCE}), transfers=aggregate_transfers)
ANALYSES = (INCAST,)
