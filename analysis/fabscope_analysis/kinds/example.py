"""The example kind (src/kinds/example): a token passed round a ring of ranks, the
template of a new kind family (docs/architecture.md, "What each change touches").

Its rows are hops, one per lap on each sending rank (peer: its successor): the token
out and the receiver's acknowledgement back. The summary line and the report section
give each hop's median from the rows; diagnose reads the hops as pairs (one peer per
rank): a hop far slower than the median hop supports both its ends. This module is
found by its file name (kinds/__init__.py); nothing outside it names the kind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

import pandas as pd

from .. import html as H
from ..reader import FLAG_AUXILIARY_MASK, TestInstance
from ..run_analysis import RunAnalysis, format_number
from .base import NO_UNIT, PAIR_EVIDENCE, SECONDS, US, KindAnalysis, KindMetric, ReportSection


def hop_medians(samples: pd.DataFrame) -> pd.DataFrame:
    """Per hop (rank -> peer): its samples and their median and p99 in microseconds,
    slowest median first."""
    s = samples[(samples["peer"] >= 0) & ((samples["flags"] & FLAG_AUXILIARY_MASK) == 0)]
    # Medians of the nanoseconds, then microseconds: the figures the kind's own
    # attributes hold (hop_p50_ns), rounded the same way wherever they are printed.
    ns = s.assign(ns=(s["t_done_ns"] - s["t_post_ns"]).astype("float64"))
    hops = ns.groupby(["rank", "peer"])["ns"].agg(samples="size", p50="median",
                                                 p99=lambda v: v.quantile(0.99))
    hops[["p50", "p99"]] = hops[["p50", "p99"]] / 1e3
    return hops.reset_index().sort_values("p50", ascending=False, kind="stable")


@dataclass(frozen=True)
class RingFigures:
    """The ring's figures from its rows: every hop's median together, and the slowest
    hop's (hops 0: no hop recorded)."""
    hops: int
    samples: int
    hop_p50_us: float
    slowest_rank: int
    slowest_peer: int
    slowest_p50_us: float


def ring_figures(inst: TestInstance) -> RingFigures:
    s = inst.samples()
    hops = hop_medians(s)
    if hops.empty:
        return RingFigures(0, 0, float("nan"), -1, -1, float("nan"))
    every = float((s["t_done_ns"] - s["t_post_ns"]).astype("float64").median()) / 1e3
    slowest = hops.iloc[0]
    return RingFigures(len(hops), int(hops["samples"].sum()), every, int(slowest["rank"]),
                       int(slowest["peer"]), float(slowest["p50"]))


def ring_lines(f: RingFigures) -> List[str]:
    if not f.hops:
        return ["ring: no hops recorded"]
    return [f"ring of {f.hops} ranks: hop p50 {format_number(f.hop_p50_us)} us over "
            f"{f.samples} hops; slowest hop {f.slowest_rank} -> "
            f"{f.slowest_peer} p50 {format_number(f.slowest_p50_us)} us"]


def ring_metrics(f: RingFigures) -> List[KindMetric]:
    if not f.hops:
        return []
    return [KindMetric(NO_UNIT, "hops", f.hops),
            KindMetric(SECONDS, "hop_p50", f.hop_p50_us * US),
            KindMetric(SECONDS, "slowest_hop_p50", f.slowest_p50_us * US,
                       (("rank", str(f.slowest_rank)), ("peer", str(f.slowest_peer))))]


@dataclass(frozen=True)
class HopFigures:
    """One hop of one ring instance for the report's table: its ends as the report names
    ranks, its samples, median and p99 in microseconds."""
    index: int
    test: str
    hop: str
    samples: int
    p50_us: float
    p99_us: float


def hop_figures(analysis: RunAnalysis) -> Tuple[HopFigures, ...]:
    """Every hop of every ring instance, slowest median first within an instance."""
    out = []
    for inst in analysis.instances:
        if inst.get("kind") not in EXAMPLE.kinds:
            continue
        for _, h in hop_medians(analysis.samples(inst)).iterrows():
            out.append(HopFigures(inst.index, str(inst.get("name")),
                                  f"{analysis.describe_rank(int(h['rank']))} -> "
                                  f"{analysis.describe_rank(int(h['peer']))}",
                                  int(h["samples"]), float(h["p50"]), float(h["p99"])))
    return tuple(out)


def ring_section(hops: Tuple[HopFigures, ...]) -> str:
    rows = [{"#": f"{h.index:04d}", "test": h.test, "hop": h.hop, "samples": h.samples,
             "p50 us": format_number(h.p50_us), "p99 us": format_number(h.p99_us)} for h in hops]
    if not rows:
        return ""
    return H.section("ring", "Token ring", [H.table(pd.DataFrame(rows), left=["test", "hop"])],
                     intro="One row per hop, slowest median first: the token out and the "
                           "receiver's 4-byte acknowledgement back, timed on the sender.")


EXAMPLE = KindAnalysis(("example",), metric="latency", compute=ring_figures, summary_lines=ring_lines,
                       metrics=ring_metrics,
                       report_section=ReportSection("ring", "Token ring", hop_figures, ring_section),
                       evidence=frozenset({PAIR_EVIDENCE}))
ANALYSES = (EXAMPLE,)
