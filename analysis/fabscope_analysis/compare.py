"""`compare A.h5 B.h5 [...]` and `compare A1.h5 A2.h5 A3.h5 -- B1.h5 B2.h5 B3.h5`: the same
cases side by side, and whether a difference is real.

Without ``--`` the first file is the reference and every other file is compared with it
(one run per side). With ``--`` the files before it are runs of side A (the reference)
and the files after it runs of side B; one comparison A vs B.

Instances are matched by (case, condition, pass) and then by site scope (scopes.py).
A *run* is one file. Several instances of one case inside a file (a scenario's
``repeats: N``) are *repeats*: a level below runs, never runs themselves (they share
the run's placement, clocks and background). The decision for each figure (p50, p99,
p99.9) is compare_stats.compare_figures: hierarchical bootstrap over run > repeat >
rank > block, and a t interval on the runs' log figures when run-to-run variation is
known (2+ runs on a side, or ``--aa-archive DIR`` of A/A runs), confirmed by a
permutation test of the runs where their splits can reach the level (4 vs 4, 3 vs 4 and
more). With one run per side and no archive a difference is ``cannot tell (one run per
side)``. The rows of one comparison then share one false-difference rate:
Benjamini-Hochberg over all of them (compare_stats.rows_false_differences), stated under
the comparison's header.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, TextIO, Tuple

import numpy as np
import pandas as pd

from .compare_html import comparison_page
from .compare_stats import (DEFAULT_NEGLIGIBLE, ArchiveSpread, archive_spread, compare_figures,
                            headline, rows_false_differences, run_log_figures, verdict_text)
from .errors import ResultFileError
from .serving.impact_text import compare_lines
from .serving.line_rate import compare_lines as line_rate_lines
from .inventory import INFORMATIONAL_FACTS, qos_frame, topology
from .reader import ResultFile, TestInstance, open_result
from .resampling import Run, run_units
from .run_analysis import RunAnalysis, condition_label, format_number, instance_key
from .scopes import Scope, scope_label
from .stats import sample_values_for_plot, unit_of

STATS = ("p50", "p99", "p99.9")
MAX_CDF_FIGURES = 24
ONE_RUN_NOTE = ("one run per side: run-to-run variation is unknown, so a difference the "
                "within-run interval sees is 'cannot tell (one run per side)'. Compare 3 runs a "
                "side (compare A1 A2 A3 -- B1 B2 B3; 4 a side when runs may fall on two levels: "
                "the runs' permutation test then checks the t), or give --aa-archive DIR with "
                "A/A runs of this fabric. Repeats inside one file are not runs.")


class NoCommonCases(ResultFileError):
    """compare found no (case, condition, pass, scope) present on both sides."""


@dataclass
class Side:
    label: str
    results: List[ResultFile]
    analyses: List[RunAnalysis]


def _labels(results: List[ResultFile]) -> List[str]:
    names = [r.name for r in results]
    if len(set(names)) == len(names):
        return names
    return [f"{chr(ord('A') + i)}: {r.path}" for i, r in enumerate(results)]


def context_frame(results: List[ResultFile], labels: List[str]) -> Tuple[pd.DataFrame, List[str]]:
    """Facts per file side by side, and warnings for facts that differ.

    Per-job launcher variables are not facts (inventory.is_launcher_fact); the warnings
    name real configuration only: library versions, MCA/UCX/NCCL settings, firmware, MTU,
    link rates, topology.
    """
    facts = [topology(r) for r in results]
    keys: List[str] = []
    for f in facts:
        keys.extend(k for k in f if k not in keys)
    rows, warnings = [], []
    for key in keys:
        values = [f.get(key, "(absent)") for f in facts]
        rows.append({"fact": key, **dict(zip(labels, values))})
        if len(set(values)) > 1 and key not in INFORMATIONAL_FACTS:
            warnings.append(f"{key} differs: " + "; ".join(f"{l}: {v or '-'}"
                                                           for l, v in zip(labels, values)))
    for label, r in zip(labels, results):
        if not r.complete:
            warnings.append(f"{label} is incomplete (the run did not end normally)")
    return pd.DataFrame(rows), warnings


Key = Tuple[str, str, str, str]  # case, condition, pass, scope
Repeat = Tuple[RunAnalysis, TestInstance, Scope]


def _index(analyses: Sequence[RunAnalysis]) -> Dict[Key, List[List[Repeat]]]:
    """key -> [run][repeat]: every file of the side is one run, every instance of the key
    inside it one repeat (file, then index order)."""
    out: Dict[Key, List[List[Repeat]]] = {}
    for analysis in analyses:
        mine: Dict[Key, List[Repeat]] = {}
        for inst in analysis.instances:
            for scope in analysis.scopes(inst):
                mine.setdefault(instance_key(inst) + (scope.name,), []).append(
                    (analysis, inst, scope))
        for key, repeats in mine.items():
            out.setdefault(key, []).append(repeats)
    return out


def _metrics_of(runs: List[List[Repeat]]) -> List[str]:
    return [inst.metric for run in runs for _, inst, _ in run]


def _describe(key: Key) -> str:
    condition = key[1] + (f" ({key[2]})" if key[2] not in ("", "parallel") else "")
    return f"{key[0]} [{condition}]" + (f" [{key[3]}]" if key[3] else "")


def _units(runs: List[List[Repeat]], metric: str) -> List[Run]:
    return run_units([[a.samples(i, s) for a, i, s in repeats] for repeats in runs], metric)


Archive = Dict[Key, Dict[str, ArchiveSpread]]


def load_archive(directory: str) -> Archive:
    """Run-to-run spread of every figure from an A/A archive: every *.h5 in DIR is one
    run of the same scenario on the same, unchanged fabric. Raises ResultFileError."""
    paths = sorted(glob.glob(os.path.join(directory, "*.h5")))
    if len(paths) < 2:
        raise ResultFileError(f"{directory}: an A/A archive needs at least 2 result files "
                              f"(*.h5) of the same scenario, found {len(paths)}")
    results = [open_result(p, warn_incomplete=False) for p in paths]
    try:
        index = _index([RunAnalysis(r) for r in results])
        source = f"{len(paths)} files in {directory}"
        out: Archive = {}
        for key, runs in index.items():
            metric = runs[0][0][1].metric
            logs = run_log_figures(metric, _units(runs, metric), STATS)
            spreads = {stat: archive_spread(logs[:, i], source) for i, stat in enumerate(STATS)}
            out[key] = {k: v for k, v in spreads.items() if v is not None}
        return out
    finally:
        for r in results:
            r.close()


def _notes_unmatched(a: Side, b: Side, ref, other) -> List[str]:
    notes = []
    only_ref = [k for k in ref if k not in other]
    only_other = [k for k in other if k not in ref]
    if only_ref:
        notes.append(f"only in {a.label} (not in {b.label}): "
                     + ", ".join(_describe(k) for k in only_ref))
    if only_other:
        notes.append(f"only in {b.label}: " + ", ".join(_describe(k) for k in only_other))
    return notes


def compare_sides(a: Side, b: Side, resamples: int, seed: int,
                  negligible: float = DEFAULT_NEGLIGIBLE, archive: Optional[Archive] = None
                  ) -> Tuple[pd.DataFrame, List[str]]:
    """One row per (common key, statistic); notes name what was not compared."""
    ref, other = _index(a.analyses), _index(b.analyses)
    notes = _notes_unmatched(a, b, ref, other)
    rows = []
    for key in [k for k in ref if k in other]:
        a_inst = ref[key][0][0][1]
        metric = a_inst.metric
        # every run and repeat of both sides, not only the first: a side whose runs measured
        # the case as different metrics would be pooled under the first one's
        a_metrics, b_metrics = _metrics_of(ref[key]), _metrics_of(other[key])
        if a_metrics + b_metrics != [metric] * (len(a_metrics) + len(b_metrics)):
            notes.append(f"{_describe(key)}: metric differs ({', '.join(sorted(set(a_metrics)))} vs "
                         f"{', '.join(sorted(set(b_metrics)))}); not compared")
            continue
        figures = compare_figures(metric, _units(ref[key], metric), _units(other[key], metric),
                                  STATS, resamples, seed, negligible, (archive or {}).get(key))
        repeats = (max(len(run) for run in ref[key]), max(len(run) for run in other[key]))
        for f in figures:
            rows.append({
                "case": key[0], "condition": key[1], "pass": key[2], "scope": key[3],
                "label": condition_label(a_inst, replicate=False),
                "name": a_inst.get("name"), "bytes": a_inst.get("bytes"),
                "metric": metric, "unit": unit_of(metric), "stat": f.stat,
                "reference": a.label, "other": b.label,
                "runs_ref": f.runs_a, "runs_other": f.runs_b,
                "repeats_ref": repeats[0], "repeats_other": repeats[1],
                "n_ref": f.n_a, "n_other": f.n_b, "ref_value": f.a_value,
                "other_value": f.b_value, "diff": f.diff, "ci_low": f.low, "ci_high": f.high,
                "relative": (f.b_value / f.a_value - 1.0) if f.a_value else float("nan"),
                "verdict": f.verdict, "method": f.method, "thin_tail": f.thin_tail, "p": f.p})
    # the rows of this comparison together: one false-difference rate over all of them
    verdicts, adjusted, method = rows_false_differences([r["p"] for r in rows],
                                                        [r["verdict"] for r in rows])
    for row, verdict, q in zip(rows, verdicts, adjusted):
        row.update(row_verdict=row["verdict"], verdict=verdict, p_rows=q, rows_method=method)
    return pd.DataFrame(rows), notes


def comparison_frame(analyses: List[RunAnalysis], labels: List[str], resamples: int,
                     seed: int, min_effect: float = DEFAULT_NEGLIGIBLE
                     ) -> Tuple[pd.DataFrame, List[str]]:
    """First analysis = reference, each other one compared with it (one run per side)."""
    frames, notes = [], []
    ref = Side(labels[0], [analyses[0].result], [analyses[0]])
    for pos in range(1, len(analyses)):
        other = Side(labels[pos], [analyses[pos].result], [analyses[pos]])
        frame, n = compare_sides(ref, other, resamples, seed, min_effect)
        frames.append(frame)
        notes.extend(n)
    frames = [f for f in frames if not f.empty]
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), notes


def _run_to_run_unknown(group: pd.DataFrame) -> bool:
    return bool(group["method"].str.contains("run-to-run variation unknown").all())


def text_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(no common cases to compare)"
    labelled = bool((frame["scope"] != "").any())
    out = []
    for (ref, other), group in frame.groupby(["reference", "other"], sort=False):
        runs = (int(group["runs_ref"].max()), int(group["runs_other"].max()))
        repeats = (int(group["repeats_ref"].max()), int(group["repeats_other"].max()))
        out.append(f"== {other} vs {ref} (reference); runs per side: {runs[0]} vs {runs[1]}"
                   + (f" (repeats inside a run: {repeats[0]} vs {repeats[1]}, not runs)"
                      if max(repeats) > 1 else ""))
        if _run_to_run_unknown(group):
            out.append(f"   {ONE_RUN_NOTE}")
        else:
            out.append(f"   interval: {group['method'].iloc[0]}")
        out.append(f"   {group['rows_method'].iloc[0]}")
        rows = []
        for _, r in group.iterrows():
            scope = {"scope": scope_label(Scope(r["scope"]))} if labelled else {}
            rows.append({
                "case": r["case"], "condition": r["label"], **scope,
                "stat": r["stat"], "unit": r["unit"],
                "ref": format_number(r["ref_value"]), "other": format_number(r["other_value"]),
                "diff [95% CI]": f"{format_number(r['diff'])} [{format_number(r['ci_low'])}, "
                                 f"{format_number(r['ci_high'])}]",
                "rel": "-" if not np.isfinite(r["relative"]) else f"{100 * r['relative']:+.1f}%",
                "verdict": verdict_text(r),
            })
        out.append(pd.DataFrame(rows).to_string(index=False))
    return "\n".join(out)


def _cdfs(frame: pd.DataFrame, sides: List[Side]) -> list:
    keys = list(dict.fromkeys(zip(frame["case"], frame["condition"], frame["pass"],
                                  frame["scope"]))) if not frame.empty else []
    indexes = [_index(side.analyses) for side in sides]
    out = []
    for key in keys[:MAX_CDF_FIGURES]:
        series, metric = [], "latency"
        for side, index in zip(sides, indexes):
            runs = index.get(key, [])
            flat = [rep for run in runs for rep in run]
            for n, (analysis, inst, scope) in enumerate(flat):
                metric = inst.metric
                values = sample_values_for_plot(analysis.samples(inst, scope), metric)
                if len(values):
                    series.append((side.label + (f" #{n + 1}" if len(flat) > 1 else ""), values))
        out.append((_describe(key), metric, series))
    return out


def _common_description(sides: List[Side]) -> str:
    def cases(side):
        keys = _index(side.analyses)
        return ", ".join(_describe(k) for k in keys) or "(no test instances)"
    return "; ".join(f"{side.label} has: {cases(side)}" for side in sides)


def _frame_of(sides: List[Side], split: Optional[int], resamples: int, seed: int,
              min_effect: float, archive: Optional[Archive]) -> Tuple[pd.DataFrame, List[str]]:
    if split is not None:
        return compare_sides(sides[0], sides[1], resamples, seed, min_effect, archive)
    frames, notes = [], []
    for other in sides[1:]:
        f, n = compare_sides(sides[0], other, resamples, seed, min_effect, archive)
        frames.append(f)
        notes.extend(n)
    frames = [f for f in frames if not f.empty]
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), notes


def run_compare(results: List[ResultFile], output: Optional[str], resamples: int = 400,
                seed: int = 12345, min_effect: float = DEFAULT_NEGLIGIBLE,
                stream: Optional[TextIO] = None, split: Optional[int] = None,
                model: Optional[str] = None, tp: Optional[int] = None,
                aa_archive: Optional[str] = None) -> pd.DataFrame:
    """Compare files; ``split`` = number of files on side A (``A1 A2 -- B1 B2``), else the
    first file is the reference for every other one; ``aa_archive``: a directory of A/A
    runs whose spread stands for run-to-run variation. Raises NoCommonCases (exit 2)."""
    labels = _labels(results)
    analyses = [RunAnalysis(r) for r in results]
    if split is not None:
        def side(lo, hi, letter):
            label = labels[lo] if hi - lo == 1 else f"{letter} ({hi - lo} runs)"
            return Side(label, results[lo:hi], analyses[lo:hi])
        sides = [side(0, split, "A"), side(split, len(results), "B")]
    else:
        sides = [Side(l, [r], [a]) for l, r, a in zip(labels, results, analyses)]
    archive = load_archive(aa_archive) if aa_archive else None
    frame, notes = _frame_of(sides, split, resamples, seed, min_effect, archive)
    if frame.empty:
        raise NoCommonCases("no case is on both sides, nothing to compare: "
                            + _common_description(sides))
    context, warnings = context_frame(results, labels)
    for w in warnings:
        print(f"WARNING: {w}", file=stream)
    qos = qos_frame(results, labels)
    if not qos.empty:
        print("congestion control / QoS of each run:", file=stream)
        print(qos.to_string(index=False), file=stream)
    print(text_table(frame), file=stream)
    for n in notes:
        print(f"note: {n}", file=stream)
    impact_lines = compare_lines([side.results[0] for side in sides],
                                 [side.label for side in sides], model, tp)
    impact_lines += line_rate_lines([side.results[0] for side in sides],
                                    [side.label for side in sides])
    for line in impact_lines:
        print(f"serving impact: {line}", file=stream)
    print(headline(frame), file=stream)
    if output:
        one_run = ONE_RUN_NOTE if _run_to_run_unknown(frame) else None
        page = comparison_page([(s.label, [r.path for r in s.results]) for s in sides], context,
                               warnings, frame, notes, min_effect, one_run, _cdfs(frame, sides),
                               impact_lines, qos)
        with open(output, "w", encoding="utf-8") as out:
            out.write(page)
    return frame
