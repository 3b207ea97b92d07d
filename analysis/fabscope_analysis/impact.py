"""`impact FILE --model M --tp N`: what the measured fabric costs a served model.

From the measured instances whose sizes match a deployment (docs/models.md formulas):

- TP communication per generated token: a decode step runs 2 x layers all-reduces of
  batch x hidden x dtype bytes one after another, each as slow as its slowest rank. The
  step's p50/p99 come from the raw samples: the per-iteration collective times (slowest
  rank per iteration) are resampled in blocks of consecutive iterations (circular block
  bootstrap) into sequences as long as the step, and summed; the percentiles of those sums
  are reported, never a sum of p99s (which is shown beside it only as the pessimistic
  bound it is).
- KV transfer for a request of the prompt length, per kvpush strategy measured: transfer
  (start -> KV usable) apart from queueing (arrival -> start), and its share of time to
  first token when the prefill time is given (fabscope does not measure compute).
- MoE dispatch/combine: measured by kind alltoall, composed per token like the all-reduces;
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

import json
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
import yaml

from . import html as H
from .models import (ModelError, ModelSpec, allreduce_bytes, allreduces_per_step,
                     kv_heads_per_rank, kv_request_bytes, model_from_scenario,
                     moe_dispatch_bytes_per_token, preset)
from .reader import (FLAG_AUXILIARY_MASK, FLAG_CHUNK_GAP, FLAG_MIX_CLASS_MASK,
                     FLAG_MIX_CLASS_SHIFT, FLAG_MIX_TOGETHER, MIX_CLASSES, ResultFile,
                     TestInstance)
from .run_analysis import RunAnalysis, format_bytes, format_number

DEFAULT_DECODE_BATCH = 32
DEFAULT_PROMPT = 8192
DEFAULT_BLOCK_TOKENS = 16
RESAMPLES = 4000
SEED = 12345
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

    def describe(self) -> str:
        text = f"{self.model.name} TP{self.tp}"
        if self.ep:
            text += f" EP{self.ep}"
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
        tp = int(parallel.get("tp", parallel.get("tensor_parallel", 1))) \
            if isinstance(parallel, dict) else 1
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    deployment = Deployment(spec, int(tp), source=source, **kwargs)
    check_deployment(deployment)
    return deployment


def check_deployment(d: Deployment) -> None:
    if d.tp < 1 or d.decode_batch < 1 or d.prompt_tokens < 1 or d.block_tokens < 1:
        raise ModelError("tp, decode batch, prompt and block tokens must be at least 1")
    kv_heads_per_rank(d.model, d.tp)


# --- raw samples -> per-iteration collective times ---------------------------------------

def collective_times(samples: pd.DataFrame) -> np.ndarray:
    """Per iteration, the slowest measuring rank's time (ns), in iteration order: a
    collective is as slow as its slowest rank."""
    if samples.empty:
        return np.array([], dtype=np.float64)
    d = (samples["t_done_ns"].astype("int64") - samples["t_post_ns"].astype("int64"))
    per_iter = d.groupby(samples["iter"].to_numpy()).max().sort_index()
    return per_iter.to_numpy(dtype=np.float64)


def interpolate_sequence(lower: Tuple[int, np.ndarray], upper: Tuple[int, np.ndarray],
                         target: int) -> np.ndarray:
    """Times at `target` bytes between two measured sizes: each quantile affine in bytes
    (time = alpha + bytes / beta between the two), in the iteration order of the nearer
    size (its slow iterations stay where they were)."""
    (b1, s1), (b2, s2) = lower, upper
    w = (target - b1) / (b2 - b1)
    nearer = s1 if w <= 0.5 else s2
    if len(nearer) == 1:
        p = np.array([0.5])
    else:
        order = np.argsort(np.argsort(nearer, kind="stable"), kind="stable")
        p = order / (len(nearer) - 1)
    return (1 - w) * np.quantile(s1, p) + w * np.quantile(s2, p)


def block_length(n: int) -> int:
    return max(1, int(round(n ** (1.0 / 3.0))))


def compose_step(parts: Sequence[Tuple[np.ndarray, int]], resamples: int = RESAMPLES,
                 seed: int = SEED, block: Optional[int] = None) -> np.ndarray:
    """Sums of one step's collectives, `resamples` of them.

    parts: (per-iteration times of one collective in measured order, how many of that
    collective a step runs one after another). Each part is drawn as circular blocks of
    consecutive measured iterations (so bursts and drift of the measurement stay
    together) until the step's count is reached; parts are drawn independently.
    """
    rng = np.random.default_rng(seed)
    total = np.zeros(resamples)
    for times, count in parts:
        times = np.asarray(times, dtype=np.float64)
        m = len(times)
        if count <= 0:
            continue
        if m == 0:
            raise ValueError("compose_step: a collective without samples")
        length = min(block or block_length(m), m)
        blocks = math.ceil(count / length)
        starts = rng.integers(0, m, size=(resamples, blocks))
        idx = (starts[:, :, None] + np.arange(length)[None, None, :]) % m
        drawn = times[idx].reshape(resamples, blocks * length)[:, :count]
        total += drawn.sum(axis=1)
    return total


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


# --- matching measured instances ---------------------------------------------------------

def _instances(result: ResultFile, kind: str) -> List[TestInstance]:
    return [i for i in result.instances()
            if str(i.get("kind")) == kind and str(i.get("pass", "")) != "serial-retest"
            and str(i.get("status", "")) in ("passed", "failed")]


def _series_name(inst: TestInstance) -> str:
    return f"{inst.get('name')} ({inst.get('transport')}, {inst.get('memory')})"


def _conditions(insts: Sequence[TestInstance]) -> List[str]:
    names = sorted({str(i.get("condition", "quiet")) for i in insts})
    return (["quiet"] if "quiet" in names else []) + [c for c in names if c != "quiet"]


def _at_size(measured: Dict[int, np.ndarray], target: int) -> Tuple[Optional[np.ndarray], str]:
    """(times at target bytes, how) from {bytes: times}; None and why when it cannot."""
    sizes = sorted(b for b, t in measured.items() if len(t))
    if target in measured and len(measured[target]):
        return measured[target], f"measured at {format_bytes(target)}"
    lower = [b for b in sizes if b < target]
    upper = [b for b in sizes if b > target]
    if lower and upper:
        b1, b2 = lower[-1], upper[0]
        return (interpolate_sequence((b1, measured[b1]), (b2, measured[b2]), target),
                f"interpolated between measured {format_bytes(b1)} and {format_bytes(b2)}")
    have = ", ".join(format_bytes(b) for b in sizes) or "none"
    return None, f"{format_bytes(target)} not measured (measured: {have}); not extrapolated"


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

    def to_json(self) -> dict:
        d = self.deployment
        return {"file": self.file,
                "deployment": {"model": d.model.name, "tp": d.tp, "ep": d.ep,
                               "decode_batch": d.decode_batch, "prompt_tokens": d.prompt_tokens,
                               "block_tokens": d.block_tokens, "prefill_ms": d.prefill_ms,
                               "from": d.source},
                "tp_allreduce_bytes": allreduce_bytes(d.model, d.decode_batch),
                "allreduces_per_step": allreduces_per_step(d.model, d.tp),
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
    count = allreduces_per_step(d.model, d.tp)
    target = allreduce_bytes(d.model, d.decode_batch)
    out.method = COMPOSITION_METHOD.format(resamples=resamples, count=count, seed=seed)
    _tp_communication(analysis, d, count, target, out, resamples, seed)
    _kv_transfer(analysis, d, out)
    if d.model.moe is not None:
        _moe_communication(analysis, d, out, resamples, seed)
    elif d.ep:
        out.notes.append(f"--ep {d.ep} ignored: {d.model.name} has no MoE layers")
    _frontend(analysis, out)
    out.mix_rows = mix_rows(result)
    return out


def _tp_communication(analysis: RunAnalysis, d: Deployment, count: int, target: int,
                      out: Impact, resamples: int, seed: int) -> None:
    if count == 0:
        out.notes.append(f"TP{d.tp}: no tensor-parallel all-reduces (tp = 1)")
        return
    insts = _instances(analysis.result, "allreduce")
    if not insts:
        out.missing.append(f"TP all-reduce of {format_bytes(target)} (decode batch "
                           f"{d.decode_batch}): the file has no allreduce test")
        return
    for name, condition, members in _series_by_condition(insts):
        by_size: Dict[int, np.ndarray] = {}
        ranks: Dict[int, int] = {}
        for inst in members:
            s = analysis.samples(inst)
            by_size[int(inst.get("bytes"))] = collective_times(s)
            ranks[int(inst.get("bytes"))] = int(s["rank"].nunique()) if len(s) else 0
        times, how = _at_size(by_size, target)
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
    _add_inflation(out.tp_rows)
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


def _moe_communication(analysis: RunAnalysis, d: Deployment, out: Impact, resamples: int,
                       seed: int) -> None:
    """MoE dispatch + combine per generated token: one all-to-all round (dispatch then
    combine, as the alltoall kind times it) per MoE layer, composed over the layers like
    the all-reduces, at the decode batch's tokens per rank."""
    per_token = moe_dispatch_bytes_per_token(d.model, "fp8")
    target = d.decode_batch * per_token
    layers = d.model.layers
    insts = _instances(analysis.result, "alltoall")
    if not insts:
        out.missing.append(
            f"MoE dispatch and combine: not measured in this file (add a kind: alltoall test "
            f"with sizes: {{derive: moe-dispatch, tokens: [{d.decode_batch}]}}); a step sends up "
            f"to {d.model.moe.experts_per_token} copies of {per_token} B per token (DeepEP fp8) "
            f"to experts over EP{d.ep or '?'} in each of its MoE layers, dispatch and combine")
        return
    for name, condition, members in _series_by_condition(insts):
        by_size: Dict[int, np.ndarray] = {}
        ranks = 0
        for inst in members:
            if int(inst.get("dispatch_token_bytes", per_token)) != per_token:
                continue  # another token size (literal sizes): not this model's
            s = analysis.samples(inst)
            s = s[(s["flags"].astype("int64") & FLAG_AUXILIARY_MASK) == 0]
            by_size[int(inst.get("bytes"))] = collective_times(s)
            ranks = max(ranks, int(s["rank"].nunique()) if len(s) else 0)
        times, how = _at_size(by_size, target)
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
    _add_inflation(out.moe_rows)
    measured = sorted({r["ranks_measured"] for r in out.moe_rows if r.get("ranks_measured")})
    if measured:
        out.notes.append(
            f"MoE: every one of {d.model.name}'s {layers} layers counted as an MoE layer (the "
            "preset does not say which are dense: an upper bound); the all-to-alls were "
            f"measured over {', '.join(map(str, measured))} ranks"
            + (f", not scaled to EP{d.ep}" if d.ep and d.ep not in measured else ""))


def _frontend(analysis: RunAnalysis, out: Impact) -> None:
    """What the network adds to a request at the front end (api kind): the connect, the
    time to first byte beyond the server's service time, the chunk gaps beyond its
    interval: the fabric's (or front end's) share, the model server's own time taken off."""
    insts = _instances(analysis.result, "api")
    if not insts:
        out.missing.append("front-end API share of a request: not measured in this file (add a "
                           "kind: api test)")
        return
    for inst in insts:
        rows = inst.api_requests()
        ok = rows[rows["status"] == "ok"] if not rows.empty else rows
        if ok.empty:
            out.missing.append(f"front end {inst.get('name')} [{inst.get('condition', 'quiet')}]: "
                               "no request answered")
            continue
        service_ns = float(inst.get("service_time_s", 0)) * 1e9
        interval_ns = float(inst.get("chunk_interval_s", 0)) * 1e9
        s = inst.samples()  # raw: the gaps are flagged rows, left out of the headline
        gaps = (s.loc[(s["flags"].astype("int64") & FLAG_CHUNK_GAP) != 0, "t_done_ns"]
                - s.loc[(s["flags"].astype("int64") & FLAG_CHUNK_GAP) != 0, "t_post_ns"]
                ).to_numpy(dtype=np.float64)
        connect = ok["connect_ns"].to_numpy(dtype=np.float64)
        added = np.maximum(ok["ttfb_ns"].to_numpy(dtype=np.float64) - service_ns, 0)
        row = {"series": str(inst.get("name")), "condition": str(inst.get("condition", "quiet")),
               "network": str(inst.get("network", "")), "interface": str(inst.get("interface", "")),
               "requests": int(len(ok)),
               "connect_p50_ms": float(np.percentile(connect, 50)) / 1e6,
               "connect_p99_ms": float(np.percentile(connect, 99)) / 1e6,
               "ttft_added_p50_ms": float(np.percentile(added, 50)) / 1e6,
               "ttft_added_p99_ms": float(np.percentile(added, 99)) / 1e6}
        if len(gaps):
            row["per_token_added_p99_ms"] = max(float(np.percentile(gaps, 99)) - interval_ns, 0) / 1e6
        out.frontend_rows.append(row)


def _series_by_condition(insts: Sequence[TestInstance]):
    """(series name, condition, its instances) for every series and condition measured."""
    series: Dict[str, List[TestInstance]] = {}
    for inst in insts:
        series.setdefault(_series_name(inst), []).append(inst)
    for name, members in series.items():
        for condition in _conditions(members):
            yield name, condition, [i for i in members
                                    if str(i.get("condition", "quiet")) == condition]


def _add_inflation(rows: List[dict], baseline: str = "quiet") -> None:
    """Each congested row's p50/p99 (and mean, where rows have one) over its series' baseline
    row ("quiet" for conditions, "isolated" for the serving mix), where both exist."""
    for row in rows:
        base = next((r for r in rows if r["condition"] == baseline and r["series"] == row["series"]
                     and r.get("p99_ms") is not None), None)
        if row["condition"] != baseline and base and row.get("p99_ms") is not None:
            row["inflation_p50"] = row["p50_ms"] / base["p50_ms"]
            row["inflation_p99"] = row["p99_ms"] / base["p99_ms"]
            if "mean_ms" in row and "mean_ms" in base:
                row["inflation_mean"] = row["mean_ms"] / base["mean_ms"]


def mix_rows(result: ResultFile) -> List[dict]:
    """Every mix test's rows (mix_instance_rows), in file order."""
    rows: List[dict] = []
    for inst in _instances(result, "mix"):
        rows.extend(mix_instance_rows(inst))
    return rows


def mix_instance_rows(inst: TestInstance) -> List[dict]:
    """Per traffic class and phase of one mix instance: samples, mean/p50/p99 (ms) from the
    raw samples (the headline rows: an api request's first-byte and gap rows are left out),
    with the together phase's inflation over the isolated one, paired as conditions are
    (series = test/class; the isolated phase is the baseline); the file's stored figures
    beside them (stored_inflation_*), so a reader sees both agree."""
    s = inst.samples()
    flags = s["flags"].astype("int64")
    head = s[(flags & FLAG_AUXILIARY_MASK) == 0]
    hflags = head["flags"].to_numpy(dtype=np.int64)
    took = (head["t_done_ns"] - head["t_post_ns"]).to_numpy(dtype=np.float64) / 1e6
    cls = (hflags & FLAG_MIX_CLASS_MASK) >> FLAG_MIX_CLASS_SHIFT
    together = (hflags & FLAG_MIX_TOGETHER) != 0
    stored = inst.mix_classes()
    rows = []
    for k, name in enumerate(MIX_CLASSES):
        for phase, is_together in (("isolated", False), ("together", True)):
            values = took[(cls == k + 1) & (together == is_together)]
            if not len(values):
                continue
            row = {"series": f"{inst.get('name')}/{name}", "test": str(inst.get("name")),
                   "class": name, "condition": phase, "samples": int(len(values)),
                   "mean_ms": float(np.mean(values)),
                   "p50_ms": float(np.percentile(values, 50)),
                   "p99_ms": float(np.percentile(values, 99))}
            match = stored[(stored["class"] == name) & (stored["phase"] == phase)]
            if is_together and not match.empty:
                row["stored_inflation_mean"] = float(match["inflation_mean"].iloc[0])
                row["stored_inflation_p99"] = float(match["inflation_p99"].iloc[0])
                row["verified"] = int(match["verified"].iloc[0])
                row["failed"] = int(match["failed"].iloc[0])
            rows.append(row)
    _add_inflation(rows, baseline="isolated")
    return rows


def _kv_transfer(analysis: RunAnalysis, d: Deployment, out: Impact) -> None:
    target = kv_request_bytes(d.model, d.tp, d.block_tokens, d.prompt_tokens)
    insts = _instances(analysis.result, "kvpush")
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
        t, how = _at_size(transfer, target)
        row = {"strategy": strategy, "direction": direction, "series": name,
               "condition": condition, "bytes": target, "how": how}
        if t is None:
            out.missing.append(f"KV {name} [{condition}]: {how}")
            out.kv_rows.append(row)
            continue
        q, _ = _at_size(queue, target)
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
        if d.prefill_ms:
            share = total / (total + d.prefill_ms * 1e6)
            row["ttft_share_p50"] = float(np.percentile(share, 50))
            row["ttft_share_p99"] = float(np.percentile(share, 99))
        out.kv_rows.append(row)
    if not d.prefill_ms:
        out.missing.append(f"KV share of time to first token: needs the prefill time of a "
                           f"{d.prompt_tokens}-token prompt on the deployment's GPUs "
                           "(--prefill-ms); compute is not a fabric figure and fabscope does "
                           "not measure it")
    if conditions == {"quiet"}:
        out.missing.append("KV transfer under congestion: kvpush ran quiet only (conditions "
                           "other than quiet are not implemented for kvpush yet)")


# --- presentation --------------------------------------------------------------------------

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
        lines.append(text)
    return lines


def print_impact(impact: Impact, stream) -> None:
    d = impact.deployment
    m = d.model
    print(f"serving impact: {d.describe()} [model from the {d.source}]", file=stream)
    print(f"  {impact.file}", file=stream)
    print(f"  TP all-reduce: {format_bytes(allreduce_bytes(m, d.decode_batch))} "
          f"({d.decode_batch} tokens x {m.hidden_size} x {m.dtype}), "
          f"{allreduces_per_step(m, d.tp)} per decode step; KV per request and rank: "
          f"{format_bytes(kv_request_bytes(m, d.tp, d.block_tokens, d.prompt_tokens))}",
          file=stream)
    print(f"  tail of a step: {impact.method}", file=stream)
    print("", file=stream)
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
        print("TP communication per generated token (added to every decode step, i.e. to "
              "each sequence's inter-token latency)", file=stream)
        print(pd.DataFrame(rows).to_string(index=False), file=stream)
        print("", file=stream)
    if impact.kv_rows:
        rows = [{"strategy": r["series"], "condition": r["condition"], "size": r["how"],
                 "requests": r.get("requests", "-"),
                 "transfer p50/p99 ms": (f"{_f(r.get('transfer_p50_ms'))} / "
                                         f"{_f(r.get('transfer_p99_ms'))}"),
                 "queue p50/p99 ms": (f"{_f(r.get('queue_p50_ms'))} / "
                                      f"{_f(r.get('queue_p99_ms'))}"),
                 "TTFT share p50/p99": (f"{100 * r['ttft_share_p50']:.1f}% / "
                                        f"{100 * r['ttft_share_p99']:.1f}%"
                                        if "ttft_share_p50" in r else "-")}
                for r in impact.kv_rows]
        print(f"KV transfer of a {d.prompt_tokens}-token request (prefill -> decode, one TP "
              "shard per rank)", file=stream)
        print(pd.DataFrame(rows).to_string(index=False), file=stream)
        print("", file=stream)
    if impact.moe_rows:
        rows = [{"test": r["series"], "condition": r["condition"], "size": r["how"],
                 "ranks": r.get("ranks_measured", "-"),
                 "round p50/p99 us": (f"{_f(r.get('round_p50_us'))} / {_f(r.get('round_p99_us'))}"),
                 "ms/token p50": _f(r.get("p50_ms")), "ms/token p99": _f(r.get("p99_ms")),
                 "inflation p50/p99": (f"{_f(r['inflation_p50'])} / {_f(r['inflation_p99'])}"
                                       if "inflation_p99" in r else "-")}
                for r in impact.moe_rows]
        print(f"MoE dispatch + combine per generated token ({d.model.layers} rounds of "
              f"{d.decode_batch} tokens per rank, composed like the all-reduces)", file=stream)
        print(pd.DataFrame(rows).to_string(index=False), file=stream)
        print("", file=stream)
    if impact.frontend_rows:
        rows = [{"test": r["series"], "condition": r["condition"],
                 "network": f"{r['network']} ({r['interface']})", "requests": r["requests"],
                 "connect p50/p99 ms": f"{_f(r['connect_p50_ms'])} / {_f(r['connect_p99_ms'])}",
                 "added to first token p50/p99 ms": (f"{_f(r['ttft_added_p50_ms'])} / "
                                                     f"{_f(r['ttft_added_p99_ms'])}"),
                 "added per chunk p99 ms": _f(r.get("per_token_added_p99_ms"))}
                for r in impact.frontend_rows]
        print("Front end: what the network adds to a request beyond the server's own service "
              "time and chunk interval", file=stream)
        print(pd.DataFrame(rows).to_string(index=False), file=stream)
        print("", file=stream)
    if impact.mix_rows:
        print_mix_rows(impact.mix_rows, stream)
        print("", file=stream)
    for n in impact.notes:
        print(f"note: {n}", file=stream)
    for m_ in impact.missing:
        print(f"missing: {m_}", file=stream)


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


def report_block(result: ResultFile, model: Optional[str] = None,
                 tp: Optional[int] = None) -> str:
    """The report's "Serving impact" section ("" when no model is named)."""
    try:
        d = deployment_from_run(result, model, tp)
    except ModelError as exc:
        return H.section("impact", "Serving impact", [H.warning(f"no serving impact: {exc}")])
    if d is None:
        return ""
    impact = compute_impact(result, d)
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
