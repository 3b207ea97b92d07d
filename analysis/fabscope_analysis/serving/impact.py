"""`impact FILE --model M --tp N`: what the measured fabric costs a served model.

From the measured instances whose sizes match a deployment (docs/models.md formulas):

- TP communication per generated token: a decode step runs the all-reduces the placement
  counts (serving/placement.py, as `fit` does: one after attention in every layer, one after
  each dense MLP; none with DP attention) of batch x hidden x dtype bytes one after
  another, each as slow as its slowest rank. The step's p50/p99 come from the raw samples:
  the per-iteration collective times (slowest rank per iteration) are resampled in blocks
  of consecutive iterations (circular block bootstrap) into sequences as long as the step,
  and summed; the percentiles of those sums are reported, never a sum of p99s (which is
  shown beside it only as the pessimistic bound it is).
- KV transfer for a request of the prompt length, per kvpush strategy measured: transfer
  (start -> KV usable) apart from queueing (arrival -> start), and its share of time to
  first token when the prefill time is given (fabscope does not measure compute).
- MoE dispatch/combine: measured by kind alltoall, one round per MoE layer (the placement's
  count), composed per token like the all-reduces;
  the front-end API: what the network adds to a request (kind api).
- The serving mix (kind mix): per traffic class, the together phase over the isolated one
  (inflation of mean, p50 and p99), from the raw samples, paired as conditions are: the
  isolated phase is the baseline a congested condition is compared with.

A size that was not measured is interpolated between the two nearest measured sizes of the
same test (time affine in bytes, alpha + bytes / beta, between them; the order of the
nearer size's iterations is kept) and marked so; outside the measured range it is named
as missing, never extrapolated. Figures measured on fewer ranks than tp are shown as
measured and, marked as extrapolated, scaled by a ring all-reduce's bus factor
2(n-1)/n (same bus bandwidth at tp ranks: exact for bandwidth-bound sizes, a lower bound
for latency-bound ones).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np
import yaml

from ..kinds import kind_measuring
from ..models import (ModelError, ModelSpec, allreduce_bytes, kv_heads_per_rank,
                     kv_request_bytes, model_from_scenario,
                     moe_dispatch_bytes_per_token, preset)
from ..reader import FLAG_AUXILIARY_MASK, ResultFile, TestInstance
from ..run_analysis import RunAnalysis, format_bytes
from .cif import cif_quantiles
from .compose import RESAMPLES, SEED, compose_step
from .impact_rows import api_request_rows, instances_of, mix_rows
from .placement import DECODE, Placement, PlacementError, placement_of
from .series import add_inflation, collective_times, sequence_at_size, series_by_condition

DEFAULT_DECODE_BATCH = 32
DEFAULT_PROMPT = 8192
DEFAULT_BLOCK_TOKENS = 16
COMPOSITION_METHOD = ("circular block bootstrap of the per-iteration collective times "
                      "(slowest rank per iteration), blocks of consecutive iterations "
                      "~n^(1/3) long, {resamples} sums of {count} collectives, seed {seed}; "
                      "p50/p99 of the sums")


@dataclass
class Deployment:
    model: ModelSpec
    tp: int
    decode_batch: int = DEFAULT_DECODE_BATCH
    prompt_tokens: int = DEFAULT_PROMPT
    block_tokens: int = DEFAULT_BLOCK_TOKENS
    ep: Optional[int] = None
    prefill_ms: Optional[float] = None
    source: str = "command line"
    prefill_chunk: Optional[int] = None   # tokens per prefill chunk (fit's TTFT composition)
    dp_attention: bool = False            # each rank its own requests' attention: no TP all-reduce

    def describe(self) -> str:
        text = f"{self.model.name} TP{self.tp}"
        if self.ep:
            text += f" EP{self.ep}"
        if self.dp_attention:
            text += " DP attention"
        return text + f" (decode batch {self.decode_batch}, prompt {self.prompt_tokens} tokens)"


def deployment_from_run(result: ResultFile, model: Optional[str] = None,
                        tp: Optional[int] = None, **kwargs) -> Optional[Deployment]:
    """The deployment the scenario names (`model:`, `parallel: {tp}`), or the command
    line's; None when neither names a model."""
    text = str(result.attrs.get("scenario_text", "") or "")
    doc = {}
    if text:
        try:
            doc = yaml.safe_load(text) or {}
        except yaml.YAMLError:
            doc = {}
    if not isinstance(doc, dict):
        doc = {}
    source = "command line"
    if model is not None:
        spec = preset(model)
    elif doc.get("model") is not None:
        spec = model_from_scenario(doc["model"])
        source = "scenario"
    else:
        return None
    if tp is None:
        parallel = doc.get("parallel") or {}
        parallel = parallel if isinstance(parallel, dict) else {}
        tp = int(parallel.get("tp", parallel.get("tensor_parallel", 1)))
        if "tp" not in parallel and "tensor_parallel" not in parallel:
            # said where the deployment is named, so TP1 is never read as measured
            source += " (TP1 assumed: the scenario names no parallel.tp; give --tp)"
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    deployment = Deployment(spec, int(tp), source=source, **kwargs)
    check_deployment(deployment)
    return deployment


def check_deployment(d: Deployment) -> None:
    if d.tp < 1 or d.decode_batch < 1 or d.prompt_tokens < 1 or d.block_tokens < 1 \
            or (d.prefill_chunk is not None and d.prefill_chunk < 1):
        raise ModelError("tp, decode batch, prefill chunk, prompt and block tokens must be at "
                         "least 1")
    # a share of time to first token needs a real prefill time: nan, inf or <= 0 would
    # give shares that are not shares (and a JSON that cannot be written)
    if d.prefill_ms is not None and not (np.isfinite(d.prefill_ms) and d.prefill_ms > 0):
        raise ModelError(f"--prefill-ms: expected a prefill time above 0 ms, got {d.prefill_ms:g}")
    kv_heads_per_rank(d.model, d.tp)
    try:
        placement_of(d, dp_attention=d.dp_attention)
    except PlacementError as exc:
        raise ModelError(str(exc)) from None


def quantiles_ms(values: np.ndarray) -> Dict[str, float]:
    if len(values) == 0:
        return {"p50_ms": float("nan"), "p99_ms": float("nan")}
    return {"p50_ms": float(np.percentile(values, 50)) / 1e6,
            "p99_ms": float(np.percentile(values, 99)) / 1e6}


def ring_bus_factor(n: int) -> float:
    """A ring all-reduce's bus factor 2(n-1)/n, nccl-tests' and the all-reduce kind's rule
    (src/kinds/collectives/BusFactor.hpp): 0 for one rank, whose all-reduce crosses no link."""
    if n < 1:
        raise ValueError(f"bus factor of {n} ranks: a collective needs at least one")
    return 2.0 * (n - 1) / n


@dataclass
class Impact:
    deployment: Deployment
    file: str
    tp_rows: List[dict] = field(default_factory=list)
    kv_rows: List[dict] = field(default_factory=list)
    moe_rows: List[dict] = field(default_factory=list)
    frontend_rows: List[dict] = field(default_factory=list)
    mix_rows: List[dict] = field(default_factory=list)
    missing: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    method: str = ""

    def placement(self) -> Placement:
        """Where the deployment's operations sit; its per-step counts are fit's too."""
        return placement_of(self.deployment, dp_attention=self.deployment.dp_attention)

    def to_json(self) -> dict:
        d = self.deployment
        return {"file": self.file,
                "deployment": {"model": d.model.name, "tp": d.tp, "ep": d.ep,
                               "decode_batch": d.decode_batch, "prompt_tokens": d.prompt_tokens,
                               "block_tokens": d.block_tokens, "prefill_ms": d.prefill_ms,
                               "from": d.source},
                "tp_allreduce_bytes": allreduce_bytes(d.model, d.decode_batch),
                "allreduces_per_step": self.placement().total_count("tp", DECODE),
                "kv_request_bytes": kv_request_bytes(d.model, d.tp, d.block_tokens,
                                                     d.prompt_tokens),
                "tail_method": self.method, "tp_communication": self.tp_rows,
                "kv_transfer": self.kv_rows, "moe_communication": self.moe_rows,
                "frontend": self.frontend_rows, "serving_mix": self.mix_rows, "missing": self.missing, "notes": self.notes}

    def tp_row(self, condition: str, series: Optional[str] = None) -> Optional[dict]:
        for r in self.tp_rows:
            if r["condition"] == condition and (series is None or r["series"] == series) \
                    and r.get("p99_ms") is not None:
                return r
        return None


def compute_impact(result: ResultFile, deployment: Deployment,
                   resamples: int = RESAMPLES, seed: int = SEED) -> Impact:
    d = deployment
    out = Impact(d, result.path)
    analysis = RunAnalysis(result)
    place = out.placement()
    count = place.total_count("tp", DECODE)
    target = allreduce_bytes(d.model, d.decode_batch)
    out.method = COMPOSITION_METHOD.format(resamples=resamples, count=count, seed=seed)
    _tp_communication(analysis, d, count, target, out, resamples, seed)
    _kv_transfer(analysis, d, out)
    if d.model.moe is not None:
        _moe_communication(analysis, d, place, out, resamples, seed)
    elif d.ep:
        out.notes.append(f"--ep {d.ep} ignored: {d.model.name} has no MoE layers")
    out.frontend_rows = api_request_rows(result, out.missing)
    out.mix_rows = mix_rows(result)
    return out


def _tp_communication(analysis: RunAnalysis, d: Deployment, count: int, target: int,
                      out: Impact, resamples: int, seed: int) -> None:
    if count == 0:
        out.notes.append(f"TP{d.tp}: no tensor-parallel all-reduces ("
                         + ("DP attention" if d.dp_attention else "tp = 1") + ")")
        return
    insts = instances_of(analysis.result, kind_measuring("tp"))
    if not insts:
        out.missing.append(f"TP all-reduce of {format_bytes(target)} (decode batch "
                           f"{d.decode_batch}): the file has no allreduce test")
        return
    for name, condition, members in series_by_condition(insts):
        by_size: Dict[int, np.ndarray] = {}
        ranks: Dict[int, int] = {}
        for inst in members:
            s = analysis.samples(inst)
            by_size[int(inst.get("bytes"))] = collective_times(s)
            ranks[int(inst.get("bytes"))] = int(s["rank"].nunique()) if len(s) else 0
        times, how = sequence_at_size(by_size, target)
        row = {"series": name, "condition": condition, "bytes": target, "how": how,
               "collectives_per_step": count}
        if times is None:
            out.missing.append(f"{name} [{condition}]: {how}")
            row.update({"p50_ms": None, "p99_ms": None})
            out.tp_rows.append(row)
            continue
        nearest = min(ranks, key=lambda b: abs(b - target))
        n = ranks[nearest]
        sums = compose_step([(times, count)], resamples, seed)
        row.update(quantiles_ms(sums))
        row.update({"ranks_measured": n, "iterations": int(len(times)),
                    "collective_p50_us": float(np.percentile(times, 50)) / 1e3,
                    "collective_p99_us": float(np.percentile(times, 99)) / 1e3,
                    "sum_of_p99s_ms": count * float(np.percentile(times, 99)) / 1e6,
                    "per_token_of_throughput_p50_us":
                        row["p50_ms"] * 1e3 / d.decode_batch})
        if n != d.tp and n > 1:
            factor = ring_bus_factor(d.tp) / ring_bus_factor(n)
            row.update({"extrapolated_to_tp": d.tp, "extrapolation_factor": factor,
                        "extrapolated_p50_ms": row["p50_ms"] * factor,
                        "extrapolated_p99_ms": row["p99_ms"] * factor})
        out.tp_rows.append(row)
    _tp_notes(d, out)


def _tp_notes(d: Deployment, out: Impact) -> None:
    """Inflation over quiet, and what the TP rows were measured on and lack."""
    add_inflation(out.tp_rows)
    for row in out.tp_rows:
        quiet = out.tp_row("quiet", row["series"])
        if "inflation_p99" in row and quiet:
            if row.get("ranks_measured") != quiet.get("ranks_measured"):
                row["inflation_note"] = (f"quiet measured on {quiet.get('ranks_measured')} "
                                         f"ranks, {row['condition']} on "
                                         f"{row.get('ranks_measured')} (the rest made the "
                                         "traffic)")
    small = sorted({r["ranks_measured"] for r in out.tp_rows
                    if r.get("ranks_measured") and r["ranks_measured"] != d.tp})
    if small:
        out.notes.append(
            f"all-reduces measured on {', '.join(map(str, small))} ranks, not TP{d.tp}: the "
            "'measured' figures are at that size of group; 'extrapolated' ones scale them by "
            f"a ring all-reduce's bus factor 2(n-1)/n to {d.tp} ranks (same bus bandwidth: "
            "right for bandwidth-bound sizes, a lower bound for latency-bound ones)")
    if not any(r["condition"] != "quiet" for r in out.tp_rows):
        out.missing.append("TP all-reduce under congestion: no condition other than quiet "
                           "was run")


def _moe_communication(analysis: RunAnalysis, d: Deployment, place: Placement, out: Impact,
                       resamples: int, seed: int) -> None:
    """MoE dispatch + combine per generated token: one all-to-all round (dispatch then
    combine, as the alltoall kind times it) per MoE layer, composed over the layers like
    the all-reduces, at the decode batch's tokens per rank."""
    per_token = moe_dispatch_bytes_per_token(d.model, "fp8")
    target = d.decode_batch * per_token
    layers = place.total_count("moe", DECODE)
    insts = instances_of(analysis.result, kind_measuring("moe"))
    if not insts:
        out.missing.append(
            f"MoE dispatch and combine: not measured in this file (add a kind: alltoall test "
            f"with sizes: {{derive: moe-dispatch, tokens: [{d.decode_batch}]}}); a step sends up "
            f"to {d.model.moe.experts_per_token} copies of {per_token} B per token (DeepEP fp8) "
            f"to experts over EP{d.ep or '?'} in each of its MoE layers, dispatch and combine")
        return
    for name, condition, members in series_by_condition(insts):
        by_size: Dict[int, np.ndarray] = {}
        ranks = 0
        for inst in members:
            if int(inst.get("dispatch_token_bytes", per_token)) != per_token:
                continue  # another token size (literal sizes): not this model's
            s = analysis.samples(inst)
            s = s[(s["flags"].astype("int64") & FLAG_AUXILIARY_MASK) == 0]
            by_size[int(inst.get("bytes"))] = collective_times(s)
            ranks = max(ranks, int(s["rank"].nunique()) if len(s) else 0)
        times, how = sequence_at_size(by_size, target)
        row = {"series": name, "condition": condition, "tokens_per_rank": d.decode_batch,
               "bytes": target, "how": how, "rounds_per_step": layers}
        if times is None:
            out.missing.append(f"MoE {name} [{condition}]: {how} (the decode batch of "
                               f"{d.decode_batch} tokens per rank x {per_token} B)")
            out.moe_rows.append(row)
            continue
        sums = compose_step([(times, layers)], resamples, seed)
        row.update(quantiles_ms(sums))
        row.update({"ranks_measured": ranks, "iterations": int(len(times)),
                    "round_p50_us": float(np.percentile(times, 50)) / 1e3,
                    "round_p99_us": float(np.percentile(times, 99)) / 1e3})
        out.moe_rows.append(row)
    add_inflation(out.moe_rows)
    measured = sorted({r["ranks_measured"] for r in out.moe_rows if r.get("ranks_measured")})
    if measured:
        known = not place.notes()
        out.notes.append(
            f"MoE: {layers} of {d.model.name}'s {d.model.layers} layers counted as MoE layers"
            + (" (the rest dense)" if known else " (the preset does not say which are "
               "dense: an upper bound)")
            + "; the all-to-alls were "
            f"measured over {', '.join(map(str, measured))} ranks"
            + (f", not scaled to EP{d.ep}" if d.ep and d.ep not in measured else ""))


def _kv_transfer(analysis: RunAnalysis, d: Deployment, out: Impact) -> None:
    target = kv_request_bytes(d.model, d.tp, d.block_tokens, d.prompt_tokens)
    insts = instances_of(analysis.result, kind_measuring("kv"))
    if not insts:
        out.missing.append(f"KV transfer of a {d.prompt_tokens}-token request "
                           f"({format_bytes(target)} per rank): the file has no kvpush test")
        return
    series: Dict[Tuple, List[TestInstance]] = {}
    for inst in insts:
        key = (str(inst.get("strategy")), str(inst.get("direction", "push")),
               str(inst.get("memory_path", inst.get("memory"))), str(inst.get("transport")),
               str(inst.get("loop", "closed")), str(inst.get("condition", "quiet")))
        series.setdefault(key, []).append(inst)
    conditions = {k[-1] for k in series}
    totals: Dict[Tuple[str, str], np.ndarray] = {}   # (series, condition): queue + exposed transfer
    for key, members in series.items():
        strategy, direction, path, transport, loop, condition = key
        transfer, queue = {}, {}
        overlap_ns = 0.0
        for inst in members:
            req = inst.requests()
            if req.empty:
                continue
            b = int(inst.get("bytes"))
            transfer[b] = (req["t_done_ns"] - req["t_start_ns"]).to_numpy(dtype=np.float64)
            queue[b] = (req["t_start_ns"] - req["t_arrival_ns"]).to_numpy(dtype=np.float64)
            if strategy == "layer-stream":
                overlap_ns = (d.model.layers - 1) * float(inst.get("compute_per_layer_s", 0)) * 1e9
        name = f"{strategy} {direction} ({transport}, {path}, {loop} loop)"
        t, how = sequence_at_size(transfer, target)
        row = {"strategy": strategy, "direction": direction, "series": name,
               "condition": condition, "bytes": target, "how": how}
        if t is None:
            out.missing.append(f"KV {name} [{condition}]: {how}")
            out.kv_rows.append(row)
            continue
        q = sequence_at_size(queue, target)[0]
        totals[(name, condition)] = np.maximum(t - overlap_ns, 0) + q
        out.kv_rows.append(_kv_figures(row, t, q, target, overlap_ns, d.prefill_ms))
    _kv_cif(out.kv_rows, totals)
    _kv_missing(d, conditions, out)


def _kv_cif(rows: List[dict], totals: Dict[Tuple[str, str], np.ndarray]) -> None:
    """GPCNeT's congestion impact factor of each congested KV row: its per-request time
    (queue + exposed transfer, as `fit` reads it) over the same series' quiet one at p50,
    p99 and p99.9; a percentile with too few requests on either side is None."""
    for row in rows:
        quiet = totals.get((row["series"], "quiet"))
        loaded = totals.get((row["series"], row["condition"]))
        if row["condition"] != "quiet" and quiet is not None and loaded is not None:
            row["cif"] = cif_quantiles(loaded, quiet)


def _kv_figures(row: dict, t: np.ndarray, q: np.ndarray, target: int, overlap_ns: float,
                prefill_ms: Optional[float]) -> dict:
    """A KV row's transfer and queue percentiles, what prefill hides of it, its TTFT share."""
    row.update({"requests": int(len(t)),
                "transfer_p50_ms": float(np.percentile(t, 50)) / 1e6,
                "transfer_p99_ms": float(np.percentile(t, 99)) / 1e6,
                "queue_p50_ms": float(np.percentile(q, 50)) / 1e6,
                "queue_p99_ms": float(np.percentile(q, 99)) / 1e6,
                "gbps_p50": target / float(np.percentile(t, 50))})
    total = t + q
    row["total_p99_ms"] = float(np.percentile(total, 99)) / 1e6
    if overlap_ns:
        exposed = np.maximum(t - overlap_ns, 0)
        row["overlapped_with_prefill_ms"] = overlap_ns / 1e6
        row["exposed_p50_ms"] = float(np.percentile(exposed, 50)) / 1e6
        total = exposed + q
    if prefill_ms:
        share = total / (total + prefill_ms * 1e6)
        row["ttft_share_p50"] = float(np.percentile(share, 50))
        row["ttft_share_p99"] = float(np.percentile(share, 99))
    return row


def _kv_missing(d: Deployment, conditions, out: Impact) -> None:
    if not d.prefill_ms:
        out.missing.append(f"KV share of time to first token: needs the prefill time of a "
                           f"{d.prompt_tokens}-token prompt on the deployment's GPUs "
                           "(--prefill-ms); compute is not a fabric figure and fabscope does "
                           "not measure it")
    if conditions == {"quiet"}:
        out.missing.append("KV transfer under congestion: the kvpush tests ran quiet only "
                           "(give them conditions: [quiet, incast, bidirectional], "
                           "docs/scenarios.md)")
