"""How `impact` shows its figures: the headline lines, the text tables, the JSON file,
the report's section and compare's lines. The figures themselves are impact.py's."""

from __future__ import annotations

import json
from typing import List, Optional, Sequence, Union

import pandas as pd

from .. import html as H
from .impact import Impact, compute_impact, deployment_from_run
from .placement import DECODE
from ..models import ModelError, allreduce_bytes, kv_request_bytes
from ..reader import ResultFile
from ..run_analysis import format_bytes, format_number


def _f(value) -> str:
    return format_number(value)


def headline_lines(impact: Impact) -> List[str]:
    """A few lines: ms per token added by TP communication, KV share, inflation."""
    d = impact.deployment
    lines = []
    for r in impact.tp_rows:
        if r.get("p99_ms") is None:
            continue
        text = (f"TP communication [{r['condition']}] {r['series']}: {_f(r['p50_ms'])} ms per "
                f"token at p50, {_f(r['p99_ms'])} ms at p99 ({r['collectives_per_step']} x "
                f"{format_bytes(r['bytes'])} all-reduces, {r['how']}, "
                f"{r['ranks_measured']} ranks)")
        if "extrapolated_p99_ms" in r:
            text += (f"; extrapolated to TP{d.tp}: {_f(r['extrapolated_p50_ms'])} / "
                     f"{_f(r['extrapolated_p99_ms'])} ms")
        if "inflation_p99" in r:
            text += f"; x{_f(r['inflation_p50'])} p50, x{_f(r['inflation_p99'])} p99 vs quiet"
        lines.append(text)
    for r in impact.moe_rows:
        if r.get("p99_ms") is None:
            continue
        text = (f"MoE dispatch + combine [{r['condition']}] {r['series']}: {_f(r['p50_ms'])} ms "
                f"per token at p50, {_f(r['p99_ms'])} ms at p99 ({r['rounds_per_step']} rounds "
                f"of {r['tokens_per_rank']} tokens per rank, {r['how']}, {r['ranks_measured']} "
                "ranks)")
        if "inflation_p99" in r:
            text += f"; x{_f(r['inflation_p50'])} p50, x{_f(r['inflation_p99'])} p99 vs quiet"
        lines.append(text)
    for r in impact.frontend_rows:
        text = (f"front end [{r['condition']}] {r['series']} over {r['interface']} "
                f"({r['network']}): adds {_f(r['ttft_added_p50_ms'])} ms to the first token at "
                f"p50, {_f(r['ttft_added_p99_ms'])} ms at p99 (connect {_f(r['connect_p50_ms'])} / "
                f"{_f(r['connect_p99_ms'])} ms)")
        if "per_token_added_p99_ms" in r:
            text += f", {_f(r['per_token_added_p99_ms'])} ms per streamed chunk at p99"
        lines.append(text)
    for r in impact.mix_rows:
        if "inflation_p99" in r:
            lines.append(f"serving mix {r['series']}: together x{_f(r['inflation_mean'])} mean, "
                         f"x{_f(r['inflation_p99'])} p99 vs isolated ({_f(r['p50_ms'])} / "
                         f"{_f(r['p99_ms'])} ms p50/p99 together)")
    for r in impact.kv_rows:
        if "transfer_p99_ms" not in r:
            continue
        text = (f"KV transfer [{r['condition']}] {r['series']}: {_f(r['transfer_p50_ms'])} ms "
                f"p50, {_f(r['transfer_p99_ms'])} ms p99, queue {_f(r['queue_p50_ms'])} / "
                f"{_f(r['queue_p99_ms'])} ms ({format_bytes(r['bytes'])} per rank, {r['how']})")
        if "ttft_share_p50" in r:
            text += (f"; share of TTFT {100 * r['ttft_share_p50']:.1f}% p50, "
                     f"{100 * r['ttft_share_p99']:.1f}% p99")
        if "cif" in r:
            text += f"; congestion impact factor {kv_cif_text(r['cif'])} vs quiet"
        lines.append(text)
    return lines


def kv_cif_text(cif: dict) -> str:
    """'x1.2 p50, x1.3 p99, - p99.9' ('-': too few requests for that percentile)."""
    return ", ".join(f"{'-' if v is None else 'x' + _f(v)} {k}" for k, v in cif.items())


def print_impact(impact: Impact, stream) -> None:
    d = impact.deployment
    m = d.model
    print(f"serving impact: {d.describe()} [model from the {d.source}]", file=stream)
    print(f"  {impact.file}", file=stream)
    print(f"  TP all-reduce: {format_bytes(allreduce_bytes(m, d.decode_batch))} "
          f"({d.decode_batch} tokens x {m.hidden_size} x {m.dtype}), "
          f"{impact.placement().total_count('tp', DECODE)} per decode step; KV per request and "
          f"rank: {format_bytes(kv_request_bytes(m, d.tp, d.block_tokens, d.prompt_tokens))}",
          file=stream)
    print(f"  tail of a step: {impact.method}", file=stream)
    print("", file=stream)
    _print_tp_kv(impact, stream)
    _print_moe_frontend(impact, stream)
    if impact.mix_rows:
        print_mix_rows(impact.mix_rows, stream)
        print("", file=stream)
    for n in impact.notes:
        print(f"note: {n}", file=stream)
    for m_ in impact.missing:
        print(f"missing: {m_}", file=stream)


def _table(title: str, rows: List[dict], stream) -> None:
    print(title, file=stream)
    print(pd.DataFrame(rows).to_string(index=False), file=stream)
    print("", file=stream)


def _print_tp_kv(impact: Impact, stream) -> None:
    d = impact.deployment
    if impact.tp_rows:
        rows = [{"test": r["series"], "condition": r["condition"], "size": r["how"],
                 "ranks": r.get("ranks_measured", "-"),
                 "collective p50/p99 us": (f"{_f(r.get('collective_p50_us'))} / "
                                           f"{_f(r.get('collective_p99_us'))}"),
                 "ms/token p50": _f(r.get("p50_ms")), "ms/token p99": _f(r.get("p99_ms")),
                 "sum of p99s": _f(r.get("sum_of_p99s_ms")),
                 f"TP{d.tp} extrap. p50/p99": (f"{_f(r['extrapolated_p50_ms'])} / "
                                               f"{_f(r['extrapolated_p99_ms'])}"
                                               if "extrapolated_p99_ms" in r else "-"),
                 "inflation p50/p99": (f"{_f(r['inflation_p50'])} / {_f(r['inflation_p99'])}"
                                       if "inflation_p99" in r else "-")}
                for r in impact.tp_rows]
        _table("TP communication per generated token (added to every decode step, i.e. to "
               "each sequence's inter-token latency)", rows, stream)
    if impact.kv_rows:
        rows = [{"strategy": r["series"], "condition": r["condition"], "size": r["how"],
                 "requests": r.get("requests", "-"),
                 "transfer p50/p99 ms": (f"{_f(r.get('transfer_p50_ms'))} / "
                                         f"{_f(r.get('transfer_p99_ms'))}"),
                 "queue p50/p99 ms": (f"{_f(r.get('queue_p50_ms'))} / "
                                      f"{_f(r.get('queue_p99_ms'))}"),
                 "TTFT share p50/p99": (f"{100 * r['ttft_share_p50']:.1f}% / "
                                        f"{100 * r['ttft_share_p99']:.1f}%"
                                        if "ttft_share_p50" in r else "-"),
                 "CIF p50/p99/p99.9": (" / ".join("-" if v is None else _f(v)
                                                 for v in r["cif"].values())
                                       if "cif" in r else "-")}
                for r in impact.kv_rows]
        _table(f"KV transfer of a {d.prompt_tokens}-token request (prefill -> decode, one TP "
               "shard per rank)", rows, stream)


def _print_moe_frontend(impact: Impact, stream) -> None:
    d = impact.deployment
    if impact.moe_rows:
        rows = [{"test": r["series"], "condition": r["condition"], "size": r["how"],
                 "ranks": r.get("ranks_measured", "-"),
                 "round p50/p99 us": (f"{_f(r.get('round_p50_us'))} / {_f(r.get('round_p99_us'))}"),
                 "ms/token p50": _f(r.get("p50_ms")), "ms/token p99": _f(r.get("p99_ms")),
                 "inflation p50/p99": (f"{_f(r['inflation_p50'])} / {_f(r['inflation_p99'])}"
                                       if "inflation_p99" in r else "-")}
                for r in impact.moe_rows]
        rounds = impact.placement().total_count("moe", DECODE)
        _table(f"MoE dispatch + combine per generated token ({rounds} rounds of "
               f"{d.decode_batch} tokens per rank, composed like the all-reduces)", rows, stream)
    if impact.frontend_rows:
        rows = [{"test": r["series"], "condition": r["condition"],
                 "network": f"{r['network']} ({r['interface']})", "requests": r["requests"],
                 "connect p50/p99 ms": f"{_f(r['connect_p50_ms'])} / {_f(r['connect_p99_ms'])}",
                 "added to first token p50/p99 ms": (f"{_f(r['ttft_added_p50_ms'])} / "
                                                     f"{_f(r['ttft_added_p99_ms'])}"),
                 "added per chunk p99 ms": _f(r.get("per_token_added_p99_ms"))}
                for r in impact.frontend_rows]
        _table("Front end: what the network adds to a request beyond the server's own "
               "service time and chunk interval", rows, stream)


def print_mix_rows(rows: List[dict], stream) -> None:
    table = [{"test": r["test"], "class": r["class"], "phase": r["condition"],
              "samples": r["samples"], "mean ms": _f(r["mean_ms"]), "p50 ms": _f(r["p50_ms"]),
              "p99 ms": _f(r["p99_ms"]),
              "inflation mean/p99": (f"{_f(r['inflation_mean'])} / {_f(r['inflation_p99'])}"
                                     if "inflation_p99" in r else "-")}
             for r in rows]
    print("Serving mix: each traffic class alone (isolated), then with all the others "
          "(together); inflation = together / isolated", file=stream)
    print(pd.DataFrame(table).to_string(index=False), file=stream)


def write_json(impact: Impact, path: str) -> None:
    with open(path, "w", encoding="utf-8") as out:
        json.dump(impact.to_json(), out, indent=2, allow_nan=False, default=str)


def report_impact(result: ResultFile, model: Optional[str] = None,
                  tp: Optional[int] = None) -> Union[Impact, ModelError, None]:
    """The impact the report shows: None when no model is named, the error when the one
    named cannot be placed."""
    try:
        d = deployment_from_run(result, model, tp)
    except ModelError as exc:
        return exc
    return None if d is None else compute_impact(result, d)



def impact_html(impact: Union[Impact, ModelError, None]) -> str:
    """The report's "Serving impact" section ("" when no model is named)."""
    if isinstance(impact, ModelError):
        return H.section("impact", "Serving impact", [H.warning(f"no serving impact: {impact}")])
    if impact is None:
        return ""
    d = impact.deployment
    items = "".join(f"<li>{H.esc(line)}</li>" for line in headline_lines(impact))
    rest = "".join(f"<li class=\"muted\">{H.esc(kind)}: {H.esc(text)}</li>"
                   for kind, texts in (("note", impact.notes), ("missing", impact.missing))
                   for text in texts)
    return H.section("impact", f"Serving impact: {d.describe()}",
                     [f"<ul>{items or '<li>nothing measured matches this deployment</li>'}"
                      f"{rest}</ul>"],
                     intro=(f"Model from the {d.source}. Time per generated token added by "
                            "communication, from the raw samples (" + impact.method + "). "
                            "python3 -m fabscope_analysis impact FILE gives every figure."))


def compare_lines(results: Sequence[ResultFile], labels: Sequence[str],
                  model: Optional[str] = None, tp: Optional[int] = None) -> List[str]:
    """'B adds X ms per token at p99 more than A for M TPn [condition]', per condition
    both sides measured; [] when no side names a model."""
    impacts = []
    for r in results:
        try:
            d = deployment_from_run(r, model, tp)
        except ModelError as exc:
            return [f"no serving impact: {exc}"]
        if d is None:
            return []
        impacts.append(compute_impact(r, d))
    ref, ref_label = impacts[0], labels[0]
    lines = []
    for other, label in zip(impacts[1:], labels[1:]):
        d = other.deployment
        if (d.model.name, d.tp) != (ref.deployment.model.name, ref.deployment.tp):
            lines.append(f"{label}: deployment {d.describe()} differs from {ref_label}'s "
                         f"{ref.deployment.describe()}; not compared")
            continue
        for row in other.tp_rows:
            base = ref.tp_row(row["condition"], row["series"]) or \
                ref.tp_row(row["condition"])
            if row.get("p99_ms") is None or base is None:
                continue
            diff99 = row["p99_ms"] - base["p99_ms"]
            diff50 = row["p50_ms"] - base["p50_ms"]
            verb = "adds" if diff99 >= 0 else "saves"
            lines.append(f"{label} {verb} {_f(abs(diff99))} ms per token at p99 "
                         f"({'+' if diff50 >= 0 else '-'}{_f(abs(diff50))} ms at p50) "
                         f"{'more than' if diff99 >= 0 else 'compared with'} "
                         f"{ref_label} for {d.model.name} TP{d.tp} decode batch "
                         f"{d.decode_batch} [{row['condition']}]: "
                         f"{_f(base['p99_ms'])} -> {_f(row['p99_ms'])} ms")
        for row in other.kv_rows:
            base = next((b for b in ref.kv_rows if b["series"] == row["series"]
                         and b["condition"] == row["condition"]
                         and "transfer_p99_ms" in b), None)
            if base is None or "transfer_p99_ms" not in row:
                continue
            lines.append(f"{label} vs {ref_label}, KV transfer {row['series']} "
                         f"[{row['condition']}] of a {d.prompt_tokens}-token request: p99 "
                         f"{_f(base['transfer_p99_ms'])} -> {_f(row['transfer_p99_ms'])} ms")
        for row in other.mix_rows:
            base = next((b for b in ref.mix_rows if b["series"] == row["series"]
                         and b["condition"] == row["condition"] and "inflation_p99" in b), None)
            if base is None or "inflation_p99" not in row:
                continue
            lines.append(f"{label} vs {ref_label}, serving mix {row['series']}: inflation "
                         f"(together/isolated) mean x{_f(base['inflation_mean'])} -> "
                         f"x{_f(row['inflation_mean'])}, p99 x{_f(base['inflation_p99'])} -> "
                         f"x{_f(row['inflation_p99'])}")
    return lines
