"""`compare A.h5 B.h5 [...] [-o compare.html]`: the same cases side by side.

The first file is the reference; every other file is compared with it. Instances are
matched by (case, condition, pass) and then by site scope (scopes.py): a site's own
samples are only compared with the same site's, an inter-site (WAN) path only with the
same inter-site path, so no comparison mixes scopes. A run without site labels has one
unnamed scope, which does not match a labelled run's scopes. Differences of p50/p99/p99.9 come with a bootstrap
confidence interval; a difference counts only when its interval excludes zero.
"""

from __future__ import annotations

import sys
from typing import Dict, List, Optional, TextIO, Tuple

import numpy as np
import pandas as pd

from . import html as H
from . import plots
from .inventory import INFORMATIONAL_FACTS, topology
from .reader import ResultFile, TestInstance
from .run_analysis import RunAnalysis, format_bytes, format_number, instance_key
from .scopes import Scope, scope_label
from .stats import (bootstrap_quantile_diffs, display_quantile, is_bandwidth,
                    sample_values_for_compare, unit_of)

STATS = ("p50", "p99", "p99.9")
MIN_TAIL_SAMPLES = 10  # fewer samples beyond a percentile than this: the tail is a guess
MAX_CDF_FIGURES = 24


def _labels(results: List[ResultFile]) -> List[str]:
    names = [r.name for r in results]
    if len(set(names)) == len(names):
        return names
    return [f"{chr(ord('A') + i)}: {r.path}" for i, r in enumerate(results)]


def context_frame(results: List[ResultFile], labels: List[str]) -> Tuple[pd.DataFrame, List[str]]:
    """Facts per file side by side, and warnings for facts that differ."""
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


def _index(analysis: RunAnalysis) -> Dict[Key, Tuple[TestInstance, Scope]]:
    out = {}
    for inst in analysis.instances:
        for scope in analysis.scopes(inst):
            out.setdefault(instance_key(inst) + (scope.name,), (inst, scope))
    return out


def _describe(key: Key) -> str:
    return f"{key[0]} [{key[1]}]" + (f" [{key[3]}]" if key[3] else "")


def comparison_frame(analyses: List[RunAnalysis], labels: List[str], resamples: int,
                     seed: int, min_effect: float = 0.02) -> Tuple[pd.DataFrame, List[str]]:
    reference = _index(analyses[0])
    notes = []
    rows = []
    for other_pos in range(1, len(analyses)):
        other = _index(analyses[other_pos])
        only_ref = sorted(set(reference) - set(other))
        only_other = sorted(set(other) - set(reference))
        if only_ref:
            notes.append(f"only in {labels[0]} (not in {labels[other_pos]}): "
                         + ", ".join(_describe(k) for k in only_ref))
        if only_other:
            notes.append(f"only in {labels[other_pos]}: "
                         + ", ".join(_describe(k) for k in only_other))
        for key in [k for k in reference if k in other]:
            (a_inst, a_scope), (b_inst, b_scope) = reference[key], other[key]
            metric = a_inst.metric
            if b_inst.metric != metric:
                notes.append(f"{_describe(key)}: metric differs ({metric} vs "
                             f"{b_inst.metric}); not compared")
                continue
            a = sample_values_for_compare(analyses[0].samples(a_inst, a_scope), metric)
            b = sample_values_for_compare(analyses[other_pos].samples(b_inst, b_scope), metric)
            qs = [display_quantile(metric, s) for s in STATS]
            results = bootstrap_quantile_diffs(a, b, qs, resamples=resamples, seed=seed)
            for stat, q, (diff, low, high) in zip(STATS, qs, results):
                a_val = float(np.percentile(a, q)) if len(a) else float("nan")
                b_val = float(np.percentile(b, q)) if len(b) else float("nan")
                tail_n = min(len(a), len(b)) * (1 - max(q, 100 - q) / 100.0)
                rows.append({
                    "case": key[0], "condition": key[1], "pass": key[2], "scope": key[3],
                    "name": a_inst.get("name"), "bytes": a_inst.get("bytes"),
                    "metric": metric, "unit": unit_of(metric), "stat": stat,
                    "reference": labels[0], "other": labels[other_pos],
                    "n_ref": len(a), "n_other": len(b), "ref_value": a_val,
                    "other_value": b_val, "diff": diff, "ci_low": low, "ci_high": high,
                    "relative": (b_val / a_val - 1.0) if a_val else float("nan"),
                    "verdict": _verdict(metric, low, high, len(a), len(b), a_val, b_val,
                                        min_effect),
                    "thin_tail": stat != "p50" and 0 < tail_n < MIN_TAIL_SAMPLES})
    return pd.DataFrame(rows), notes


def _verdict(metric: str, low: float, high: float, n_a: int, n_b: int, a_val: float,
             b_val: float, min_effect: float) -> str:
    if n_a == 0 or n_b == 0:
        return "no samples"
    if not (np.isfinite(low) and np.isfinite(high)):
        return "n/a"
    if low <= 0.0 <= high:
        return "no clear difference"
    if a_val and abs(b_val / a_val - 1.0) < min_effect:
        return f"negligible (<{100 * min_effect:g}%)"
    higher = low > 0
    better = higher if is_bandwidth(metric) else not higher
    return "better" if better else "worse"


def text_table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(no common cases to compare)"
    labelled = bool((frame["scope"] != "").any())
    rows = []
    for _, r in frame.iterrows():
        scope = {"scope": scope_label(Scope(r["scope"]))} if labelled else {}
        rows.append({
            "case": r["case"], "condition": r["condition"] + (f" ({r['pass']})" if r["pass"]
                                                             not in ("", "parallel") else ""),
            **scope, "stat": r["stat"], "unit": r["unit"],
            "ref": format_number(r["ref_value"]), "other": format_number(r["other_value"]),
            "diff [95% CI]": f"{format_number(r['diff'])} [{format_number(r['ci_low'])}, "
                             f"{format_number(r['ci_high'])}]",
            "rel": "-" if not np.isfinite(r["relative"]) else f"{100 * r['relative']:+.1f}%",
            "verdict": r["verdict"] + (" (thin tail)" if r["thin_tail"] else ""),
        })
    out = []
    for (ref, other), group in frame.groupby(["reference", "other"], sort=False):
        out.append(f"== {other} vs {ref} (reference)")
        idx = group.index
        out.append(pd.DataFrame([rows[frame.index.get_loc(i)] for i in idx]).to_string(index=False))
    return "\n".join(out)


def _html(results, labels, context, warnings, frame, notes, analyses) -> str:
    body = [f"<h1>fabscope comparison</h1>",
            "<div class=\"muted\">" + " | ".join(H.esc(f"{l}: {r.path}")
                                                 for l, r in zip(labels, results)) + "</div>"]
    body.extend(H.warning(w) for w in warnings)
    differing = {w.split(" differs")[0] for w in warnings}
    ctx_classes = pd.DataFrame([{c: ("bad" if row["fact"] in differing and c != "fact" else "")
                                 for c in context.columns} for _, row in context.iterrows()])
    body.append(H.section("context", "Runs side by side",
                          [H.table(context, left=list(context.columns), classes=ctx_classes)],
                          intro="Topology, conditions and inventory of each run; highlighted "
                                "rows differ, so differences below may come from them."))
    if not frame.empty:
        labelled = bool((frame["scope"] != "").any())
        shown, classes = [], []
        for _, r in frame.iterrows():
            shown.append({"vs": f"{r['other']} vs {r['reference']}", "test": r["name"],
                          "bytes": format_bytes(r["bytes"]), "condition": r["condition"],
                          **({"scope": scope_label(Scope(r["scope"]))} if labelled else {}),
                          "stat": r["stat"], "unit": r["unit"],
                          "reference": format_number(r["ref_value"]),
                          "other": format_number(r["other_value"]),
                          "difference": format_number(r["diff"]),
                          "95% CI": f"[{format_number(r['ci_low'])}, "
                                    f"{format_number(r['ci_high'])}]",
                          "relative": "-" if not np.isfinite(r["relative"])
                          else f"{100 * r['relative']:+.1f}%",
                          "verdict": r["verdict"] + (" (thin tail)" if r["thin_tail"] else "")})
            classes.append({"verdict": {"worse": "bad", "better": "good"}.get(r["verdict"], "")})
        body.append(H.section(
            "differences", "Differences", [H.table(pd.DataFrame(shown),
                                                   left=["vs", "test", "condition", "verdict"],
                                                   classes=pd.DataFrame(classes))],
            intro="other minus reference; 95% bootstrap interval from resampling both runs' raw "
                  "samples (fixed seed). 'no clear difference' = the interval contains 0; "
                  "'negligible' = real but smaller than --min-effect. For "
                  "bandwidth (GB/s) p99/p99.9 are the slow side. 'thin tail': fewer than 10 "
                  "samples lie beyond that percentile, so it is close to a single sample."))
    if notes:
        body.append(H.section("unmatched", "Not compared",
                              ["<ul>" + "".join(f"<li>{H.esc(n)}</li>" for n in notes) + "</ul>"]))
    figs = []
    keys = list(dict.fromkeys(zip(frame["case"], frame["condition"], frame["pass"],
                                  frame["scope"]))) if not frame.empty else []
    indexes = [_index(analysis) for analysis in analyses]
    for key in keys[:MAX_CDF_FIGURES]:
        series = []
        metric = "latency"
        for label, analysis, index in zip(labels, analyses, indexes):
            found = index.get(key)
            if found is None:
                continue
            inst, scope = found
            metric = inst.metric
            values = sample_values_for_compare(analysis.samples(inst, scope), metric)
            if len(values):
                series.append((label, values))
        if not series:
            continue
        figs.append(H.figure(plots.cdf(series, "GB/s per sample" if is_bandwidth(metric)
                                       else "latency (us)", _describe(key),
                                       is_bandwidth(metric))))
    if figs:
        body.append(H.section("cdfs", "Distributions", [H.grid(figs)]))
    return H.page("fabscope comparison", body)


def run_compare(results: List[ResultFile], output: Optional[str], resamples: int = 400,
                seed: int = 12345, min_effect: float = 0.02,
                stream: TextIO = sys.stdout) -> pd.DataFrame:
    labels = _labels(results)
    analyses = [RunAnalysis(r) for r in results]
    context, warnings = context_frame(results, labels)
    frame, notes = comparison_frame(analyses, labels, resamples, seed, min_effect)
    for w in warnings:
        print(f"WARNING: {w}", file=stream)
    print(text_table(frame), file=stream)
    for n in notes:
        print(f"note: {n}", file=stream)
    if output:
        with open(output, "w", encoding="utf-8") as out:
            out.write(_html(results, labels, context, warnings, frame, notes, analyses))
    return frame
