"""The report's sections of what a run recorded beside its samples: events, errors and the
fault drills' lines; the inventory and its consistency; the counters that changed. Each
is computed once over the run (compute_*: a dataclass) and rendered apart (*_section)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import pandas as pd

from . import html as H
from . import plots
from .inventory import (KNOWN_COUNTERS, inconsistent_fields, inventory_frame, qos_frame,
                        launcher_fact_count, other_tables, recorded_flags)
from .kinds import KindResults
from .run_analysis import RunAnalysis, format_number


@dataclass
class FaultSectionFigures:
    """The run's events on the global clock (in `unit` since the first test started), the
    instances' spans, the drills' lines and the instances that did not pass."""
    unit: str
    spans: List[Tuple[float, float, str, str]]     # (start, end, test, status)
    marks: List[Tuple[float, int, str]]            # (t, rank, kind)
    events: pd.DataFrame                           # t, test, rank, kind, peer, detail
    drills: Optional[List[dict]]                   # #, test, drill per line (None: no drill)
    not_passed: List[dict]                         # #, test, condition, status, error


def compute_fault_figures(analysis: RunAnalysis, kinds: KindResults) -> Optional[FaultSectionFigures]:
    events = analysis.result.all_events()
    not_passed = [i for i in analysis.instances if str(i.get("status")) not in ("passed",)]
    if events.empty and not not_passed:
        return None
    starts = [int(i.get("t_start_ns")) for i in analysis.instances if i.get("t_start_ns")]
    run_start = min(starts) if starts else (int(events["t_ns"].min()) if len(events) else 0)
    ends = [int(i.get("t_end_ns")) for i in analysis.instances if i.get("t_end_ns")]
    span_ns = (max(ends) - run_start) if ends else 1
    scale, unit = (1e9, "s") if span_ns > 5e9 else (1e6, "ms")
    spans, marks, table = [], [], pd.DataFrame()
    if len(events):
        spans = [((int(i.get("t_start_ns")) - run_start) / scale,
                  (int(i.get("t_end_ns")) - run_start) / scale, f"{i.index:04d}",
                  str(i.get("status"))) for i in analysis.instances
                 if i.get("t_start_ns") and i.get("t_end_ns")]
        marks = [((float(e.t_ns) - run_start) / scale, int(e.rank), str(e.kind))
                 for e in events.itertuples()]
        table = pd.DataFrame({
            "t": [(float(t) - run_start) / scale for t in events["t_ns"]],
            "test": [f"{int(t):04d}" for t in events["test"]],
            "rank": [analysis.describe_rank(r) for r in events["rank"]],
            "kind": events["kind"],
            "peer": ["-" if int(p) < 0 else analysis.describe_rank(p) for p in events["peer"]],
            "detail": events["detail"]})
    drill_instances = [i for i in analysis.instances if kinds.is_drill(i.index)]
    drills = [{"#": f"{i.index:04d}", "test": i.get("name"), "drill": line}
              for i in drill_instances for line in kinds.drill_lines(i.index)] \
        if drill_instances else None
    failed = [{"#": f"{i.index:04d}", "test": i.get("name"), "condition": i.get("condition"),
               "status": i.get("status"), "error": i.get("error")} for i in not_passed]
    return FaultSectionFigures(unit, spans, marks, table, drills, failed)


def fault_section(f: Optional[FaultSectionFigures]) -> str:
    if f is None:
        return ""
    parts = []
    if len(f.events):
        parts.append(H.figure(plots.fault_timeline(f.spans, f.marks, f.unit)))
        table = f.events.assign(t=[format_number(t) for t in f.events["t"]]).rename(
            columns={"t": f"t ({f.unit})"})
        parts.append(H.table(table, left=["rank", "kind", "peer", "detail"]))
    if f.drills is not None:
        parts.append("<h3>Detection and return to baseline</h3>")
        parts.append(H.table(pd.DataFrame(f.drills), left=["test", "drill"]))
    if f.not_passed:
        parts.append("<h3>Test instances that did not pass</h3>")
        parts.append(H.table(pd.DataFrame(f.not_passed),
                             left=["test", "condition", "status", "error"]))
    return H.section("faults", "Faults, errors and recoveries", parts,
                     intro="Events recorded by the ranks, on the global clock since the first "
                           "test started.")


@dataclass
class InventoryFigures:
    """The ranks table, and with host records: QoS settings, consistency flags (recorded,
    or the fields that differ between hosts), the facts per host and the other tables."""
    ranks: pd.DataFrame
    has_hosts: bool
    qos: pd.DataFrame
    flags: pd.DataFrame
    inventory: pd.DataFrame
    differing: dict
    launcher_facts: int
    other_tables: dict


def compute_inventory(analysis: RunAnalysis) -> InventoryFigures:
    result = analysis.result
    ranks = result.ranks()
    if len(ranks):
        ranks = ranks.copy()
        ranks["clock_uncertainty_us"] = ranks["clock_uncertainty_ns"] / 1e3
        ranks = ranks.drop(columns=["clock_uncertainty_ns"])
    if not result.has_hosts():
        return InventoryFigures(ranks, False, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {},
                                0, {})
    inv = inventory_frame(result)
    return InventoryFigures(ranks, True, qos_frame([result], ["value"]), recorded_flags(result),
                            inv, inconsistent_fields(inv), launcher_fact_count(result),
                            other_tables(result))


def inventory_section(f: InventoryFigures) -> str:
    parts = []
    if len(f.ranks):
        parts.append("<h3>Ranks</h3>")
        parts.append(H.table(f.ranks, left=["host", "nic"]))
    if f.has_hosts:
        if not f.qos.empty:
            parts.append("<h3>Congestion control and QoS</h3>")
            parts.append(H.table(f.qos, left=list(f.qos.columns)))
        parts.extend(_host_inventory(f))
    if not parts:
        return ""
    return H.section("inventory", "Inventory and consistency", parts)


MAX_INVENTORY_ROWS = 300


def _host_inventory(f: InventoryFigures) -> List[str]:
    parts = []
    flags, inv, differing = f.flags, f.inventory, f.differing
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
        classes = pd.DataFrame([{c: ("bad" if fact in differing else "") for c in table.columns}
                                for fact in table["fact"]])
        parts.append(f"<h3>Host inventory ({len(table)} facts; differing ones first)</h3>")
        if f.launcher_facts:
            parts.append(f"<p class=\"muted\">{f.launcher_facts} per-job launcher variables (Open MPI, "
                         "PMIx, Slurm ranks, job ids, URIs, argv, session directories) are not "
                         "shown or compared: fabscope_analysis/data/launcher-variables.txt.</p>")
        parts.append(H.table(table, left=list(table.columns), classes=classes,
                             max_rows=MAX_INVENTORY_ROWS))
    for host, tables in f.other_tables.items():
        for name, frame in tables.items():
            parts.append(f"<h3>{H.esc(host)}: {H.esc(name)}</h3>")
            parts.append(H.table(frame.head(50), left=list(frame.columns)))
    return parts


@dataclass
class CounterFigures:
    """The counters that changed per test, source and name (None: no counter was read;
    [] none changed)."""
    rows: Optional[List[dict]]


def compute_counter_figures(analysis: RunAnalysis) -> CounterFigures:
    counters = analysis.result.all_counters()
    if counters.empty:
        return CounterFigures(None)
    changed = counters[counters["delta"] != 0]
    names = {i.index: f"{i.get('name')} [{i.get('condition')}]" for i in analysis.instances}
    rows = []
    for (test, source, name), group in changed.groupby(["test", "source", "name"], sort=True):
        top = group.loc[group["delta"].abs().idxmax()]
        rows.append({"#": f"{int(test):04d}", "test": names.get(int(test), ""),
                     "source": source, "counter": name, "total delta": int(group["delta"].sum()),
                     "ranks changed": int(len(group)),
                     "largest": f"{int(top['delta'])} on {analysis.describe_rank(top['rank'])}",
                     "meaning": KNOWN_COUNTERS.get(str(name), "")})
    return CounterFigures(rows)


def counter_section(f: CounterFigures) -> str:
    if f.rows is None:
        return ""
    if not f.rows:
        return H.section("counters", "Counter deltas",
                         ["<p>Counters were read, and none changed during any test.</p>"])
    return H.section("counters", "Counter deltas",
                     [H.table(pd.DataFrame(f.rows), left=["test", "source", "counter", "largest",
                                                          "meaning"])],
                     intro="Counters that changed between the snapshots around each test "
                           "(summed over ranks; one reader per host). Retransmits, drops and "
                           "congestion notifications here explain tails above.")
