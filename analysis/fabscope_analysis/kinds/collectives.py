"""Collective kinds (src/kinds/collectives): allreduce and the MoE alltoall.

Their headline rows are whole collectives per rank; the summary adds each convention of
timing side by side (per call, pipelined); the line rate reads the all-to-all's phase
rows; diagnose's arrival evidence reads both; fit measures the TP class by allreduce and
the MoE class by alltoall, each call as slow as its slowest rank."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import numpy as np

from ..reader import TestInstance
from ..run_analysis import format_number
from .base import (ARRIVAL_EVIDENCE, BYTES_PER_SECOND, GBPS, NO_UNIT, SECONDS, US, KindAnalysis,
                   KindMetric, Transfers, attr_number)

ALLTOALL_PHASES = (1 << 11) | (1 << 12)   # sample flags: an all-to-all's dispatch / combine row


PIPELINED_NOTE = "back to back, total time / calls: nccl-tests' default"

Number = Optional[float]   # an attribute's number; None when the file lacks it


@dataclass(frozen=True)
class AllreduceFigures:
    """An all-reduce's two timing conventions: each call timed alone (the slowest rank)
    and back to back (nccl-tests' way)."""
    busbw_gbps: Number
    p50_us: float
    pipelined_busbw_gbps: float
    pipelined_us_per_call: float
    pipelined_calls: int


def allreduce_figures(inst: TestInstance) -> Optional[AllreduceFigures]:
    """None for a file written before the pipelined figure existed."""
    g = inst.get
    if g("pipelined_busbw_gbps") is None:
        return None
    return AllreduceFigures(attr_number(g("busbw_gbps")), g("collective_p50_ns", 0) / 1e3,
                            attr_number(g("pipelined_busbw_gbps")),
                            g("pipelined_time_ns", 0) / 1e3, int(g("pipelined_calls", 0)))


def allreduce_lines(f: AllreduceFigures) -> List[str]:
    return [f"all-reduce busbw per call {format_number(f.busbw_gbps)} GB/s (p50 "
            f"{format_number(f.p50_us)} us, each call timed alone, slowest "
            f"rank: what a decode step waits for); pipelined {format_number(f.pipelined_busbw_gbps)}"
            f" GB/s ({format_number(f.pipelined_us_per_call)} us/call over "
            f"{f.pipelined_calls} calls {PIPELINED_NOTE})"]


def _scaled(value: Optional[float], scale: float) -> Optional[float]:
    return None if value is None else value * scale


def allreduce_metrics(f: AllreduceFigures) -> List[KindMetric]:
    return [KindMetric(BYTES_PER_SECOND, "busbw_per_call", _scaled(f.busbw_gbps, GBPS)),
            KindMetric(SECONDS, "collective_p50", f.p50_us * US),
            KindMetric(BYTES_PER_SECOND, "busbw_pipelined", _scaled(f.pipelined_busbw_gbps, GBPS)),
            KindMetric(SECONDS, "pipelined_time_per_call", f.pipelined_us_per_call * US)]


@dataclass(frozen=True)
class AlltoallFigures:
    """An MoE all-to-all's routing and phases (the headline rows are whole rounds: dispatch
    + combine, per rank); the pipelined figures are None in a file written before them."""
    tokens_per_rank: int
    top_k: int
    experts: int
    popularity: str
    zipf_exponent: Number
    copies_per_token: Number
    dispatch_p50_us: float
    dispatch_busbw_gbps: Number
    combine_p50_us: float
    combine_busbw_gbps: Number
    round_p50_us: float
    load_imbalance: Number
    dispatch_pipelined_busbw_gbps: Number
    combine_pipelined_busbw_gbps: Number
    pipelined_calls: int


def alltoall_figures(inst: TestInstance) -> AlltoallFigures:
    g = inst.get
    return AlltoallFigures(int(g("tokens_per_rank", 0)), int(g("top_k", 0)), int(g("experts", 0)),
                           str(g("popularity", "?")), attr_number(g("zipf_exponent")),
                           attr_number(g("copies_per_token")), g("dispatch_p50_ns", 0) / 1e3,
                           attr_number(g("dispatch_busbw_gbps")), g("combine_p50_ns", 0) / 1e3,
                           attr_number(g("combine_busbw_gbps")), g("collective_p50_ns", 0) / 1e3,
                           attr_number(g("load_imbalance")),
                           attr_number(g("dispatch_pipelined_busbw_gbps")),
                           attr_number(g("combine_pipelined_busbw_gbps")),
                           int(g("pipelined_calls", 0)))


def alltoall_lines(f: AlltoallFigures) -> List[str]:
    routing = f.popularity
    if routing == "zipf":
        routing += f" s={format_number(f.zipf_exponent)}"
    return [f"MoE {f.tokens_per_rank} tokens/rank, top-{f.top_k} of "
            f"{f.experts} experts ({routing}), {format_number(f.copies_per_token)} "
            f"copies/token: dispatch p50 {format_number(f.dispatch_p50_us)} us "
            f"(busbw {format_number(f.dispatch_busbw_gbps)} GB/s), combine p50 "
            f"{format_number(f.combine_p50_us)} us (busbw "
            f"{format_number(f.combine_busbw_gbps)} GB/s), round p50 "
            f"{format_number(f.round_p50_us)} us (slowest rank per iteration, "
            f"per call); load imbalance {format_number(f.load_imbalance)} (max/mean copies "
            "held per rank)" + _alltoall_pipelined(f)]


def alltoall_metrics(f: AlltoallFigures) -> List[KindMetric]:
    return [KindMetric(SECONDS, "dispatch_p50", f.dispatch_p50_us * US),
            KindMetric(SECONDS, "combine_p50", f.combine_p50_us * US),
            KindMetric(SECONDS, "round_p50", f.round_p50_us * US),
            KindMetric(BYTES_PER_SECOND, "dispatch_busbw", _scaled(f.dispatch_busbw_gbps, GBPS)),
            KindMetric(BYTES_PER_SECOND, "combine_busbw", _scaled(f.combine_busbw_gbps, GBPS)),
            KindMetric(BYTES_PER_SECOND, "dispatch_busbw_pipelined",
                       _scaled(f.dispatch_pipelined_busbw_gbps, GBPS)),
            KindMetric(BYTES_PER_SECOND, "combine_busbw_pipelined",
                       _scaled(f.combine_pipelined_busbw_gbps, GBPS)),
            KindMetric(NO_UNIT, "load_imbalance", f.load_imbalance),
            KindMetric(NO_UNIT, "copies_per_token", f.copies_per_token)]


def _alltoall_pipelined(f: AlltoallFigures) -> str:
    if f.dispatch_pipelined_busbw_gbps is None:
        return ""
    return (f"; pipelined busbw dispatch {format_number(f.dispatch_pipelined_busbw_gbps)} GB/s, "
            f"combine {format_number(f.combine_pipelined_busbw_gbps)} GB/s "
            f"({f.pipelined_calls} calls of each phase {PIPELINED_NOTE})")


def alltoall_transfers(inst) -> Optional[Transfers]:
    """Each phase row: what the rank sent to all others, from its NIC (receivers unnamed)."""
    s = inst.samples()
    s = s[(s["flags"].astype("int64").to_numpy() & ALLTOALL_PHASES) != 0]
    s = s[s["bytes"] > 0]
    if s.empty:
        return None
    return (s["rank"].to_numpy(), np.full(len(s), -1), s["bytes"].to_numpy(dtype=np.float64),
            (s["t_done_ns"] - s["t_post_ns"]).to_numpy(dtype=np.float64) / 1e9)


ALLREDUCE = KindAnalysis(("allreduce",), compute=allreduce_figures, summary_lines=allreduce_lines,
                         metrics=allreduce_metrics,
                         evidence=frozenset({ARRIVAL_EVIDENCE}),
                         serving_classes=frozenset({"tp", "tp_prefill"}), collective=True,
                         gpcnet_canary=True)
ALLTOALL = KindAnalysis(("alltoall",), compute=alltoall_figures, summary_lines=alltoall_lines,
                        metrics=alltoall_metrics,
                        evidence=frozenset({ARRIVAL_EVIDENCE}), transfers=alltoall_transfers,
                        serving_classes=frozenset({"moe", "moe_prefill"}), collective=True)

ANALYSES = (ALLREDUCE, ALLTOALL)
