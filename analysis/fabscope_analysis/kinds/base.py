"""What the analysis asks of a kind: one KindAnalysis per kind module (kinds/<family>.py),
registered by the file's `kind` attribute (kinds/__init__.py). Reporters (summary, report,
export), the serving figures (line rate, fit's measured classes) and diagnose's supporting
evidence ask the registry what a kind contributes instead of testing kind names, so a new
kind's module is the one place that says what the analysis does with it.

A field left at its default means the kind takes no part: no lines under the summary
table, no report section, no line-rate share, no serving class, no supporting evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, FrozenSet, List, Optional, Tuple

import numpy as np

# An instance's data transfers for the line-rate shares: (sending ranks, receiving ranks,
# bytes, seconds), one entry per transfer; -1 for an end the rows do not name.
Transfers = Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

# What of diagnose a kind feeds: its pair model (diagnosis/model.py, the quiet tests of
# several peers per rank) and the supporting-evidence families (diagnosis/supporting.py).
PAIR_FIT = "pair model"
PAIR_EVIDENCE = "pairs"          # quiet pairs tests: a pair far slower than the median pair
SENDER_EVIDENCE = "senders"      # incast: a sender far below the median sender
ARRIVAL_EVIDENCE = "arrivals"    # collectives: a rank that arrives last most iterations


def no_lines(inst) -> List[str]:
    return []


@dataclass(frozen=True)
class ReportSection:
    """A section of the HTML report that only a kind's instances fill."""
    anchor: str
    title: str                                  # as the report's navigation names it
    build: Callable[[object], str]              # RunAnalysis -> HTML ('' when nothing to show)


@dataclass(frozen=True)
class KindAnalysis:
    """The analysis of the kinds named in `kinds` (a family's kinds may share one)."""
    kinds: Tuple[str, ...]
    # the headline metric its instances write (`metric` attribute), '' when it varies
    metric: str = ""
    # summary: the lines printed under the instance's table row
    summary_lines: Callable[[object], List[str]] = no_lines
    # summary: the osu-style batch column (loop time / iterations) beside the percentiles
    batch_column: bool = False
    # report: a section of its own
    report_section: Optional[ReportSection] = None
    # report's faults section: a drill's detection and recovery lines (None: not a drill)
    drill_lines: Optional[Callable[[object], List[str]]] = None
    # diagnose: the pair model and supporting-evidence families its instances feed
    evidence: FrozenSet[str] = frozenset()
    # line rate: the instance's transfers, None when it carries no bandwidth figure
    transfers: Optional[Callable[[object], Optional[Transfers]]] = None
    # its instances hold the requests table (per request: bytes, messages, copy time),
    # which the line rate's limiters read
    request_rows: bool = False
    # line rate: the headline share (the KV push's, what a served request waits for)
    line_rate_headline: bool = False
    # fit / impact: the serving classes (placement.Operation.cls, with a _prefill twin) it
    # measures; each class is measured by exactly one kind
    serving_classes: FrozenSet[str] = frozenset()
    # fit's reads: its operations are collectives (slowest rank per iteration); otherwise
    # point-to-point messages
    collective: bool = False
    # fit's PP class: a stage boundary's sends are the slowest pair between nodes, each
    # message half a round trip (the instance's sample divisor)
    stage_boundary_sends: bool = False
    # GPCNeT's canary tests (plan.gpcnet_tests) are written as this kind
    gpcnet_canary: bool = False
    # accept and summary: a reference tool's figure, compared with fabscope's own
    reference_tool: bool = False
