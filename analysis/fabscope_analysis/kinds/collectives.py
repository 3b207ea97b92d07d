"""Collective kinds (src/kinds/collectives): allreduce and the MoE alltoall.

Their headline rows are whole collectives per rank; the summary adds each convention of
timing side by side (per call, pipelined); the line rate reads the all-to-all's phase
rows; diagnose's arrival evidence reads both; fit measures the TP class by allreduce and
the MoE class by alltoall, each call as slow as its slowest rank."""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from ..run_analysis import format_number
from .base import ARRIVAL_EVIDENCE, KindAnalysis, Transfers

ALLTOALL_PHASES = (1 << 11) | (1 << 12)   # sample flags: an all-to-all's dispatch / combine row


PIPELINED_NOTE = "back to back, total time / calls: nccl-tests' default"


def allreduce_line(inst) -> str:
    """An all-reduce's two timing conventions side by side ('' for a file written before
    the pipelined figure existed)."""
    g = inst.get
    if g("pipelined_busbw_gbps") is None:
        return ""
    return (f"all-reduce busbw per call {format_number(g('busbw_gbps'))} GB/s (p50 "
            f"{format_number(g('collective_p50_ns', 0) / 1e3)} us, each call timed alone, slowest "
            f"rank: what a decode step waits for); pipelined {format_number(g('pipelined_busbw_gbps'))}"
            f" GB/s ({format_number(g('pipelined_time_ns', 0) / 1e3)} us/call over "
            f"{int(g('pipelined_calls', 0))} calls {PIPELINED_NOTE})")


def alltoall_line(inst) -> str:
    """An MoE all-to-all's phases and routing (the headline rows are whole rounds:
    dispatch + combine, per rank)."""
    g = inst.get
    routing = str(g("popularity", "?"))
    if routing == "zipf":
        routing += f" s={format_number(g('zipf_exponent'))}"
    return (f"MoE {int(g('tokens_per_rank', 0))} tokens/rank, top-{int(g('top_k', 0))} of "
            f"{int(g('experts', 0))} experts ({routing}), {format_number(g('copies_per_token'))} "
            f"copies/token: dispatch p50 {format_number(g('dispatch_p50_ns', 0) / 1e3)} us "
            f"(busbw {format_number(g('dispatch_busbw_gbps'))} GB/s), combine p50 "
            f"{format_number(g('combine_p50_ns', 0) / 1e3)} us (busbw "
            f"{format_number(g('combine_busbw_gbps'))} GB/s), round p50 "
            f"{format_number(g('collective_p50_ns', 0) / 1e3)} us (slowest rank per iteration, "
            f"per call); load imbalance {format_number(g('load_imbalance'))} (max/mean copies "
            "held per rank)" + alltoall_pipelined(inst))


def alltoall_pipelined(inst) -> str:
    g = inst.get
    if g("dispatch_pipelined_busbw_gbps") is None:
        return ""
    return (f"; pipelined busbw dispatch {format_number(g('dispatch_pipelined_busbw_gbps'))} GB/s, "
            f"combine {format_number(g('combine_pipelined_busbw_gbps'))} GB/s "
            f"({int(g('pipelined_calls', 0))} calls of each phase {PIPELINED_NOTE})")


def allreduce_lines(inst) -> List[str]:
    line = allreduce_line(inst)
    return [line] if line else []


def alltoall_lines(inst) -> List[str]:
    return [alltoall_line(inst)]


def alltoall_transfers(inst) -> Optional[Transfers]:
    """Each phase row: what the rank sent to all others, from its NIC (receivers unnamed)."""
    s = inst.samples()
    s = s[(s["flags"].astype("int64").to_numpy() & ALLTOALL_PHASES) != 0]
    s = s[s["bytes"] > 0]
    if s.empty:
        return None
    return (s["rank"].to_numpy(), np.full(len(s), -1), s["bytes"].to_numpy(dtype=np.float64),
            (s["t_done_ns"] - s["t_post_ns"]).to_numpy(dtype=np.float64) / 1e9)


ALLREDUCE = KindAnalysis(("allreduce",), summary_lines=allreduce_lines,
                         evidence=frozenset({ARRIVAL_EVIDENCE}),
                         serving_classes=frozenset({"tp", "tp_prefill"}), collective=True,
                         gpcnet_canary=True)
ALLTOALL = KindAnalysis(("alltoall",), summary_lines=alltoall_lines,
                        evidence=frozenset({ARRIVAL_EVIDENCE}), transfers=alltoall_transfers,
                        serving_classes=frozenset({"moe", "moe_prefill"}), collective=True)

ANALYSES = (ALLREDUCE, ALLTOALL)
