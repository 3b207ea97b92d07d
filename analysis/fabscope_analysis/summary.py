"""`summary FILE`: a text table per test, one row per size and condition."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, TextIO, Union

import pandas as pd

from .errors import CriteriaError
from .inventory import KNOWN_COUNTERS, moved_known_counters
from .kinds import KindResults, analysis_of, compute_kinds
from .kinds.reference import ReferencePair, pair_line, reference_pairs
from .reader import ResultFile
from .run_analysis import RunAnalysis, format_bytes, format_number, number_or_none
from .serving.line_rate import LineRate, compute_line_rate, text_lines
from .verdict import Verdict, compute_verdict


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


def validity_lines(t: pd.DataFrame, attrs) -> List[str]:
    """/validity first of all: what makes the numbers below meaningless or doubtful."""
    if t.empty:
        return []
    yielded = int(attrs.get("waits_yield", 0)) == 1
    lines = [f"VALIDITY: {len(t)} finding(s) make the numbers below doubtful"
             f"{' (waits yielded)' if yielded else ''}:"]
    for r in t.to_dict("records"):
        host = "every host" if r["host"] in ("", "*") else r["host"]
        lines.append(f"  ! {r['what']} on {host}: {format_number(r['value'])} "
                     f"(limit {format_number(r['limit'])}): {r['effect']}")
    return lines


@dataclass
class TestTable:
    """One test of the summary, computed once: its rows (RunAnalysis.summary_frame, one
    per instance and site scope), its split by topology level, its batch figures and
    the known counters each instance moved; summary_tables only formats them."""
    name: str
    rows: pd.DataFrame
    levels: pd.DataFrame
    batches: Dict[int, float]             # instance index -> batch figure (table's unit)
    batch_clocks_ns: List[float]          # clock read costs taken out of the batch figures
    batch_slices: List[int]               # receive buffers of the bandwidth windows
    counters_moved: Dict[int, List[str]]  # instance index -> moved_known_counters


def compute_tables(analysis: RunAnalysis) -> List[TestTable]:
    frame = analysis.summary_frame()
    if frame.empty:
        return []
    tables = []
    for name, group in frame.groupby("name", sort=False):
        batches = batch_figures(analysis, group)
        with_batch = [analysis.result.test(i) for i in batches]
        clocks = [number_or_none(i.get("clock_read_ns")) for i in with_batch]
        slices = [int(i.get("receive_slices")) for i in with_batch
                  if i.get("receive_slices") is not None]
        moved = {int(i): moved_known_counters(analysis.result.test(int(i)).counters(),
                                              analysis.hosts)
                 for i in group["index"].unique()}
        tables.append(TestTable(name, group, analysis.level_frame(name), batches,
                                [c for c in clocks if c is not None], slices, moved))
    return tables


def counters_named(tables: List[TestTable]) -> List[str]:
    """The known counters the summary's lines name (the first four moved per instance)."""
    return sorted({m.split(" ", 1)[0] for t in tables for moved in t.counters_moved.values()
                   for m in moved[:4]})


def summary_tables(tables: List[TestTable], kinds: KindResults, labelled: bool) -> List[str]:
    if not tables:
        return ["(no test instances in this file)"]
    out: List[str] = []
    for table in tables:
        group = table.rows
        first = group.iloc[0]
        out.append("")
        out.append(f"== {table.name}  ({first['kind']}, {first['transport']}/{first['memory']}, "
                   f"{'GB/s; p99 = slow tail' if first['unit'] == 'GB/s' else 'latency in us'})")
        batches = {i: format_number(v) for i, v in table.batches.items()}
        out.append(pd.DataFrame(_instance_rows(labelled, group, batches)).to_string(index=False))
        if batches:
            out.append(batch_footnote(table.batch_clocks_ns, table.batch_slices, labelled))
        out.extend(_level_lines(table.levels, labelled))
        for _, r in group.drop_duplicates("index").iterrows():
            out.extend(_instance_lines(table, kinds, r))
    return out


def _instance_rows(labelled: bool, group, batches) -> List[dict]:
    """summary's table rows of one test's instances and scopes."""
    rows = []
    for _, r in group.iterrows():
        scope = {"scope": r["scope"] or "-"} if labelled else {}
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


def _level_lines(by_level: pd.DataFrame, labelled: bool) -> List[str]:
    """The test's figures by topology level, when its ranks carry topology labels."""
    out: List[str] = []
    if not by_level.empty:
        out.append("  by topology level (same-node, same-leaf, same-pod, cross-pod; "
                   "cross-node: different nodes without leaf labels):")
        level_rows = [{
            "#": f"{int(r['index']):04d}", "bytes": format_bytes(r["bytes"]),
            "condition": r["label"],
            **({"scope": r["scope"] or "-"} if labelled else {}),
            "level": r["level"], "pairs": r["pairs"], "samples": r["samples"],
            "p50": format_number(r["p50"]), "p99": format_number(r["p99"]),
            "worst": format_number(r["worst"]),
        } for _, r in by_level.iterrows()]
        out.extend("  " + line for line in
                   pd.DataFrame(level_rows).to_string(index=False).splitlines())
    return out


def _instance_lines(table: TestTable, kinds: KindResults, r) -> List[str]:
    """The lines under the table for one instance: its error, its kind's own figures, the
    counters that moved, and whether it spans sites."""
    out: List[str] = []
    index = int(r["index"])
    if r["error"]:
        out.append(f"  {index:04d} error: {r['error']}")
    out.extend(f"  {index:04d} " + line for line in kinds.summary_lines(index))
    moved = table.counters_moved.get(index, [])
    if moved:
        out.append(f"  {index:04d} counters moved: " + ", ".join(moved[:4]) +
                   (f" and {len(moved) - 4} more" if len(moved) > 4 else ""))
    if r["spans_sites"]:
        scopes = table.rows[table.rows["index"] == r["index"]]["scope"]
        if any(str(x).startswith("group across") for x in scopes):
            out.append(f"  {index:04d} the measuring group spans sites "
                       f"{r['spans_sites']}: a WAN path, not one cluster fabric")
        else:
            out.append(f"  {index:04d} the measuring ranks span sites "
                       f"{r['spans_sites']}: rows are split by site scope; group-wide "
                       "attributes of this test (if any) span sites")
    return out


def batch_figures(analysis: RunAnalysis, group: pd.DataFrame) -> Dict[int, float]:
    """{instance index: batch figure} for the point-to-point instances of one test whose
    file holds the figure (files written before it existed have none)."""
    if not analysis_of(group.iloc[0]["kind"]).batch_column:
        return {}
    figures = {int(i): batch_figure(analysis.result.test(int(i))) for i in group["index"].unique()}
    return {i: f for i, f in figures.items() if f is not None}


def batch_figure(inst) -> Optional[float]:
    """A point-to-point instance's batch figure in its table's unit (us one-way, or GB/s):
    loop time / iterations, the way osu_latency and osu_bw report; None for a file
    written before the figure existed (or one that holds no finite figure)."""
    mean = number_or_none(inst.get("batch_mean_ns"))
    if mean is None:
        return None
    gbps = number_or_none(inst.get("batch_gbps"))
    value = gbps if gbps is not None else mean / 1e3
    return value if math.isfinite(value) else None


def batch_footnote(clocks_ns: List[float], slices: List[int], labelled: bool) -> str:
    """One line under a table with a batch column: what the figure is, the clock cost taken
    out and where a bandwidth window's messages land."""
    clocks = sorted({format_number(c) for c in clocks_ns})
    text = ("  batch: each pair's timed loop / iterations, as osu_latency (average) and osu_bw report"
            + ("; all scopes together" if labelled else ""))
    if clocks:
        text += f"; {', '.join(clocks)} ns per clock read taken out"
    if slices:
        text += "; receive buffers: " + ", ".join(
            f"{n} (one, as osu_bw)" if n == 1 else f"{n} distinct" for n in sorted(set(slices)))
    return text


@dataclass
class RunSummary:
    """What summary prints, computed once over the run; render_text only formats it."""
    result: ResultFile
    analysis: RunAnalysis
    verdict: Union[Verdict, CriteriaError]   # the error when the criteria cannot be read
    line_rate: LineRate
    references: List[ReferencePair]
    kinds: KindResults                       # each kind's own figures (kinds/)
    tables: List[TestTable]
    validity: pd.DataFrame                   # /validity


def compute_summary(result: ResultFile, criteria=None) -> RunSummary:
    try:
        verdict: Union[Verdict, CriteriaError] = compute_verdict(result, criteria)
    except CriteriaError as exc:
        verdict = exc
    analysis = RunAnalysis(result)
    return RunSummary(result, analysis, verdict, compute_line_rate(result),
                      reference_pairs(result), compute_kinds(analysis, summary=True),
                      compute_tables(analysis), result.validity())


def reference_lines(pairs: List[ReferencePair]) -> List[str]:
    """fabscope's figure and a reference tool's of the same size and transport
    (kinds/reference.py)."""
    if not pairs:
        return []
    return ["", "reference tools side by side (ratio = fabscope / reference):"] + \
        [f"  {pair_line(p)}" for p in pairs]


def verdict_lines(verdict: Union[Verdict, CriteriaError]) -> List[str]:
    """The verdict first (verdict.compute_verdict: the same as accept and the report)."""
    if isinstance(verdict, CriteriaError):
        return [f"verdict: unavailable ({verdict})"]
    failing = [r for r in verdict.reasons if r.failing]
    lines = [verdict.line()]
    lines += [f"  - {r.text}" for r in failing[:8]]
    if len(failing) > 8:
        lines.append(f"  - ... and {len(failing) - 8} more (accept lists every check)")
    return lines


def render_text(summary: RunSummary) -> List[str]:
    result = summary.result
    return (validity_lines(summary.validity, result.attrs) + verdict_lines(summary.verdict) +
            run_header(result) + text_lines(summary.line_rate) +
            summary_tables(summary.tables, summary.kinds, summary.analysis.labelled) +
            reference_lines(summary.references))


def print_summary(result: ResultFile, stream: Optional[TextIO] = None, criteria=None) -> None:
    summary = compute_summary(result, criteria)
    analysis = summary.analysis
    for line in render_text(summary):
        print(line, file=stream)
    print("", file=stream)
    print("impact = congested/quiet (latency) or quiet/congested (bandwidth): >1 is worse. "
          "stragglers: ranks whose p99 exceeds 2x the median rank p99.", file=stream)
    for name in counters_named(summary.tables):
        print(f"counter {name}: {KNOWN_COUNTERS[name]}", file=stream)
    if analysis.labelled:
        print("scope: site=X both ends in site X; inter-site X<->Y between sites (a WAN path, "
              "never mixed with a site's own fabric); group: a collective's whole group; "
              "? = rank without a site label. Every number is over one scope's samples.",
              file=stream)
