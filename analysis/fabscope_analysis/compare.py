"""`compare A.h5 B.h5 [...]` and `compare A1.h5 A2.h5 -- B1.h5 B2.h5`: the same cases
side by side, with the run-to-run noise inside the interval.

Without ``--`` the first file is the reference and every other file is compared with it.
With ``--`` the files before it are several runs of side A (the reference) and the files
after it several runs of side B; one comparison A vs B.

Instances are matched by (case, condition, pass) and then by site scope (scopes.py). The
same key measured several times is a set of *replicates*: several files of one side,
and/or several instances of one file with the same case (the ``replicate`` instance
attribute of a scenario's ``repeats: N``). Differences of p50/p99/p99.9 come with a 95 %
hierarchical bootstrap interval: replicates (runs), then ranks, then blocks of consecutive
iterations (stats.hierarchical_bootstrap_diffs). Every value is stats.figure_value, the
same number summary shows. With one replicate per side run-to-run variation is unknown,
and the page and the text say so.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, TextIO, Tuple

import numpy as np
import pandas as pd

from . import html as H
from . import plots
from .errors import ResultFileError
from .inventory import INFORMATIONAL_FACTS, qos_frame, topology
from .reader import ResultFile, TestInstance
from .run_analysis import RunAnalysis, condition_label, format_bytes, format_number, instance_key
from .scopes import Scope, scope_label
from .stats import (TAIL_QUANTILES, figure_value, hierarchical_bootstrap_diffs,
                    is_bandwidth, pooled, sample_values_for_plot, side_units, unit_of)

STATS = ("p50", "p99", "p99.9")
MIN_TAIL_SAMPLES = 10  # fewer samples beyond a percentile than this: the tail is a guess
MAX_CDF_FIGURES = 24
DEFAULT_NEGLIGIBLE = 0.05
ONE_RUN_NOTE = ("one run per side: run-to-run variation is unknown; the intervals hold the "
                "variation within each run only (ranks and blocks of consecutive iterations). "
                "Repeat the runs (compare A1 A2 -- B1 B2, or repeats: N) to include it.")


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
Replicate = Tuple[RunAnalysis, TestInstance, Scope]


def _index(analyses: Sequence[RunAnalysis]) -> Dict[Key, List[Replicate]]:
    """Every replicate of every key, over the side's files (in file, then index order)."""
    out: Dict[Key, List[Replicate]] = {}
    for analysis in analyses:
        for inst in analysis.instances:
            for scope in analysis.scopes(inst):
                out.setdefault(instance_key(inst) + (scope.name,), []).append(
                    (analysis, inst, scope))
    return out


def _describe(key: Key) -> str:
    condition = key[1] + (f" ({key[2]})" if key[2] not in ("", "parallel") else "")
    return f"{key[0]} [{condition}]" + (f" [{key[3]}]" if key[3] else "")


def _replicate_samples(replicates: List[Replicate]) -> List[pd.DataFrame]:
    return [analysis.samples(inst, scope) for analysis, inst, scope in replicates]


def compare_sides(a: Side, b: Side, resamples: int, seed: int,
                  negligible: float = DEFAULT_NEGLIGIBLE) -> Tuple[pd.DataFrame, List[str]]:
    """One row per (common key, statistic); notes name what was not compared."""
    ref, other = _index(a.analyses), _index(b.analyses)
    notes = []
    only_ref = [k for k in ref if k not in other]
    only_other = [k for k in other if k not in ref]
    if only_ref:
        notes.append(f"only in {a.label} (not in {b.label}): "
                     + ", ".join(_describe(k) for k in only_ref))
    if only_other:
        notes.append(f"only in {b.label}: " + ", ".join(_describe(k) for k in only_other))
    rows = []
    for key in [k for k in ref if k in other]:
        a_inst, b_inst = ref[key][0][1], other[key][0][1]
        metric = a_inst.metric
        if b_inst.metric != metric:
            notes.append(f"{_describe(key)}: metric differs ({metric} vs {b_inst.metric}); "
                         "not compared")
            continue
        ua = side_units(_replicate_samples(ref[key]), metric)
        ub = side_units(_replicate_samples(other[key]), metric)
        n_a = sum(len(u.times) for rep in ua for u in rep)
        n_b = sum(len(u.times) for rep in ub for u in rep)
        results = hierarchical_bootstrap_diffs(metric, ua, ub, STATS, resamples=resamples,
                                               seed=seed)
        # Values are the figure itself (stats.figure_value on the pooled samples): the
        # reference value plus the difference is the other value.
        for stat, (diff, low, high) in zip(STATS, results):
            a_val = figure_value(metric, stat, *pooled(ua)) if n_a else float("nan")
            b_val = figure_value(metric, stat, *pooled(ub)) if n_b else float("nan")
            q = TAIL_QUANTILES[stat]
            tail_n = min(n_a, n_b) * (1 - q / 100.0)
            thin = stat != "p50" and tail_n < MIN_TAIL_SAMPLES
            rows.append({
                "case": key[0], "condition": key[1], "pass": key[2], "scope": key[3],
                "label": condition_label(a_inst, replicate=False),
                "name": a_inst.get("name"), "bytes": a_inst.get("bytes"),
                "metric": metric, "unit": unit_of(metric), "stat": stat,
                "reference": a.label, "other": b.label,
                "runs_ref": len(ua), "runs_other": len(ub),
                "n_ref": n_a, "n_other": n_b, "ref_value": a_val,
                "other_value": b_val, "diff": diff, "ci_low": low, "ci_high": high,
                "relative": (b_val / a_val - 1.0) if a_val else float("nan"),
                "verdict": difference_verdict(metric, low, high, n_a, n_b, a_val, b_val,
                                              negligible, thin),
                "thin_tail": thin})
    return pd.DataFrame(rows), notes


def difference_verdict(metric: str, low: float, high: float, n_a: int, n_b: int,
                       a_val: float, b_val: float, negligible: float,
                       thin_tail: bool = False) -> str:
    """no samples | n/a | no clear difference | negligible (<X%) | better | worse.

    A thin tail (fewer than MIN_TAIL_SAMPLES samples beyond the percentile) is never
    called a difference: it is close to one sample. A real difference (the interval
    excludes 0) smaller than ``negligible`` (relative) is 'negligible'.
    """
    if n_a == 0 or n_b == 0:
        return "no samples"
    if not (np.isfinite(low) and np.isfinite(high)):
        return "n/a"
    if thin_tail or low <= 0.0 <= high:
        return "no clear difference"
    if a_val and abs(b_val / a_val - 1.0) < negligible:
        return f"negligible (<{100 * negligible:g}%)"
    higher = low > 0
    better = higher if is_bandwidth(metric) else not higher
    return "better" if better else "worse"


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


def _verdict_text(r) -> str:
    return r["verdict"] + (" (thin tail)" if r["thin_tail"] else "")


def tally(frame: pd.DataFrame) -> Dict[str, int]:
    """How many rows got each verdict class: worse, better, negligible, no clear difference."""
    out = {"worse": 0, "better": 0, "negligible": 0, "no clear difference": 0, "other": 0}
    for v in (frame["verdict"] if not frame.empty else []):
        key = "negligible" if str(v).startswith("negligible") else v
        out[key if key in out else "other"] += 1
    return out


def headline(frame: pd.DataFrame) -> str:
    t = tally(frame)
    return (f"compare: {t['worse']} worse, {t['better']} better, {t['negligible']} negligible, "
            f"{t['no clear difference']} no clear difference (of {len(frame)} rows)")


def text_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(no common cases to compare)"
    labelled = bool((frame["scope"] != "").any())
    out = []
    for (ref, other), group in frame.groupby(["reference", "other"], sort=False):
        runs = (int(group["runs_ref"].max()), int(group["runs_other"].max()))
        out.append(f"== {other} vs {ref} (reference); replicates per side: "
                   f"{runs[0]} vs {runs[1]}")
        if max(runs) <= 1:
            out.append(f"   {ONE_RUN_NOTE}")
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
                "verdict": _verdict_text(r),
            })
        out.append(pd.DataFrame(rows).to_string(index=False))
    return "\n".join(out)


def _html(sides: List[Side], context, warnings, frame, notes, negligible,
          impact_lines: Sequence[str] = (), qos: Optional[pd.DataFrame] = None) -> str:
    labels = [l for side in sides for l in [side.label]]
    body = ["<h1>fabscope comparison</h1>",
            "<div class=\"muted\">" + " | ".join(
                H.esc(f"{side.label}: " + ", ".join(r.path for r in side.results))
                for side in sides) + "</div>"]
    t = tally(frame)
    worse = t["worse"]
    body.append(f"<div class=\"verdict {'fail' if worse else 'pass'}\">"
                f"<b>{H.esc(headline(frame))}</b></div>")
    if not frame.empty and int(frame[["runs_ref", "runs_other"]].to_numpy().max()) <= 1:
        body.append(H.warning(ONE_RUN_NOTE))
    if impact_lines:  # impact.compare_lines: what the difference costs the served model
        body.append(H.section("impact", "Serving impact", ["<ul>" + "".join(
            f"<li>{H.esc(line)}</li>" for line in impact_lines) + "</ul>"],
            intro="Time per generated token added by TP communication (p99 of a decode "
                  "step's sum of all-reduces, from the raw samples) and KV transfer, side by "
                  "side; python3 -m fabscope_analysis impact FILE gives every figure."))
    if warnings:
        body.append(H.section("config", "Configuration differences that matter",
                              ["<ul class=\"compact\">" + "".join(
                                  f"<li>{H.esc(w)}</li>" for w in warnings) + "</ul>"],
                              intro="Real configuration only (libraries, MCA/UCX/NCCL "
                                    "settings, firmware, MTU, link rates, topology); what "
                                    "launchers set per job or rank is not compared. A "
                                    "difference below may come from these."))
    if qos is not None and not qos.empty:
        # Identical on every side: one folded line, so the differences stay near the top.
        side_columns = [c for c in qos.columns if c != "setting"]
        same = all(len({str(v) for v in row}) == 1
                   for row in qos[side_columns].itertuples(index=False))
        table = H.table(qos, left=list(qos.columns))
        content = [f"<details><summary>the same on every side ({len(qos)} settings)</summary>"
                   f"{table}</details>"] if same else [table]
        body.append(H.section("qos", "Congestion control and QoS of each run", content,
                              intro="PFC, trust, DSCP map, ECN, RoCE mode and traffic class "
                                    "per fabric interface and port, and the library variables "
                                    "that choose them: the conditions each side ran under."))
    if not frame.empty:
        labelled = bool((frame["scope"] != "").any())
        shown, classes = [], []
        for _, r in frame.iterrows():
            shown.append({"vs": f"{r['other']} vs {r['reference']}", "test": r["name"],
                          "bytes": format_bytes(r["bytes"]), "condition": r["label"],
                          **({"scope": scope_label(Scope(r["scope"]))} if labelled else {}),
                          "stat": r["stat"], "unit": r["unit"],
                          "runs": f"{int(r['runs_ref'])} / {int(r['runs_other'])}",
                          "reference": format_number(r["ref_value"]),
                          "other": format_number(r["other_value"]),
                          "difference": format_number(r["diff"]),
                          "95% CI": f"[{format_number(r['ci_low'])}, "
                                    f"{format_number(r['ci_high'])}]",
                          "relative": "-" if not np.isfinite(r["relative"])
                          else f"{100 * r['relative']:+.1f}%",
                          "verdict": _verdict_text(r)})
            classes.append({"verdict": {"worse": "bad", "better": "good"}.get(r["verdict"], "")})
        body.append(H.section(
            "differences", "Differences", [H.table(pd.DataFrame(shown),
                                                   left=["vs", "test", "condition", "verdict"],
                                                   classes=pd.DataFrame(classes))],
            intro="other minus reference, each value the same figure summary shows (bandwidth "
                  "p99/p99.9 = bytes / the p99/p99.9 sample time: the slow side). 95% "
                  "hierarchical bootstrap interval: runs (replicates), then ranks, then blocks "
                  "of consecutive iterations (fixed seed). 'no clear difference' = the "
                  "interval contains 0, or the tail is thin (fewer than 10 samples beyond that "
                  f"percentile); 'negligible' = real but smaller than {100 * negligible:g}%."))
    if notes:
        body.append(H.section("unmatched", "Not compared",
                              ["<ul>" + "".join(f"<li>{H.esc(n)}</li>" for n in notes) + "</ul>"]))
    figs = []
    keys = list(dict.fromkeys(zip(frame["case"], frame["condition"], frame["pass"],
                                  frame["scope"]))) if not frame.empty else []
    indexes = [_index(side.analyses) for side in sides]
    for key in keys[:MAX_CDF_FIGURES]:
        series = []
        metric = "latency"
        for side, index in zip(sides, indexes):
            for n, (analysis, inst, scope) in enumerate(index.get(key, [])):
                metric = inst.metric
                values = sample_values_for_plot(analysis.samples(inst, scope), metric)
                if len(values):
                    run = f" #{n + 1}" if len(index[key]) > 1 else ""
                    series.append((side.label + run, values))
        if series:
            figs.append(H.figure(plots.cdf(series, "GB/s per sample" if is_bandwidth(metric)
                                           else "latency (us)", _describe(key),
                                           is_bandwidth(metric))))
    if figs:
        body.append(H.section("cdfs", "Distributions", [H.grid(figs)]))
    classes_ctx = []
    differing = {w.split(" differs")[0] for w in warnings}
    for _, row in context.iterrows():
        classes_ctx.append({c: ("bad" if row["fact"] in differing and c != "fact" else "")
                            for c in context.columns})
    body.append(H.section("context", "Runs side by side",
                          ["<details><summary>all facts of every file "
                           f"({len(context)})</summary>" +
                           H.table(context, left=list(context.columns),
                                   classes=pd.DataFrame(classes_ctx)) + "</details>"],
                          intro="Topology, conditions and inventory of each run; highlighted "
                                "rows differ."))
    return H.page("fabscope comparison", body)


def _common_description(sides: List[Side]) -> str:
    def cases(side):
        keys = _index(side.analyses)
        return ", ".join(_describe(k) for k in keys) or "(no test instances)"
    return "; ".join(f"{side.label} has: {cases(side)}" for side in sides)


def run_compare(results: List[ResultFile], output: Optional[str], resamples: int = 400,
                seed: int = 12345, min_effect: float = DEFAULT_NEGLIGIBLE,
                stream: Optional[TextIO] = None, split: Optional[int] = None,
                model: Optional[str] = None, tp: Optional[int] = None) -> pd.DataFrame:
    """Compare files; ``split`` = number of files on side A (``A1 A2 -- B1 B2``), else the
    first file is the reference for every other one. Raises NoCommonCases (exit 2)."""
    labels = _labels(results)
    analyses = [RunAnalysis(r) for r in results]
    if split is not None:
        def side(lo, hi, letter):
            label = labels[lo] if hi - lo == 1 else f"{letter} ({hi - lo} runs)"
            return Side(label, results[lo:hi], analyses[lo:hi])
        sides = [side(0, split, "A"), side(split, len(results), "B")]
        frame, notes = compare_sides(sides[0], sides[1], resamples, seed, min_effect)
    else:
        sides = [Side(l, [r], [a]) for l, r, a in zip(labels, results, analyses)]
        frames, notes = [], []
        for other in sides[1:]:
            f, n = compare_sides(sides[0], other, resamples, seed, min_effect)
            frames.append(f)
            notes.extend(n)
        frames = [f for f in frames if not f.empty]
        frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
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
    from .impact import compare_lines
    impact_lines = compare_lines([side.results[0] for side in sides],
                                 [side.label for side in sides], model, tp)
    for line in impact_lines:
        print(f"serving impact: {line}", file=stream)
    print(headline(frame), file=stream)
    if output:
        with open(output, "w", encoding="utf-8") as out:
            out.write(_html(sides, context, warnings, frame, notes, min_effect, impact_lines, qos))
    return frame
