"""What the analysis asks of a kind: one KindAnalysis per kind module (kinds/<family>.py),
registered by the file's `kind` attribute (kinds/__init__.py). Reporters (summary, report,
export), the serving figures (line rate, fit's measured classes) and diagnose's supporting
evidence ask the registry what a kind contributes instead of testing kind names, so a new
kind's module is the one place that says what the analysis does with it.

A kind computes apart from rendering, google/benchmark's way: measure once, render many
ways. `compute` reads one instance once over the run and returns the kind's figures, a
frozen dataclass of numbers and text (kinds/<family>.py); `summary_lines` and
`drill_lines` turn those figures into text, `metrics` into export's OpenMetrics samples
(KindMetric), a ReportSection's `render` turns its `compute`'s figures into HTML. A render function takes the figures alone (never the
file, an instance or its samples), so summary and report print what one computation
found; analysis/tests/test_kind_render.py holds that rule.

A field left at its default means the kind takes no part: no lines under the summary
table, no report section, no line-rate share, no serving class, no supporting evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, FrozenSet, List, Optional, Sequence, Tuple, Union

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


# A kind's figures: a frozen dataclass of numbers and text (fields typed int, float, str,
# bool, Optional or tuples of those, or other such dataclasses).
Figures = object


def no_figures(inst) -> None:
    return None


def no_lines(figures) -> List[str]:
    return []


# The units of the kinds' own export families (export.py: fabscope_kind_seconds,
# fabscope_kind_bytes_per_second, fabscope_kind_value).
SECONDS = "seconds"
BYTES_PER_SECOND = "bytes_per_second"
NO_UNIT = ""          # a count or a ratio
US = 1e-6             # seconds per microsecond
GBPS = 1e9            # bytes per second per GB/s (10^9 B/s, docs/analysis.md)


@dataclass(frozen=True)
class KindMetric:
    """One sample of a kind's own figures for export: the unit picks the family, `figure`
    names what it is, `labels` add the kind's own (a stat, a class, a tool); a value of
    None or NaN is left out, as every export figure that cannot be computed."""
    unit: str
    figure: str
    value: Optional[float]
    labels: Tuple[Tuple[str, str], ...] = ()


def no_metrics(figures) -> List[KindMetric]:
    return []


def attr_number(value) -> Optional[Union[int, float]]:
    """An attribute's value as a number for the figures (an integer stays one, so it prints
    as the attribute holds it); None when it is absent or not a number."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class ReportSection:
    """A section of the HTML report that only a kind's instances fill: `compute` reads the
    run once (RunAnalysis -> a tuple of figures, one per instance it shows), `render` turns
    that tuple into HTML ('' when nothing to show)."""
    anchor: str
    title: str                                  # as the report's navigation names it
    compute: Callable[[object], Sequence[Figures]]
    render: Callable[[Sequence[Figures]], str]


@dataclass(frozen=True)
class KindAnalysis:
    """The analysis of the kinds named in `kinds` (a family's kinds may share one)."""
    kinds: Tuple[str, ...]
    # the headline metric its instances write (`metric` attribute), '' when it varies
    metric: str = ""
    # once over the run: one instance's figures (None when it has none to show)
    compute: Callable[[object], Optional[Figures]] = no_figures
    # summary: the lines printed under the instance's table row, from its figures
    summary_lines: Callable[[Figures], List[str]] = no_lines
    # export: its figures as OpenMetrics samples (families fabscope_kind_*)
    metrics: Callable[[Figures], List[KindMetric]] = no_metrics
    # summary: the osu-style batch column (loop time / iterations) beside the percentiles
    batch_column: bool = False
    # report: a section of its own
    report_section: Optional[ReportSection] = None
    # report's faults section: a drill's detection and recovery lines, from its figures
    # (None: not a drill)
    drill_lines: Optional[Callable[[Figures], List[str]]] = None
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
