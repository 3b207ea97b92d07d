"""`summary FILE`: a text table per test, one row per size and condition."""

from __future__ import annotations

import math
import sys
from typing import List, Optional, TextIO

import numpy as np
import pandas as pd

from .errors import CriteriaError
from .serving.impact_rows import mix_instance_rows
from .inventory import KNOWN_COUNTERS, moved_known_counters
from .reference import reference_line, reference_pairs
from .reader import FLAG_AUXILIARY_MASK, FLAG_CHUNK_GAP, FLAG_FIRST_BYTE, ResultFile
from .run_analysis import RunAnalysis, format_bytes, format_number
from .serving.line_rate import summary_lines
from .verdict import compute_verdict


def run_header(result: ResultFile) -> List[str]:
    a = result.attrs
    lines = [f"fabscope result {result.path}",
             f"  run {a.get('run_id', '?')}  tool {a.get('tool_version', '?')}  scenario "
             f"{a.get('scenario_name', '?')}  ranks {a.get('nranks', '?')} on "
             f"{a.get('nhosts', '?')} hosts  started {a.get('started_utc', '?')}"]
    if not result.complete:
        lines.append(f"  WARNING: incomplete file (complete=0, exit_code={a.get('exit_code')}): "
                     "the run did not end normally; the tests below may be partial or missing")
    return lines


def validity_lines(result: ResultFile) -> List[str]:
    """/validity first of all: what makes the numbers below meaningless or doubtful."""
    t = result.validity()
    if t.empty:
        return []
    yielded = int(result.attrs.get("waits_yield", 0)) == 1
    lines = [f"VALIDITY: {len(t)} finding(s) make the numbers below doubtful"
             f"{' (waits yielded)' if yielded else ''}:"]
    for r in t.to_dict("records"):
        host = "every host" if r["host"] in ("", "*") else r["host"]
        lines.append(f"  ! {r['what']} on {host}: {format_number(r['value'])} "
                     f"(limit {format_number(r['limit'])}): {r['effect']}")
    return lines


def summary_tables(analysis: RunAnalysis) -> List[str]:
    frame = analysis.summary_frame()
    if frame.empty:
        return ["(no test instances in this file)"]
    out: List[str] = []
    for name, group in frame.groupby("name", sort=False):
        first = group.iloc[0]
        out.append("")
        out.append(f"== {name}  ({first['kind']}, {first['transport']}/{first['memory']}, "
                   f"{'GB/s; p99 = slow tail' if first['unit'] == 'GB/s' else 'latency in us'})")
        batches = batch_figures(analysis, group)
        out.append(pd.DataFrame(_instance_rows(analysis, group, batches)).to_string(index=False))
        if batches:
            out.append(batch_footnote([analysis.result.test(i) for i in batches], analysis.labelled))
        out.extend(_level_lines(analysis, name))
        for _, r in group.drop_duplicates("index").iterrows():
            out.extend(_instance_lines(analysis, group, r))
    return out


def _instance_rows(analysis: RunAnalysis, group, batches) -> List[dict]:
    """summary's table rows of one test's instances and scopes."""
    rows = []
    for _, r in group.iterrows():
        scope = {"scope": r["scope"] or "-"} if analysis.labelled else {}
        batch = {"batch": batches.get(int(r["index"]), "-")} if batches else {}
        rows.append({
            "#": f"{int(r['index']):04d}", "bytes": format_bytes(r["bytes"]),
            "condition": r["label"],
            **scope,
            "samples": int(r["samples"]),
            "p50": format_number(r["p50"]), "p99": format_number(r["p99"]),
            "p99.9": format_number(r["p99.9"]), "worst": format_number(r["worst"]),
            **batch,
            "impact mean/p99": ("-" if pd.isna(r["impact_p99"]) and pd.isna(r["impact_mean"])
                                else f"{format_number(r['impact_mean'])}/"
                                     f"{format_number(r['impact_p99'])}"),
            "status": r["status"] + (f" [{r['flagged']}]" if r["flagged"] else ""),
            "stragglers": r["stragglers"] or "-",
        })
    return rows


def _level_lines(analysis: RunAnalysis, name) -> List[str]:
    """The test's figures by topology level, when its ranks carry topology labels."""
    out: List[str] = []
    by_level = analysis.level_frame(name)
    if not by_level.empty:
        out.append("  by topology level (same-node, same-leaf, same-pod, cross-pod; "
                   "cross-node: different nodes without leaf labels):")
        level_rows = [{
            "#": f"{int(r['index']):04d}", "bytes": format_bytes(r["bytes"]),
            "condition": r["label"],
            **({"scope": r["scope"] or "-"} if analysis.labelled else {}),
            "level": r["level"], "pairs": r["pairs"], "samples": r["samples"],
            "p50": format_number(r["p50"]), "p99": format_number(r["p99"]),
            "worst": format_number(r["worst"]),
        } for _, r in by_level.iterrows()]
        out.extend("  " + line for line in
                   pd.DataFrame(level_rows).to_string(index=False).splitlines())
    return out


def _instance_lines(analysis: RunAnalysis, group, r) -> List[str]:
    """The lines under the table for one instance: its error, its kind's own figures, the
    counters that moved, and whether it spans sites."""
    out: List[str] = []
    if r["error"]:
        out.append(f"  {int(r['index']):04d} error: {r['error']}")
    if r["kind"] == "api":
        out.append(f"  {int(r['index']):04d} " +
                   api_line(analysis.result.test(int(r["index"]))))
    if r["kind"] == "reference":
        line = reference_line(analysis.result.test(int(r["index"])))
        if line:
            out.append(f"  {int(r['index']):04d} " + line)
    if r["kind"] == "mix":
        out.extend(f"  {int(r['index']):04d} " + line
                   for line in mix_lines(analysis.result.test(int(r["index"]))))
    if r["kind"] == "fault":
        out.extend(f"  {int(r['index']):04d} " + line
                   for line in fault_lines(analysis.result.test(int(r["index"]))))
    if r["kind"] == "alltoall":
        out.append(f"  {int(r['index']):04d} " +
                   alltoall_line(analysis.result.test(int(r["index"]))))
    if r["kind"] == "allreduce":
        line = allreduce_line(analysis.result.test(int(r["index"])))
        if line:
            out.append(f"  {int(r['index']):04d} " + line)
    moved = moved_known_counters(analysis.result.test(int(r["index"])).counters(),
                                 analysis.hosts)
    if moved:
        analysis.counters_named.update(m.split(" ", 1)[0] for m in moved[:4])
        out.append(f"  {int(r['index']):04d} counters moved: " + ", ".join(moved[:4]) +
                   (f" and {len(moved) - 4} more" if len(moved) > 4 else ""))
    if r["spans_sites"]:
        scopes = group[group["index"] == r["index"]]["scope"]
        if any(str(x).startswith("group across") for x in scopes):
            out.append(f"  {int(r['index']):04d} the measuring group spans sites "
                       f"{r['spans_sites']}: a WAN path, not one cluster fabric")
        else:
            out.append(f"  {int(r['index']):04d} the measuring ranks span sites "
                       f"{r['spans_sites']}: rows are split by site scope; group-wide "
                       "attributes of this test (if any) span sites")
    return out


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


BATCH_KINDS = ("latency", "bandwidth", "bibw")


def batch_figures(analysis: RunAnalysis, group: pd.DataFrame) -> dict:
    """{instance index: batch figure} for the point-to-point instances of one test whose
    file holds the figure (files written before it existed have none)."""
    if group.iloc[0]["kind"] not in BATCH_KINDS:
        return {}
    figures = {int(i): batch_figure(analysis.result.test(int(i))) for i in group["index"].unique()}
    return {i: f for i, f in figures.items() if f != "-"}


def batch_figure(inst) -> str:
    """A point-to-point instance's batch figure in its table's unit (us one-way, or GB/s):
    loop time / iterations, the way osu_latency and osu_bw report; '-' for a file
    written before the figure existed."""
    mean = _number(inst.get("batch_mean_ns"))
    if mean is None:
        return "-"
    gbps = _number(inst.get("batch_gbps"))
    return format_number(gbps if gbps is not None else mean / 1e3)


def batch_footnote(instances, labelled: bool) -> str:
    """One line under a table with a batch column: what the figure is, the clock cost taken
    out and where a bandwidth window's messages land."""
    clocks = sorted({format_number(_number(i.get("clock_read_ns"))) for i in instances
                     if _number(i.get("clock_read_ns")) is not None})
    slices = sorted({int(i.get("receive_slices")) for i in instances
                     if i.get("receive_slices") is not None})
    text = ("  batch: each pair's timed loop / iterations, as osu_latency (average) and osu_bw report"
            + ("; all scopes together" if labelled else ""))
    if clocks:
        text += f"; {', '.join(clocks)} ns per clock read taken out"
    if slices:
        text += "; receive buffers: " + ", ".join(
            f"{n} (one, as osu_bw)" if n == 1 else f"{n} distinct" for n in slices)
    return text


def mix_lines(inst) -> List[str]:
    """A serving mix's classes: isolated and together p50/p99 and the inflation (together /
    isolated, mean and p99), from the raw samples (impact_rows.mix_instance_rows)."""
    rows = mix_instance_rows(inst)
    lines = []
    for r in rows:
        if r["condition"] != "together":
            continue
        iso = next((i for i in rows if i["series"] == r["series"] and i["condition"] == "isolated"),
                   None)
        before = (f"isolated p50/p99 {format_number(iso['p50_ms'] * 1e3)}/"
                  f"{format_number(iso['p99_ms'] * 1e3)} us, " if iso else "no isolated phase, ")
        lines.append(f"mix {r['class']}: {before}together {format_number(r['p50_ms'] * 1e3)}/"
                     f"{format_number(r['p99_ms'] * 1e3)} us; inflation (together/isolated) mean "
                     f"x{format_number(r.get('inflation_mean', float('nan')))}, p99 "
                     f"x{format_number(r.get('inflation_p99', float('nan')))}")
    return lines


def _seconds(value: float) -> str:
    return f"{format_number(value)} s"


def _number(value) -> Optional[float]:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def expected_phrase(stack: str, seconds, basis: str = "") -> str:
    """'<stack> as configured here would take about N s' (or never, or not modelled)."""
    v = _number(seconds)
    if v is None or math.isnan(v):
        return f"{stack}: not modelled" + (f" ({basis})" if basis else "")
    if math.isinf(v):
        text = f"{stack} as configured here would never report it"
    elif v == 0:
        text = f"{stack} as configured here would report it at once"
    else:
        # "about": a budget, not a measurement; whole seconds from 10 s on.
        text = f"{stack} as configured here would take about " + (f"{v:.0f} s" if v >= 10 else _seconds(v))
    return text + (f" ({basis})" if basis else "")


def fault_lines(inst) -> List[str]:
    """A fault drill: its measured detection next to what the stack in use (and NCCL
    and verbs on InfiniBand) would take on its own with the settings recorded, and the
    return to baseline of a fault that ended."""
    g = inst.get
    lines = []
    false_losses = _number(g("false_losses"))
    if false_losses:
        # First: with a live peer declared lost the figures below do not describe the fault.
        lines.append(f"false losses: {int(false_losses)} live peer(s) declared lost, so the drill "
                     f"cannot judge the fault: {g('false_loss_detail', '')}")
    detected = _number(g("detection_ms"))
    if detected is not None and detected >= 0:
        mine = (f"fabscope's drill detected in {_seconds(detected / 1e3)}"
                f" ({g('detection_mechanism', '?')})")
    else:
        mine = "fabscope's drill did not detect it"
    stack = g("expected_detection_stack")
    if stack:
        lines.append(f"{g('fault', 'fault')}: {mine}; "
                     + expected_phrase(str(stack), g("expected_detection_s"),
                                       str(g("expected_detection_basis", ""))))
        others = [expected_phrase(name, g(key)) for key, name in
                  (("expected_nccl_ib_s", "NCCL over InfiniBand"),
                   ("expected_verbs_qp_s", "a verbs RC queue pair")) if g(key) is not None]
        if others:
            lines.append("  on InfiniBand: " + "; ".join(others))
    else:
        lines.append(f"{g('fault', 'fault')}: {mine}")
    aborts = g("abort_per_survivor")
    if aborts is not None:
        # A drill over NCCL: every survivor aborts its communicator; nothing is re-routed.
        slowest = _number(g("abort_max_ms"))
        lines.append(f"communicator abort: "
                     + (f"slowest {format_number(slowest)} ms" if slowest is not None and slowest >= 0
                        else "none returned")
                     + f" (abort_within {format_number(g('abort_within_ms'))} ms): {aborts}")
        if g("reroute"):
            lines.append(f"re-route: {g('reroute')}")
    verdict = g("return_to_baseline")
    if verdict:
        worst = _number(g("baseline_ms"))
        back = (f"worst {format_number(worst)} ms after the fault ended" if worst is not None
                and worst >= 0 else "missing")
        lines.append(f"return to baseline: {verdict} ({back}; recover_within "
                     f"{format_number(g('recover_within_ms'))} ms; rank {g('carrier_rank')} "
                     f"against the victim's pre-fault {format_number(g('victim_pre_fault_rps'))} "
                     f"req/s, p99 {format_number(g('victim_pre_fault_p99_ms'))} ms): "
                     f"{g('fault_cycles', '')}")
    return lines


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


def api_line(inst) -> str:
    """A front-end test's request anatomy: the headline rows are whole requests (connect
    -> last byte); time to first byte and chunk gaps are flagged rows of their own, the
    connect time a column of api_requests."""
    s = inst.samples()
    took = (s["t_done_ns"] - s["t_post_ns"]).astype("float64") / 1e3
    flags = s["flags"].astype("int64")

    def pct(values) -> str:
        if len(values) == 0:
            return "-"
        return "/".join(format_number(float(np.percentile(values, q))) for q in (50, 99, 99.9))

    rows = inst.api_requests()
    connect = rows.loc[rows["connect_ns"] >= 0, "connect_ns"].to_numpy(dtype="float64") / 1e3
    ok = int((rows["status"] == "ok").sum()) if not rows.empty else 0
    errors = str(inst.get("request_errors", "") or "")
    return (f"API over {inst.get('interface', '?')} ({inst.get('network', '?')}): {ok}/{len(rows)} "
            f"requests ok; p50/p99/p99.9 us: connect {pct(connect)}, first byte "
            f"{pct(took[(flags & FLAG_FIRST_BYTE) != 0])}, chunk gap "
            f"{pct(took[(flags & FLAG_CHUNK_GAP) != 0])}, whole answer "
            f"{pct(took[(flags & FLAG_AUXILIARY_MASK) == 0])}" +
            (f"; errors by server: {errors}" if errors else ""))


def reference_lines(result: ResultFile) -> List[str]:
    """fabscope's figure and a reference tool's of the same size and transport (reference.py)."""
    pairs = reference_pairs(result)
    if not pairs:
        return []
    return ["", "reference tools side by side (ratio = fabscope / reference):"] + \
        [f"  {p.line()}" for p in pairs]


def verdict_lines(result: ResultFile, criteria=None) -> List[str]:
    """The verdict first (verdict.compute_verdict: the same as accept and the report)."""
    try:
        verdict = compute_verdict(result, criteria)
    except CriteriaError as exc:
        return [f"verdict: unavailable ({exc})"]
    failing = [r for r in verdict.reasons if r.failing]
    lines = [verdict.line()]
    lines += [f"  - {r.text}" for r in failing[:8]]
    if len(failing) > 8:
        lines.append(f"  - ... and {len(failing) - 8} more (accept lists every check)")
    return lines


def print_summary(result: ResultFile, stream: Optional[TextIO] = None, criteria=None) -> None:
    analysis = RunAnalysis(result)
    for line in (validity_lines(result) + verdict_lines(result, criteria) + run_header(result) +
                 summary_lines(result) + summary_tables(analysis) + reference_lines(result)):
        print(line, file=stream)
    print("", file=stream)
    print("impact = congested/quiet (latency) or quiet/congested (bandwidth): >1 is worse. "
          "stragglers: ranks whose p99 exceeds 2x the median rank p99.", file=stream)
    for name in sorted(analysis.counters_named):
        print(f"counter {name}: {KNOWN_COUNTERS[name]}", file=stream)
    if analysis.labelled:
        print("scope: site=X both ends in site X; inter-site X<->Y between sites (a WAN path, "
              "never mixed with a site's own fabric); group: a collective's whole group; "
              "? = rank without a site label. Every number is over one scope's samples.",
              file=stream)
