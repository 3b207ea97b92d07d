"""kind: reference side by side: an external benchmark's figure (ucx_perftest today) next to
fabscope's own figure of the same size over the same transport, with their ratio.

A pair is a passed `reference` instance and a passed, quiet fabscope instance of the matching
kind (latency for the tool's *_lat tests, bandwidth for its *_bw tests), the same message
size and the transport the tool uses (ucx for ucx_perftest). The figures compared:

- latency: fabscope's one-way p50 (p50_ns) against the tool's median (reference_median_us;
  ucx_perftest's latency tests report half a round trip too), in microseconds;
- bandwidth: fabscope's mean (gbps_mean: bytes over the timed span) against the tool's
  overall bandwidth (reference_gbps), in GB/s.

ratio = fabscope / reference; `disagreement` = max(ratio, 1/ratio), what accept's
reference_ratio_max bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List

from .reader import ResultFile, TestInstance
from .run_analysis import format_bytes, format_number

REFERENCE_KIND = "reference"
# The fabscope transport each tool measures over.
TRANSPORT_OF_TOOL = {"ucx_perftest": "ucx"}
# The fabscope kind each metric of a reference is compared with.
FABSCOPE_KIND_OF_METRIC = {"latency": "latency", "bandwidth": "bandwidth"}


def _number(value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return math.nan
    return v


def fabscope_figure(inst: TestInstance) -> float:
    """fabscope's figure compared with a reference: one-way p50 in us, or mean GB/s."""
    if inst.metric == "bandwidth":
        return _number(inst.get("gbps_mean"))
    return _number(inst.get("p50_ns")) / 1e3


def reference_figure(inst: TestInstance) -> float:
    """The tool's figure: its median latency in us, or its overall bandwidth in GB/s."""
    if inst.metric == "bandwidth":
        return _number(inst.get("reference_gbps"))
    return _number(inst.get("reference_median_us"))


@dataclass
class ReferencePair:
    fabscope: TestInstance
    reference: TestInstance
    fabscope_value: float
    reference_value: float

    @property
    def metric(self) -> str:
        return self.reference.metric

    @property
    def unit(self) -> str:
        return "GB/s" if self.metric == "bandwidth" else "us"

    @property
    def ratio(self) -> float:
        if not (self.reference_value > 0) or not math.isfinite(self.fabscope_value):
            return math.nan
        return self.fabscope_value / self.reference_value

    @property
    def disagreement(self) -> float:
        r = self.ratio
        return max(r, 1 / r) if r > 0 and math.isfinite(r) else math.nan

    def tool_text(self) -> str:
        a = self.reference
        tls = a.get("reference_tls") or "UCX_TLS from the environment"
        return (f"{a.get('reference_tool', '?')} {a.get('reference_version', '?')} "
                f"{a.get('reference_test', '?')} ({tls})")

    def line(self) -> str:
        label = "p50 latency" if self.metric == "latency" else "mean bandwidth"
        return (f"{format_bytes(self.fabscope.get('bytes'))} {label}: fabscope "
                f"{format_number(self.fabscope_value)} {self.unit} (test "
                f"{self.fabscope.index:04d}) vs {self.tool_text()} "
                f"{format_number(self.reference_value)} {self.unit} (test "
                f"{self.reference.index:04d}): ratio fabscope/reference "
                f"{format_number(self.ratio)}")


def reference_pairs(result: ResultFile) -> List[ReferencePair]:
    """Every (fabscope instance, reference instance) pair the file has, in index order."""
    instances = result.instances()
    pairs: List[ReferencePair] = []
    for ref in instances:
        if ref.get("kind") != REFERENCE_KIND or ref.get("status") != "passed":
            continue
        transport = TRANSPORT_OF_TOOL.get(str(ref.get("reference_tool", "")))
        kind = FABSCOPE_KIND_OF_METRIC.get(ref.metric)
        for fab in instances:
            if (fab.get("kind") == kind and fab.get("status") == "passed"
                    and fab.get("transport") == transport and fab.get("condition") == "quiet"
                    and fab.get("memory", "host") == "host"
                    and fab.get("pass", "parallel") == "parallel"
                    and int(fab.get("bytes", -1)) == int(ref.get("bytes", -2))):
                pairs.append(ReferencePair(fab, ref, fabscope_figure(fab), reference_figure(ref)))
    pairs.sort(key=lambda p: (p.fabscope.index, p.reference.index))
    return pairs


def reference_line(inst: TestInstance) -> str:
    """A reference instance's own figures for the summary ('' when it did not pass)."""
    if inst.get("status") != "passed":
        return ""
    what = "median latency" if inst.metric == "latency" else "bandwidth"
    unit = "GB/s" if inst.metric == "bandwidth" else "us"
    return (f"{inst.get('reference_tool', '?')} {inst.get('reference_version', '?')}: {what} "
            f"{format_number(reference_figure(inst))} {unit}, average "
            f"{format_number(_number(inst.get('reference_average_us')))} us, "
            f"{format_number(_number(inst.get('reference_bandwidth_mibps')))} MB/s (2^20): "
            f"{inst.get('reference_command', '')}")
