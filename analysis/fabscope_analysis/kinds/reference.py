"""kind: reference side by side: an external benchmark's figure (ucx_perftest, OSU, perftest,
nccl-tests) next to fabscope's own figure of the same size over the same transport, with
their ratio.

A pair is a passed `reference` instance and a passed, quiet fabscope instance of the matching
kind (latency for the tool's latency tests, bandwidth for its bandwidth tests, allreduce for
all_reduce_perf), the same message size and the transport the tool uses (TRANSPORT_OF_TOOL).
The figures compared:

- latency: the tool's median (reference_median_us: ucx_perftest's 50th percentile, perftest's
  t_typical, OSU's P50 when run with -z) against fabscope's one-way p50 (p50_ns); a tool that
  prints only an average (OSU without -z) against fabscope's mean (mean_ns), in microseconds.
  ucx_perftest, OSU, ib_send_lat report half a round trip like fabscope; ib_read_lat reports
  a read's whole round trip (reference_time_meaning "round trip");
- bandwidth: fabscope's mean (gbps_mean: bytes over the timed span) against the tool's
  overall bandwidth (reference_gbps), in GB/s;
- all_reduce_perf: fabscope's back-to-back bus bandwidth (pipelined_busbw_gbps, nccl-tests'
  own way of timing) against the tool's out-of-place busbw (reference_busbw_gbps).

alltoall_perf is recorded and printed but not paired: fabscope's alltoall is a MoE
dispatch/combine of tokens, not nccl-tests' uniform all-to-all of one size.

ratio = fabscope / reference; `disagreement` = max(ratio, 1/ratio), what accept's
reference_ratio_max bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional

from ..reader import ResultFile, TestInstance
from ..run_analysis import format_bytes, format_number
from .base import BYTES_PER_SECOND, GBPS, SECONDS, US, KindAnalysis, KindMetric, attr_number

REFERENCE_KIND = "reference"
SKIPPED = "skipped"  # the instance status of a tool that is not there
# The fabscope transport each tool measures over.
TRANSPORT_OF_TOOL = {"ucx_perftest": "ucx", "osu_latency": "mpi", "osu_bw": "mpi",
                     "ib_write_bw": "verbs", "ib_read_lat": "verbs", "ib_send_lat": "verbs",
                     "all_reduce_perf": "nccl"}
# The fabscope kind each metric of a reference is compared with.
FABSCOPE_KIND_OF_METRIC = {"latency": "latency", "bandwidth": "bandwidth"}
# Tools compared with another kind than their metric's.
FABSCOPE_KIND_OF_TOOL = {"all_reduce_perf": "allreduce"}
BUSBW_TOOLS = ("all_reduce_perf", "alltoall_perf")


def _number(value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return math.nan
    return v


def _tool(ref: TestInstance) -> str:
    return str(ref.get("reference_tool", ""))


def statistic(ref: TestInstance) -> str:
    """What the reference's figure is: 'median' or 'average' (latency), 'bandwidth',
    'busbw' (nccl-tests)."""
    if _tool(ref) in BUSBW_TOOLS:
        return "busbw"
    if ref.metric == "bandwidth":
        return "bandwidth"
    return "median" if math.isfinite(_number(ref.get("reference_median_us"))) else "average"


def fabscope_figure(inst: TestInstance, ref: TestInstance) -> float:
    """fabscope's figure compared with `ref`'s: one-way p50 (or mean) in us, mean GB/s,
    or back-to-back busbw in GB/s."""
    what = statistic(ref)
    if what == "busbw":
        return _number(inst.get("pipelined_busbw_gbps"))
    if what == "bandwidth":
        return _number(inst.get("gbps_mean"))
    return _number(inst.get("p50_ns" if what == "median" else "mean_ns")) / 1e3


def reference_figure(inst: TestInstance) -> float:
    """The tool's figure: its median (or average) latency in us, its overall bandwidth or
    its busbw in GB/s."""
    what = statistic(inst)
    if what == "busbw":
        return _number(inst.get("reference_busbw_gbps"))
    if what == "bandwidth":
        return _number(inst.get("reference_gbps"))
    return _number(inst.get("reference_median_us" if what == "median" else "reference_average_us"))


LABEL_OF_STATISTIC = {"median": "p50 latency", "average": "mean latency",
                      "bandwidth": "mean bandwidth", "busbw": "busbw"}


@dataclass(frozen=True)
class ReferencePair:
    """fabscope's figure and a reference tool's of the same size over the same transport,
    and their ratio (fabscope / reference; disagreement = max(ratio, 1/ratio))."""
    fabscope_index: int
    reference_index: int
    bytes: Optional[float]
    label: str                  # what the figures are: 'p50 latency', 'mean bandwidth', ...
    unit: str                   # 'us' or 'GB/s'
    tool: str                   # the tool, its version and how it ran
    fabscope_value: float
    reference_value: float
    ratio: float
    disagreement: float


def tool_text(a: TestInstance) -> str:
    """'ucx_perftest 1.15 tag_lat (rc)': the tool, its version and how it ran."""
    text = f"{a.get('reference_tool', '?')} {a.get('reference_version', '?')}"
    if a.get("reference_tool") == "ucx_perftest":
        tls = a.get("reference_tls") or "UCX_TLS from the environment"
        text += f" {a.get('reference_test', '?')} ({tls})"
    if a.get("reference_time_meaning") == "round trip":
        text += " (a whole round trip)"
    return text


def reference_pair(fab: TestInstance, ref: TestInstance) -> ReferencePair:
    mine, theirs = fabscope_figure(fab, ref), reference_figure(ref)
    ratio = (mine / theirs if theirs > 0 and math.isfinite(mine) else math.nan)
    return ReferencePair(fab.index, ref.index, attr_number(fab.get("bytes")),
                         LABEL_OF_STATISTIC[statistic(ref)],
                         "GB/s" if ref.metric == "bandwidth" else "us", tool_text(ref), mine,
                         theirs, ratio, max(ratio, 1 / ratio) if ratio > 0 and math.isfinite(ratio)
                         else math.nan)


def pair_line(p: ReferencePair) -> str:
    return (f"{format_bytes(p.bytes)} {p.label}: fabscope "
            f"{format_number(p.fabscope_value)} {p.unit} (test "
            f"{p.fabscope_index:04d}) vs {p.tool} "
            f"{format_number(p.reference_value)} {p.unit} (test "
            f"{p.reference_index:04d}): ratio fabscope/reference "
            f"{format_number(p.ratio)}")


def comparable(fab: TestInstance, ref: TestInstance) -> bool:
    """Whether fabscope instance `fab` measures what reference instance `ref` does."""
    transport = TRANSPORT_OF_TOOL.get(_tool(ref))
    if transport is None:
        return False  # a tool fabscope has no like-for-like figure for (alltoall_perf)
    kind = FABSCOPE_KIND_OF_TOOL.get(_tool(ref), FABSCOPE_KIND_OF_METRIC.get(ref.metric))
    # nccl-tests measure GPU memory; the host tools host memory.
    memory_ok = (fab.get("memory", "host") != "host") if transport == "nccl" \
        else fab.get("memory", "host") == "host"
    return (fab.get("kind") == kind and fab.get("transport") == transport
            and fab.get("condition") == "quiet" and memory_ok
            and fab.get("pass", "parallel") == "parallel"
            and int(fab.get("bytes", -1)) == int(ref.get("bytes", -2)))


def reference_pairs(result: ResultFile) -> List[ReferencePair]:
    """Every (fabscope instance, reference instance) pair the file has, in index order."""
    instances = result.instances()
    pairs: List[ReferencePair] = []
    for ref in instances:
        if ref.get("kind") != REFERENCE_KIND or ref.get("status") != "passed":
            continue
        for fab in instances:
            if fab.get("status") == "passed" and comparable(fab, ref):
                pairs.append(reference_pair(fab, ref))
    pairs.sort(key=lambda p: (p.fabscope_index, p.reference_index))
    return pairs


def skipped_references_of(result: ResultFile, fab: TestInstance) -> List[TestInstance]:
    """The skipped reference instances (tool not installed) that would have paired with `fab`."""
    return [ref for ref in result.instances()
            if ref.get("kind") == REFERENCE_KIND and ref.get("status") == SKIPPED
            and comparable(fab, ref)]


@dataclass(frozen=True)
class ReferenceFigures:
    """A passed reference instance's own figures: its headline (what, in unit) and the
    others it printed (None: not printed, or the headline itself)."""
    tool: str
    version: str
    what: str                   # 'median latency', 'average latency', 'bandwidth', 'busbw'
    unit: str
    value: float
    average_us: Optional[float]
    gbps: Optional[float]
    bandwidth_mibps: Optional[float]
    command: str


def _shown(value: float) -> Optional[float]:
    return value if math.isfinite(value) else None


def reference_figures(inst: TestInstance) -> Optional[ReferenceFigures]:
    """None when the instance did not pass."""
    if inst.get("status") != "passed":
        return None
    what = statistic(inst)
    return ReferenceFigures(
        str(inst.get("reference_tool", "?")), str(inst.get("reference_version", "?")),
        {"median": "median latency", "average": "average latency", "bandwidth": "bandwidth",
         "busbw": "busbw"}[what], "us" if inst.metric == "latency" else "GB/s",
        reference_figure(inst),
        None if what == "average" else _shown(_number(inst.get("reference_average_us"))),
        None if what == "bandwidth" else _shown(_number(inst.get("reference_gbps"))),
        _shown(_number(inst.get("reference_bandwidth_mibps"))),
        str(inst.get("reference_command", "")))


def reference_lines(f: ReferenceFigures) -> List[str]:
    """A reference instance's own figures for the summary."""
    parts = [f"{f.tool} {f.version}: {f.what} {format_number(f.value)} {f.unit}"]
    for value, text in ((f.average_us, "average {} us"), (f.gbps, "{} GB/s"),
                        (f.bandwidth_mibps, "{} MB/s (2^20)")):
        if value is not None:
            parts.append(text.format(format_number(value)))
    return [", ".join(parts) + f": {f.command}"]


def reference_metrics(f: ReferenceFigures) -> List[KindMetric]:
    """The tool's headline figure, in seconds or bytes per second."""
    unit, scale = (SECONDS, US) if f.unit == "us" else (BYTES_PER_SECOND, GBPS)
    return [KindMetric(unit, f.what.replace(" ", "_"), f.value * scale,
                       (("tool", f.tool), ("tool_version", f.version)))]


ANALYSES = (KindAnalysis((REFERENCE_KIND,), compute=reference_figures, summary_lines=reference_lines,
                         metrics=reference_metrics,
                         reference_tool=True),)
