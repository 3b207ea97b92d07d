"""The example kind (src/kinds/example): a token passed round a ring of ranks, the
template of a new kind family (docs/architecture.md, "What each change touches").

Its rows are hops, one per lap on each sending rank (peer: its successor): the token
out and the receiver's acknowledgement back. The summary line and the report section
give each hop's median from the rows; diagnose reads the hops as pairs (one peer per
rank): a hop far slower than the median hop supports both its ends. This module is
found by its file name (kinds/__init__.py); nothing outside it names the kind."""

from __future__ import annotations

from typing import List

import pandas as pd

from .. import html as H
from ..reader import FLAG_AUXILIARY_MASK
from ..run_analysis import RunAnalysis, format_number
from .base import PAIR_EVIDENCE, KindAnalysis, ReportSection


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


def ring_line(inst) -> str:
    """The ring's figures from its rows: every hop's median together, and the slowest
    hop's."""
    s = inst.samples()
    hops = hop_medians(s)
    if hops.empty:
        return "ring: no hops recorded"
    every = float((s["t_done_ns"] - s["t_post_ns"]).astype("float64").median()) / 1e3
    slowest = hops.iloc[0]
    return (f"ring of {len(hops)} ranks: hop p50 {format_number(every)} us over "
            f"{int(hops['samples'].sum())} hops; slowest hop {int(slowest['rank'])} -> "
            f"{int(slowest['peer'])} p50 {format_number(float(slowest['p50']))} us")


def ring_lines(inst) -> List[str]:
    return [ring_line(inst)]


def ring_section(analysis: RunAnalysis) -> str:
    rows = []
    for inst in analysis.instances:
        if inst.get("kind") not in EXAMPLE.kinds:
            continue
        for _, h in hop_medians(analysis.samples(inst)).iterrows():
            rows.append({"#": f"{inst.index:04d}", "test": inst.get("name"),
                         "hop": f"{analysis.describe_rank(int(h['rank']))} -> "
                                f"{analysis.describe_rank(int(h['peer']))}",
                         "samples": int(h["samples"]), "p50 us": format_number(float(h["p50"])),
                         "p99 us": format_number(float(h["p99"]))})
    if not rows:
        return ""
    return H.section("ring", "Token ring", [H.table(pd.DataFrame(rows), left=["test", "hop"])],
                     intro="One row per hop, slowest median first: the token out and the "
                           "receiver's 4-byte acknowledgement back, timed on the sender.")


EXAMPLE = KindAnalysis(("example",), metric="latency", summary_lines=ring_lines,
                       report_section=ReportSection("ring", "Token ring", ring_section),
                       evidence=frozenset({PAIR_EVIDENCE}))
ANALYSES = (EXAMPLE,)
