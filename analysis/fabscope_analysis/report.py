"""`report FILE -o report.html`: one self-contained page with embedded PNG figures.

Sections whose data is absent from the file are left out rather than shown empty.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Dict, List, Tuple

import numpy as np
import pandas as pd

from . import html as H
from . import plots
from .diagnose import culprits_html
from .errors import CriteriaError
from .serving.impact_text import impact_html, report_impact
from .serving.line_rate import compute_line_rate, html_block
from .kinds import KindResults, compute_kinds
from .inventory import (KNOWN_COUNTERS, inconsistent_fields, inventory_frame, qos_frame,
                        launcher_fact_count, other_tables, recorded_flags)
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


def _summary_section(analysis: RunAnalysis, verdict=None) -> str:
    frame = analysis.summary_frame()
    highlights = verdict.highlights() if verdict is not None and not isinstance(verdict, str) \
        else {}
    if frame.empty:
        return H.section("summary", "Summary", ["<p>No test instances in this file.</p>"])
    rows, classes = [], []
    for _, r in frame.iterrows():
        scope = {"scope": r["scope"] or "-"} if analysis.labelled else {}
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
    if analysis.labelled:
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


def _cdf_section(analysis: RunAnalysis) -> str:
    figs = []
    for case, insts in _cases(analysis).items():
        series = []
        for inst in insts:
            for scope in analysis.scopes(inst):
                s = analysis.samples(inst, scope)
                if s.empty:
                    continue
                values = s["gbps"] if is_bandwidth(inst.metric) else s["latency_ns"] / 1e3
                series.append((_label(inst) + analysis.scope_suffix(scope), values.to_numpy()))
        if not series:
            continue
        metric = insts[0].metric
        xlabel = "GB/s per sample" if is_bandwidth(metric) else "latency (us)"
        first = insts[0]
        figs.append(H.figure(plots.cdf(series, xlabel,
                                       f"{first.get('name')} {format_bytes(first.get('bytes'))}"
                                       f" ({first.get('kind')})", is_bandwidth(metric)),
                             f"case {case}"))
    if not figs:
        return ""
    return H.capped_section("cdf", "Distributions per condition", figs,
                            "Left: cumulative distribution of all ranks' raw samples; right: the "
                            "slow tail on a log scale (latency: fraction above x; bandwidth: "
                            "fraction at or below x).")


def _rank_tail_section(analysis: RunAnalysis) -> str:
    figs = []
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
        unit = unit_of(first.metric)
        title = f"{first.get('name')} {format_bytes(first.get('bytes'))}: per-rank p99"
        if is_bandwidth(first.metric):
            title += " (slow side)"
        caption = "stragglers: " + (", ".join(analysis.describe_rank(r) for r in sorted(stragglers))
                                    if stragglers else "none")
        figs.append(H.figure(plots.rank_tails(per_condition, unit, title, sorted(stragglers),
                                              low_is_bad=is_bandwidth(first.metric)),
                             caption))
    if not figs:
        return ""
    return H.capped_section("ranks", "Per-rank tails", figs,
                            "p99 of each measuring rank's own samples, per condition. A rank "
                            "whose p99 exceeds 2x the median rank p99 is a straggler (hatched).")


def _heatmap_section(analysis: RunAnalysis) -> str:
    figs = []
    for inst in analysis.instances:
        matrix = inst.pair_matrix()
        if matrix is None or not np.isfinite(matrix).any():
            continue
        bandwidth = is_bandwidth(inst.metric)
        shown = matrix if bandwidth else matrix / 1e3
        labels = [f"{r} {analysis.hosts.get(r, '')}".strip() for r in range(matrix.shape[0])]
        unit = "GB/s (median per pair)" if bandwidth else "latency us (median per pair)"
        finite = shown[np.isfinite(shown)]
        med = float(np.median(finite))
        worst_idx = np.unravel_index(
            np.nanargmin(shown) if bandwidth else np.nanargmax(shown), shown.shape)
        caption = (f"median pair {format_number(med)}; worst pair {worst_idx[0]} -> "
                   f"{worst_idx[1]} at {format_number(shown[worst_idx])} "
                   f"({format_number(shown[worst_idx] / med if med else float('nan'))}x median)")
        figs.append(H.figure(plots.heatmap(
            shown, labels, unit, f"{inst.get('name')} {format_bytes(inst.get('bytes'))} "
                                 f"[{_label(inst)}]", bandwidth), caption))
    if not figs:
        return ""
    return H.capped_section("pairs", "Rank x rank pair matrix", figs,
                            "Row = measuring rank, column = peer; grey = not measured.")


def _fault_section(analysis: RunAnalysis, kinds: KindResults) -> str:
    events = analysis.result.all_events()
    not_passed = [i for i in analysis.instances if str(i.get("status")) not in ("passed",)]
    if events.empty and not not_passed:
        return ""
    starts = [int(i.get("t_start_ns")) for i in analysis.instances if i.get("t_start_ns")]
    run_start = min(starts) if starts else (int(events["t_ns"].min()) if len(events) else 0)
    ends = [int(i.get("t_end_ns")) for i in analysis.instances if i.get("t_end_ns")]
    span_ns = (max(ends) - run_start) if ends else 1
    scale, unit = (1e9, "s") if span_ns > 5e9 else (1e6, "ms")
    parts = []
    if len(events):
        spans = [((int(i.get("t_start_ns")) - run_start) / scale,
                  (int(i.get("t_end_ns")) - run_start) / scale, f"{i.index:04d}",
                  str(i.get("status"))) for i in analysis.instances
                 if i.get("t_start_ns") and i.get("t_end_ns")]
        marks = [((float(e.t_ns) - run_start) / scale, int(e.rank), str(e.kind))
                 for e in events.itertuples()]
        parts.append(H.figure(plots.fault_timeline(spans, marks, unit)))
        table = pd.DataFrame({
            f"t ({unit})": [format_number((float(t) - run_start) / scale) for t in events["t_ns"]],
            "test": [f"{int(t):04d}" for t in events["test"]],
            "rank": [analysis.describe_rank(r) for r in events["rank"]],
            "kind": events["kind"],
            "peer": ["-" if int(p) < 0 else analysis.describe_rank(p) for p in events["peer"]],
            "detail": events["detail"]})
        parts.append(H.table(table, left=["rank", "kind", "peer", "detail"]))
    drills = [i for i in analysis.instances if kinds.is_drill(i.index)]
    if drills:
        parts.append("<h3>Detection and return to baseline</h3>")
        parts.append(H.table(pd.DataFrame([{"#": f"{i.index:04d}", "test": i.get("name"),
                                            "drill": line}
                                           for i in drills
                                           for line in kinds.drill_lines(i.index)]),
                             left=["test", "drill"]))
    if not_passed:
        parts.append("<h3>Test instances that did not pass</h3>")
        parts.append(H.table(pd.DataFrame([{"#": f"{i.index:04d}", "test": i.get("name"),
                                            "condition": i.get("condition"),
                                            "status": i.get("status"), "error": i.get("error")}
                                           for i in not_passed]),
                             left=["test", "condition", "status", "error"]))
    return H.section("faults", "Faults, errors and recoveries", parts,
                     intro="Events recorded by the ranks, on the global clock since the first "
                           "test started.")


def _inventory_section(analysis: RunAnalysis) -> str:
    result = analysis.result
    parts = []
    ranks = result.ranks()
    if len(ranks):
        shown = ranks.copy()
        shown["clock_uncertainty_us"] = shown["clock_uncertainty_ns"] / 1e3
        shown = shown.drop(columns=["clock_uncertainty_ns"])
        parts.append("<h3>Ranks</h3>")
        parts.append(H.table(shown, left=["host", "nic"]))
    if result.has_hosts():
        qos = qos_frame([result], ["value"])
        if not qos.empty:
            parts.append("<h3>Congestion control and QoS</h3>")
            parts.append(H.table(qos, left=list(qos.columns)))
        parts.extend(_host_inventory(result))
    if not parts:
        return ""
    return H.section("inventory", "Inventory and consistency", parts)


MAX_INVENTORY_ROWS = 300


def _host_inventory(result: ResultFile) -> List[str]:
    parts = []
    flags = recorded_flags(result)
    inv = inventory_frame(result)
    differing = inconsistent_fields(inv)
    if len(flags):
        parts.append("<h3>Consistency flags (recorded by fabscope)</h3>")
        classes = None
        if "severity" in flags.columns:
            classes = pd.DataFrame([{"severity": "bad" if s in ("error", "warning") else ""}
                                    for s in flags["severity"]])
        parts.append(H.table(flags, left=list(flags.columns), classes=classes))
    elif differing:
        parts.append("<h3>Consistency flags (values that differ between hosts)</h3>")
        for field, groups in list(differing.items())[:50]:
            parts.append(H.warning(f"Inconsistent {field}: " + "; ".join(
                f"{value} on {', '.join(hosts)}" for value, hosts in groups.items())))
    elif len(inv) > 1:
        parts.append("<p class=\"good\">All hosts report the same inventory values.</p>")
    if not inv.empty:
        # facts as rows, hosts as columns: hosts are few, facts can be many
        table = inv.set_index("host").T
        table.insert(0, "fact", table.index)
        table = table.reset_index(drop=True).fillna("(absent)")
        order = sorted(range(len(table)), key=lambda i: table["fact"][i] not in differing)
        table = table.iloc[order].reset_index(drop=True)
        classes = pd.DataFrame([{c: ("bad" if f in differing else "") for c in table.columns}
                                for f in table["fact"]])
        parts.append(f"<h3>Host inventory ({len(table)} facts; differing ones first)</h3>")
        hidden = launcher_fact_count(result)
        if hidden:
            parts.append(f"<p class=\"muted\">{hidden} per-job launcher variables (Open MPI, "
                         "PMIx, Slurm ranks, job ids, URIs, argv, session directories) are not "
                         "shown or compared: fabscope_analysis/data/launcher-variables.txt.</p>")
        parts.append(H.table(table, left=list(table.columns), classes=classes,
                             max_rows=MAX_INVENTORY_ROWS))
    for host, tables in other_tables(result).items():
        for name, frame in tables.items():
            parts.append(f"<h3>{H.esc(host)}: {H.esc(name)}</h3>")
            parts.append(H.table(frame.head(50), left=list(frame.columns)))
    return parts


def _counter_section(analysis: RunAnalysis) -> str:
    counters = analysis.result.all_counters()
    if counters.empty:
        return ""
    changed = counters[counters["delta"] != 0]
    if changed.empty:
        return H.section("counters", "Counter deltas",
                         ["<p>Counters were read, and none changed during any test.</p>"])
    names = {i.index: f"{i.get('name')} [{i.get('condition')}]" for i in analysis.instances}
    rows = []
    for (test, source, name), group in changed.groupby(["test", "source", "name"], sort=True):
        top = group.loc[group["delta"].abs().idxmax()]
        rows.append({"#": f"{int(test):04d}", "test": names.get(int(test), ""),
                     "source": source, "counter": name, "total delta": int(group["delta"].sum()),
                     "ranks changed": int(len(group)),
                     "largest": f"{int(top['delta'])} on {analysis.describe_rank(top['rank'])}",
                     "meaning": KNOWN_COUNTERS.get(str(name), "")})
    return H.section("counters", "Counter deltas",
                     [H.table(pd.DataFrame(rows), left=["test", "source", "counter", "largest",
                                                        "meaning"])],
                     intro="Counters that changed between the snapshots around each test "
                           "(summed over ranks; one reader per host). Retransmits, drops and "
                           "congestion notifications here explain tails above.")


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
    sections: List[Tuple[str, str, str]] = []
    for anchor, title, builder in (
            ("summary", "Summary", lambda a: _summary_section(a, verdict)),
            ("cdf", "Distributions", _cdf_section),
            ("ranks", "Per-rank tails", _rank_tail_section),
            ("pairs", "Pair matrix", _heatmap_section),
            *((k.anchor, k.title, lambda a, k=k, figures=figures: k.render(figures))
              for k, figures in kinds.sections),
            ("faults", "Faults", lambda a: _fault_section(a, kinds)),
            ("inventory", "Inventory", _inventory_section),
            ("counters", "Counters", _counter_section)):
        content = builder(analysis)
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
