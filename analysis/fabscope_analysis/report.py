"""`report FILE -o report.html`: one self-contained page with embedded PNG figures.

Sections whose data is absent from the file are left out rather than shown empty.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np
import pandas as pd

from . import html as H
from . import plots
from .diagnose import culprits_html
from .errors import CriteriaError
from .serving.impact_text import impact_html, report_impact
from .serving.line_rate import compute_line_rate, html_block
from .kinds import compute_kinds
from .report_records import (compute_counter_figures, compute_fault_figures, compute_inventory,
                             counter_section, fault_section, inventory_section)
from .reader import ResultFile, TestInstance
from .run_analysis import RunAnalysis, condition_label, format_bytes, format_number
from .stats import is_bandwidth, unit_of
from .verdict import compute_verdict



def _cases(analysis: RunAnalysis) -> "OrderedDict[str, List[TestInstance]]":
    cases: "OrderedDict[str, List[TestInstance]]" = OrderedDict()
    for inst in analysis.instances:
        cases.setdefault(str(inst.get("case", inst.get("name"))), []).append(inst)
    return cases


_label = condition_label  # one row label everywhere (run_analysis.condition_label)


def _header(result: ResultFile) -> List[str]:
    a = result.attrs
    parts = [f"<h1>fabscope report: {H.esc(a.get('scenario_name', ''))}</h1>",
             f"<div class=\"muted\">{H.esc(result.path)}</div>"]
    if not result.complete:
        parts.append(H.warning(
            f"This file is incomplete (complete=0, exit_code={a.get('exit_code')}): the run did "
            "not end normally. Tests after the last flushed one are missing; the last one may be "
            "partial."))
    fields = [("run id", a.get("run_id")), ("tool version", a.get("tool_version")),
              ("started / finished (UTC)", f"{a.get('started_utc', '')} / "
                                           f"{a.get('finished_utc', '') or '-'}"),
              ("ranks / hosts", f"{a.get('nranks')} / {a.get('nhosts')}"),
              ("fabscope exit code (its own checks)", a.get("exit_code")), ("launch preset", a.get("launch_preset") or "-"),
              ("HDF5 mode", a.get("hdf5_mode")), ("seed", a.get("seed")),
              ("scenario file", a.get("scenario_file")), ("command line", a.get("command_line"))]
    if a.get("overrides"):
        fields.append(("overrides", str(a.get("overrides")).replace("\n", "; ")))
    parts.append(H.key_value_table(fields))
    return parts


def _verdict_block(verdict) -> str:
    """The report's first block: the verdict, why, and which criteria (verdict.py)."""
    if verdict is None:
        return ""
    if isinstance(verdict, str):  # criteria could not be loaded: say so, first
        return (f"<div class=\"verdict fail\"><h2 id=\"verdict\">Verdict: unavailable</h2>"
                f"({H.esc(verdict)})</div>")
    failing = [r for r in verdict.reasons if r.failing]
    items = "".join(f"<li>{H.esc(r.text)}</li>" for r in failing[:MAX_VERDICT_REASONS])
    if len(failing) > MAX_VERDICT_REASONS:
        items += f"<li>... and {len(failing) - MAX_VERDICT_REASONS} more (see accept)</li>"
    notes = "".join(f"<li>{H.esc(r.text)}</li>" for r in verdict.reasons if not r.failing)
    culprits = ""
    if verdict.diagnosis is not None:
        culprits = culprits_html(verdict.diagnosis)
    else:
        culprits = ("<p class=\"muted\">The criteria in force do not use diagnose "
                    "(criteria key <code>diagnose: true</code>); python3 -m fabscope_analysis "
                    "diagnose FILE names culprit hosts on its own.</p>")
    state = "pass" if verdict.passed else "fail" if verdict.failed else "cannot-tell"
    return (f"<div class=\"verdict {state}\">"
            f"<h2 id=\"verdict\">Verdict: {verdict.status}</h2>"
            f"<b>{H.esc(verdict.line())}</b>"
            + (f"<ul>{items}{notes}</ul>" if items or notes else "") + culprits + "</div>")


MAX_VERDICT_REASONS = 12


@dataclass
class SummaryFigures:
    """The summary section's rows (RunAnalysis.summary_frame) and the figures the verdict's
    criteria failed ({(index, scope): columns})."""
    frame: pd.DataFrame
    highlights: dict
    labelled: bool


def compute_summary_figures(analysis: RunAnalysis, verdict=None) -> SummaryFigures:
    highlights = verdict.highlights() if verdict is not None and not isinstance(verdict, str) \
        else {}
    return SummaryFigures(analysis.summary_frame(), highlights, analysis.labelled)


def _summary_section(figures: SummaryFigures) -> str:
    frame, highlights = figures.frame, figures.highlights
    if frame.empty:
        return H.section("summary", "Summary", ["<p>No test instances in this file.</p>"])
    rows, classes = [], []
    for _, r in frame.iterrows():
        scope = {"scope": r["scope"] or "-"} if figures.labelled else {}
        rows.append({"#": f"{int(r['index']):04d}", "test": r["name"], "kind": r["kind"],
                     "bytes": format_bytes(r["bytes"]),
                     "condition": r["label"],
                     **scope, "unit": r["unit"], "samples": int(r["samples"]),
                     "p50": format_number(r["p50"]), "p99": format_number(r["p99"]),
                     "p99.9": format_number(r["p99.9"]), "worst": format_number(r["worst"]),
                     "mean": format_number(r["mean"]),
                     "impact mean": format_number(r["impact_mean"]),
                     "impact p99": format_number(r["impact_p99"]),
                     "status": r["status"] + (f" [{r['flagged']}]" if r["flagged"] else ""),
                     "stragglers": r["stragglers"] or "-", "error": r["error"]})
        # Highlights mark exactly the figures the criteria in force failed, nothing else.
        failed = highlights.get((int(r["index"]), r["scope"]), set())
        classes.append({c: "bad" for c in failed})
    table = H.table(pd.DataFrame(rows), left=["test", "kind", "condition", "scope", "status",
                                              "stragglers", "error"],
                    classes=pd.DataFrame(classes))
    intro = ("Red cells: the figures the verdict's criteria failed. "
             "Latency in us; bandwidth in GB/s where p99/p99.9/worst are the slow side (99% of "
             "samples were at least this fast). Impact: congested vs quiet of the same case, >1 "
             "is worse. Stragglers: ranks whose p99 exceeds 2x the median rank p99 (rank@host).")
    parts = [table]
    if figures.labelled:
        intro += (" Scope: the ranks carry site labels, so every row covers one site scope: "
                  "site=X (both ends in site X), inter-site X<->Y (a WAN path, highlighted) or "
                  "a collective group; samples of different scopes are never mixed.")
        spanning = frame.drop_duplicates("index")
        for _, r in spanning[spanning["spans_sites"] != ""].iterrows():
            scopes = frame[frame["index"] == r["index"]]["scope"]
            if any(str(x).startswith("group across") for x in scopes):
                parts.append(H.warning(f"test {int(r['index']):04d} {r['name']}: the measuring "
                                       f"group spans sites {r['spans_sites']}: a WAN path, not "
                                       "one cluster fabric"))
            else:
                parts.append(f"<p class=\"muted\">test {int(r['index']):04d} {H.esc(r['name'])}: "
                             f"the measuring ranks span sites {H.esc(r['spans_sites'])}; its rows "
                             "are split by site scope.</p>")
    return H.section("summary", "Summary", parts, intro=intro)


@dataclass
class CdfFigures:
    """One case's samples per condition and scope (latency in us or GB/s), to draw."""
    case: str
    series: List[Tuple[str, np.ndarray]]
    name: str
    bytes: object
    kind: str
    bandwidth: bool


def compute_cdf(analysis: RunAnalysis, case: str, insts: List[TestInstance]) -> Optional[CdfFigures]:
    series = []
    for inst in insts:
        for scope in analysis.scopes(inst):
            s = analysis.samples(inst, scope)
            if s.empty:
                continue
            values = s["gbps"] if is_bandwidth(inst.metric) else s["latency_ns"] / 1e3
            series.append((_label(inst) + analysis.scope_suffix(scope), values.to_numpy()))
    if not series:
        return None
    first = insts[0]
    return CdfFigures(case, series, str(first.get("name")), first.get("bytes"),
                      str(first.get("kind")), is_bandwidth(first.metric))


def render_cdf(f: CdfFigures) -> str:
    xlabel = "GB/s per sample" if f.bandwidth else "latency (us)"
    return H.figure(plots.cdf(f.series, xlabel, f"{f.name} {format_bytes(f.bytes)} ({f.kind})",
                              f.bandwidth), f"case {f.case}")


def _cdf_section(analysis: RunAnalysis) -> str:
    # One case computed and drawn at a time: a case's samples are dropped once drawn.
    figs = []
    for case, insts in _cases(analysis).items():
        figures = compute_cdf(analysis, case, insts)
        if figures is not None:
            figs.append(render_cdf(figures))
    if not figs:
        return ""
    return H.capped_section("cdf", "Distributions per condition", figs,
                            "Left: cumulative distribution of all ranks' raw samples; right: the "
                            "slow tail on a log scale (latency: fraction above x; bandwidth: "
                            "fraction at or below x).")


@dataclass
class RankTailFigures:
    """One case's per-rank tails per condition and scope, and its stragglers."""
    per_condition: Dict[str, pd.DataFrame]
    stragglers: List[int]
    straggler_names: List[str]          # as the report names ranks
    name: str
    bytes: object
    unit: str
    bandwidth: bool


def compute_rank_tails(analysis: RunAnalysis) -> List[RankTailFigures]:
    out = []
    for case, insts in _cases(analysis).items():
        per_condition: Dict[str, pd.DataFrame] = OrderedDict()
        stragglers = set()
        for inst in insts:
            for scope in analysis.scopes(inst):
                st = analysis.stats(inst, scope)
                if len(st.rank_tails) >= 2:
                    per_condition[_label(inst) + analysis.scope_suffix(scope)] = st.rank_tails
                    stragglers.update(st.stragglers)
        if not per_condition:
            continue
        first = insts[0]
        out.append(RankTailFigures(per_condition, sorted(stragglers),
                                   [analysis.describe_rank(r) for r in sorted(stragglers)],
                                   str(first.get("name")), first.get("bytes"),
                                   unit_of(first.metric), is_bandwidth(first.metric)))
    return out


def _rank_tail_section(tails: List[RankTailFigures]) -> str:
    figs = []
    for f in tails:
        title = f"{f.name} {format_bytes(f.bytes)}: per-rank p99"
        if f.bandwidth:
            title += " (slow side)"
        caption = "stragglers: " + (", ".join(f.straggler_names) if f.stragglers else "none")
        figs.append(H.figure(plots.rank_tails(f.per_condition, f.unit, title, f.stragglers,
                                              low_is_bad=f.bandwidth),
                             caption))
    if not figs:
        return ""
    return H.capped_section("ranks", "Per-rank tails", figs,
                            "p99 of each measuring rank's own samples, per condition. A rank "
                            "whose p99 exceeds 2x the median rank p99 is a straggler (hatched).")


@dataclass
class PairMatrixFigures:
    """One instance's rank x rank medians (us or GB/s), their median and worst pair."""
    shown: np.ndarray
    labels: List[str]
    title: str
    bandwidth: bool
    median: float
    worst: Tuple[int, int]
    worst_value: float
    worst_ratio: float


def compute_pair_matrix(analysis: RunAnalysis, inst: TestInstance) -> Optional[PairMatrixFigures]:
    matrix = inst.pair_matrix()
    if matrix is None or not np.isfinite(matrix).any():
        return None
    bandwidth = is_bandwidth(inst.metric)
    shown = matrix if bandwidth else matrix / 1e3
    labels = [f"{r} {analysis.hosts.get(r, '')}".strip() for r in range(matrix.shape[0])]
    finite = shown[np.isfinite(shown)]
    med = float(np.median(finite))
    worst_idx = np.unravel_index(
        np.nanargmin(shown) if bandwidth else np.nanargmax(shown), shown.shape)
    return PairMatrixFigures(shown, labels, f"{inst.get('name')} {format_bytes(inst.get('bytes'))} "
                                            f"[{_label(inst)}]", bandwidth, med, worst_idx,
                             shown[worst_idx], shown[worst_idx] / med if med else float("nan"))


def render_pair_matrix(f: PairMatrixFigures) -> str:
    unit = "GB/s (median per pair)" if f.bandwidth else "latency us (median per pair)"
    caption = (f"median pair {format_number(f.median)}; worst pair {f.worst[0]} -> "
               f"{f.worst[1]} at {format_number(f.worst_value)} "
               f"({format_number(f.worst_ratio)}x median)")
    return H.figure(plots.heatmap(f.shown, f.labels, unit, f.title, f.bandwidth), caption)


def _heatmap_section(analysis: RunAnalysis) -> str:
    # One instance's matrix computed and drawn at a time (n x n medians each).
    figs = []
    for inst in analysis.instances:
        figures = compute_pair_matrix(analysis, inst)
        if figures is not None:
            figs.append(render_pair_matrix(figures))
    if not figs:
        return ""
    return H.capped_section("pairs", "Rank x rank pair matrix", figs,
                            "Row = measuring rank, column = peer; grey = not measured.")


def _validity_block(result: ResultFile) -> str:
    """/validity before everything else: what makes the numbers doubtful."""
    t = result.validity()
    if t.empty:
        return ""
    t = t.assign(host=[("every host" if h in ("", "*") else h) for h in t["host"]])
    yielded = int(result.attrs.get("waits_yield", 0)) == 1
    return (H.warning(f"Validity: {len(t)} finding(s) make the numbers of this run doubtful"
                      f"{' (waits yielded)' if yielded else ''}") +
            H.table(t[["host", "what", "value", "limit", "effect"]], left=["host", "what", "effect"]))


def build_report(result: ResultFile, criteria=None, verdict=None, model=None, tp=None) -> str:
    """The page; opens with the verdict (verdict.compute_verdict, as summary and accept)."""
    analysis = RunAnalysis(result)
    if verdict is None:
        try:
            verdict = compute_verdict(result, criteria)
        except CriteriaError as exc:
            verdict = str(exc)
    # Computed once over the run; the blocks and sections below only render them.
    impact = report_impact(result, model, tp)
    line_rate = compute_line_rate(result)
    kinds = compute_kinds(analysis, report=True)
    summary = compute_summary_figures(analysis, verdict)
    tails = compute_rank_tails(analysis)
    faults = compute_fault_figures(analysis, kinds)
    inventory = compute_inventory(analysis)
    counters = compute_counter_figures(analysis)
    sections: List[Tuple[str, str, str]] = []
    # The distributions and pair matrices compute and draw one case (one instance) at a
    # time, so that only one case's samples are held at once.
    for anchor, title, render in (
            ("summary", "Summary", lambda: _summary_section(summary)),
            ("cdf", "Distributions", lambda: _cdf_section(analysis)),
            ("ranks", "Per-rank tails", lambda: _rank_tail_section(tails)),
            ("pairs", "Pair matrix", lambda: _heatmap_section(analysis)),
            *((k.anchor, k.title, lambda k=k, figures=figures: k.render(figures))
              for k, figures in kinds.sections),
            ("faults", "Faults", lambda: fault_section(faults)),
            ("inventory", "Inventory", lambda: inventory_section(inventory)),
            ("counters", "Counters", lambda: counter_section(counters))):
        content = render()
        if content:
            sections.append((anchor, title, content))
    header = _header(result)
    # Before the run metadata: first what makes the numbers doubtful (/validity), then
    # the verdict (with its culprits, when the criteria use diagnose; one block, the same
    # verdict as summary, accept and `verdict`), then what the fabric costs the served model.
    body = header[:2] + [_validity_block(result), _verdict_block(verdict),
                         impact_html(impact), html_block(line_rate)] + header[2:]
    body.append(H.nav([(a, t) for a, t, _ in sections]))
    body.extend(content for _, _, content in sections)
    body.append("<p class=\"muted\">Written by fabscope_analysis from the raw samples in the "
                "file.</p>")
    return H.page(f"fabscope report {result.attrs.get('run_id', '')}", body)


def write_report(result: ResultFile, output: str, criteria=None, model=None, tp=None) -> None:
    text = build_report(result, criteria, model=model, tp=tp)
    with open(output, "w", encoding="utf-8") as out:
        out.write(text)
