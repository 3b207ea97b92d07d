"""The comparison page (compare -o FILE.html): the same rows the text shows, rendered."""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from . import html as H
from . import plots
from .compare_stats import headline, tally, verdict_text
from .run_analysis import format_bytes, format_number
from .scopes import Scope, scope_label
from .stats import is_bandwidth

# (title, metric, [(series label, values)]) per compared key, for the CDF figures
CdfSeries = Tuple[str, str, List[Tuple[str, np.ndarray]]]


def _difference_rows(frame: pd.DataFrame) -> Tuple[pd.DataFrame, pd.DataFrame]:
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
                      "95% CI": f"[{format_number(r['ci_low'])}, {format_number(r['ci_high'])}]",
                      "relative": "-" if not np.isfinite(r["relative"])
                      else f"{100 * r['relative']:+.1f}%",
                      "verdict": verdict_text(r)})
        classes.append({"verdict": {"worse": "bad", "better": "good"}.get(r["verdict"], "")})
    return pd.DataFrame(shown), pd.DataFrame(classes)


DIFFERENCES_INTRO = (
    "other minus reference, each value the same figure summary shows (bandwidth p99/p99.9 = "
    "bytes / the p99/p99.9 sample time: the slow side). 95% interval: hierarchical bootstrap "
    "over runs, repeats inside a run, ranks and blocks of consecutive iterations (fixed seed), "
    "widened to a t interval on the runs' log figures when run-to-run variation is known "
    "(2+ runs on a side, or an A/A archive). 'no clear difference' = the interval contains 0, "
    "or the tail is thin (fewer than 10 samples beyond that percentile); 'cannot tell (one run "
    "per side)' = the within-run interval excludes 0 but nothing measured how much runs differ; "
    "'cannot tell (runs' permutation test)' = the t interval excludes 0 but the runs' own "
    "permutation test (4 vs 4 runs or more) does not confirm it; "
    "'negligible' = real but smaller than {pct}%.")


def _qos_section(qos: pd.DataFrame) -> str:
    # Identical on every side: one folded line, so the differences stay near the top.
    side_columns = [c for c in qos.columns if c != "setting"]
    same = all(len({str(v) for v in row}) == 1 for row in qos[side_columns].itertuples(index=False))
    table = H.table(qos, left=list(qos.columns))
    content = [f"<details><summary>the same on every side ({len(qos)} settings)</summary>"
               f"{table}</details>"] if same else [table]
    return H.section("qos", "Congestion control and QoS of each run", content,
                     intro="PFC, trust, DSCP map, ECN, RoCE mode and traffic class per fabric "
                           "interface and port, and the library variables that choose them: "
                           "the conditions each side ran under.")


def _context_section(context: pd.DataFrame, warnings: Sequence[str]) -> str:
    differing = {w.split(" differs")[0] for w in warnings}
    classes = [{c: ("bad" if row["fact"] in differing and c != "fact" else "")
                for c in context.columns} for _, row in context.iterrows()]
    return H.section("context", "Runs side by side",
                     ["<details><summary>all facts of every file "
                      f"({len(context)})</summary>" +
                      H.table(context, left=list(context.columns),
                              classes=pd.DataFrame(classes)) + "</details>"],
                     intro="Topology, conditions and inventory of each run; highlighted rows "
                           "differ.")


def comparison_page(side_files: Sequence[Tuple[str, Sequence[str]]], context: pd.DataFrame,
                    warnings: Sequence[str], frame: pd.DataFrame, notes: Sequence[str],
                    negligible: float, one_run_note: Optional[str], cdfs: Sequence[CdfSeries],
                    impact_lines: Sequence[str] = (), qos: Optional[pd.DataFrame] = None) -> str:
    """side_files: (side label, its file paths); one_run_note: shown as a warning when
    no comparison saw run-to-run variation."""
    body = ["<h1>fabscope comparison</h1>",
            "<div class=\"muted\">" + " | ".join(H.esc(f"{label}: " + ", ".join(paths))
                                                 for label, paths in side_files) + "</div>"]
    worse = tally(frame)["worse"]
    body.append(f"<div class=\"verdict {'fail' if worse else 'pass'}\">"
                f"<b>{H.esc(headline(frame))}</b></div>")
    if one_run_note:
        body.append(H.warning(one_run_note))
    if impact_lines:  # impact_text.compare_lines: what the difference costs the served model
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
        body.append(_qos_section(qos))
    if not frame.empty:
        shown, classes = _difference_rows(frame)
        rates = [f"<p>{H.esc(f'{other} vs {ref}: {m}')}</p>" for (ref, other), m in
                 frame.groupby(["reference", "other"], sort=False)["rows_method"].first().items()]
        body.append(H.section("differences", "Differences", rates + [
            H.table(shown, left=["vs", "test", "condition", "verdict"], classes=classes)],
            intro=DIFFERENCES_INTRO.format(pct=f"{100 * negligible:g}")))
    if notes:
        body.append(H.section("unmatched", "Not compared",
                              ["<ul>" + "".join(f"<li>{H.esc(n)}</li>" for n in notes) + "</ul>"]))
    figs = [H.figure(plots.cdf(series, "GB/s per sample" if is_bandwidth(metric) else
                               "latency (us)", title, is_bandwidth(metric)))
            for title, metric, series in cdfs if series]
    if figs:
        body.append(H.section("cdfs", "Distributions", [H.grid(figs)]))
    body.append(_context_section(context, warnings))
    return H.page("fabscope comparison", body)
