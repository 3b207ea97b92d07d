"""The serving classes' measured distributions at one deployment's sizes.

Per class and neighbour condition, one sequence of per-operation times (ns, in measured
order), taken exactly as `impact` takes them (impact.py: slowest rank per iteration for a
collective, interpolated between measured sizes, never extrapolated):

- tp: one TP all-reduce of decode batch x hidden x dtype bytes;
- moe: one MoE dispatch + combine round at the decode batch's tokens;
- tp_prefill, moe_prefill: the same at a prefill chunk's tokens (DeepEP's normal
  configuration for the MoE round), when the deployment names a prefill chunk;
- kv: one request's KV of the prompt: queueing + transfer (layer-stream: the part not
  hidden behind the prefill compute), per request;
- api: what the front end's network adds to the first token of one request;
- mix classes: a serving-mix test's class, isolated (its quiet) and together;
- gpcnet: GPCNeT's canary tests as `plan` names them (gpcnet-*), for their congestion
  impact factors beside the serving classes'.

How many of each one step (or chunk) runs over this fabric is the placement's
(placement.py): an attention all-reduce per layer and an MLP all-reduce per dense layer
when the TP group crosses the fabric, an MoE round per MoE layer when the EP group does,
a PP activation send per stage boundary between NVLink domains (plan's pp-activation
test: latency between nodes at the activation's size, half a round trip each, the slowest
pair between nodes per iteration). What stays on NVLink is not counted.

Where a class has several series (transports, strategies), the one with the lowest quiet
median is the deployment's (named); the others are listed in `others`.

A collective whose roles rotated over groups (`roles: {groups: ...}`: an instance per
group, attributes `group`, `groups`) is the cluster's mix of groups: per size, the groups'
sequences one after another (every group an equal share of the decode steps), and each
group's own sequence kept (`ClassSeries.groups`) for the per-group check (groups.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

import numpy as np

from ..kinds import analysis_of, kind_measuring, kinds_where
from ..models import allreduce_bytes, kv_request_bytes, moe_dispatch_bytes_per_token
from ..reader import FLAG_AUXILIARY_MASK, FLAG_MIX_CLASS_MASK, FLAG_MIX_CLASS_SHIFT, \
    FLAG_MIX_TOGETHER, MIX_CLASSES, ResultFile
from ..run_analysis import RunAnalysis, format_bytes
from .impact_rows import instances_of
from .placement import DECODE, FABRIC, LINK_WORDS, PREFILL, Placement, placement_of
from .series import collective_times, sequence_at_size, series_by_condition

CLASS_TITLES = {"tp": "TP all-reduce", "moe": "MoE dispatch + combine", "kv": "KV push",
                "api": "API (front end)", "tp_prefill": "TP all-reduce (prefill chunk)",
                "moe_prefill": "MoE dispatch + combine (DeepEP normal, prefill chunk)",
                "pp": "PP activation send", "pp_prefill": "PP activation send (prefill chunk)"}
PREFILL_CLASSES = ("tp_prefill", "moe_prefill", "pp_prefill")
GPCNET_PREFIX = "gpcnet-"    # the names plan gives GPCNeT's canary tests
PP_TEST = "pp-activation"    # the name plan gives the PP activation sends' latency test
SAME_NODE_LEVEL = 1          # reader.LEVEL_NAMES: a pair inside one node


@dataclass
class GroupSeries:
    """One group of a rotated collective at the deployment's size: its index, its ranks
    (the instance's canaries), their hosts, its per-operation times (ns) and the same by
    round (the test's replicates: every group measured once a round, rounds in turn)."""
    index: int
    ranks: List[int]
    hosts: List[str]
    times: np.ndarray
    rounds: Dict[int, np.ndarray] = field(default_factory=dict)


@dataclass
class ClassSeries:
    """One class's chosen series: per condition, its per-operation times (ns)."""
    cls: str
    series: str
    per_step: int                       # how many operations one step/request runs
    bytes: int
    by_condition: Dict[str, np.ndarray] = field(default_factory=dict)
    how: Dict[str, str] = field(default_factory=dict)
    ranks: int = 0
    others: List[str] = field(default_factory=list)
    members: Set[int] = field(default_factory=set)   # the ranks its operations ran on
    canaries: Dict[str, str] = field(default_factory=dict)   # per condition: who measured
    paths: Set[Tuple[str, str]] = field(default_factory=set)   # (transport, memory path) measured
    # kv, per condition: each request's (prefill host, decode host), aligned with its
    # times; only where the times are the requests measured at the deployment's size
    hosts: Dict[str, Tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    # a rotated collective, per condition: each group measured, and how many the rotation had
    groups: Dict[str, List[GroupSeries]] = field(default_factory=dict)
    group_count: int = 0

    def conditions(self) -> List[str]:
        names = sorted(self.by_condition)
        return (["quiet"] if "quiet" in names else []) + [c for c in names if c != "quiet"]


@dataclass
class Measured:
    classes: Dict[str, ClassSeries] = field(default_factory=dict)
    mix: List[ClassSeries] = field(default_factory=list)
    gpcnet: List[ClassSeries] = field(default_factory=list)   # GPCNeT's canary tests (plan)
    missing: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    itl_classes: List[str] = field(default_factory=list)   # what one decode step runs
    prefill_classes: List[str] = field(default_factory=list)   # what one prefill chunk runs
    placement: Optional[Placement] = None   # where each operation runs (placement.py)
    kv_on_fabric: bool = True   # False: colocated, or a prefill/decode pair inside a domain


def canaries_of(inst) -> str:
    """Which ranks measured an instance and how they were placed (its `canaries`,
    `congestors` and `placement` attributes), e.g. "12 canaries of 64 ranks (19 %, packed),
    52 congesting"; "" when the instance does not say."""
    def count(key: str) -> int:
        return len([x for x in str(inst.get(key, "") or "").split(",") if x.strip()])
    canaries, congestors = count("canaries"), count("congestors")
    if not canaries:
        return ""
    ranks = canaries + congestors
    placement = str(inst.get("placement", "") or "")
    return (f"{canaries} canaries of {ranks} ranks ({100 * canaries / ranks:.0f} %"
            + (f", {placement}" if placement else "") + f"), {congestors} congesting")


def _choose(candidates: Dict[str, ClassSeries], measured: Measured) -> Optional[ClassSeries]:
    usable = {k: c for k, c in candidates.items() if c.by_condition}
    if not usable:
        return None

    def quiet_median(c: ClassSeries) -> float:
        base = c.by_condition.get("quiet")
        return float(np.median(base)) if base is not None else float("inf")
    best = min(usable.values(), key=lambda c: (quiet_median(c), c.series))
    best.others = sorted(k for k in usable if k != best.series)
    if best.others:
        measured.notes.append(f"{CLASS_TITLES[best.cls]}: judged on {best.series} (lowest quiet "
                              f"median); also measured: {'; '.join(best.others)}")
    return best


def _group_series(by_group: Dict[Tuple[int, int], Dict[int, np.ndarray]],
                  group_ranks: Dict[int, List[int]], host_of: Dict[int, str],
                  target: int) -> List[GroupSeries]:
    """Each rotated group's times at the target size, round by round (rounds without them
    left out), with its ranks and hosts."""
    out = []
    for g in sorted(group_ranks):
        rounds = {r: sequence_at_size(by_group[(gg, r)], target)[0] for gg, r in by_group if gg == g}
        rounds = {r: t for r, t in rounds.items() if t is not None}
        if rounds:
            out.append(GroupSeries(g, group_ranks[g],
                                   sorted({host_of.get(r, f"rank {r}") for r in group_ranks[g]}),
                                   np.concatenate([rounds[r] for r in sorted(rounds)]), rounds))
    return out


def _collective_class(analysis: RunAnalysis, cls: str, target: int, per_step: int,
                      measured: Measured, token_bytes: Optional[int] = None) -> None:
    """A collective class (kind allreduce, alltoall), or the PP activation sends (kind
    latency, plan's pp-activation test: a stage boundary's sends are as slow as the slowest
    pair between nodes, each half a round trip): the kind its module says measures `cls`."""
    kind = kind_measuring(cls)
    sends = analysis_of(kind).stage_boundary_sends
    candidates: Dict[str, ClassSeries] = {}
    host_of = _hosts_of_ranks(analysis.result)
    for name, condition, members in series_by_condition(instances_of(analysis.result, kind)):
        if name.startswith(GPCNET_PREFIX) or sends != name.startswith(PP_TEST):
            continue   # GPCNeT's 8 B canary all-reduce is not the deployment's TP all-reduce
        # (group (-1: no rotation), round (replicate)) -> size -> times
        by_group: Dict[Tuple[int, int], Dict[int, np.ndarray]] = {}
        group_ranks: Dict[int, List[int]] = {}
        ranks, seen, rotation = 0, set(), 0
        for inst in members:
            if token_bytes and int(inst.get("dispatch_token_bytes", token_bytes)) != token_bytes:
                continue
            s = analysis.samples(inst)
            s = s[(s["flags"].astype("int64") & FLAG_AUXILIARY_MASK) == 0]
            if sends:   # only pairs between nodes carry a stage boundary here
                s = s[s["level"].astype("int64") != SAME_NODE_LEVEL]
            group = int(inst.get("group", -1))
            key = (group, int(inst.get("replicate", 0)) if group >= 0 else 0)
            by_group.setdefault(key, {})[int(inst.get("bytes"))] = collective_times(s) / (
                inst.sample_divisor if sends else 1)
            if group >= 0:
                rotation = max(rotation, int(inst.get("groups", 0)))
                group_ranks[group] = _ranks_of(inst)
            ranks = max(ranks, int(s["rank"].nunique()) if len(s) else 0)
            seen.update(int(r) for r in s["rank"].unique())
        sizes = sorted({b for per in by_group.values() for b in per})
        by_size = {b: np.concatenate([by_group[g][b] for g in sorted(by_group) if b in by_group[g]])
                   for b in sizes}
        times, how = sequence_at_size(by_size, target)
        series = candidates.setdefault(name, ClassSeries(cls, name, per_step, target))
        if times is None:
            measured.missing.append(f"{CLASS_TITLES[cls]} {name} [{condition}]: {how}")
            continue
        series.by_condition[condition] = times
        series.how[condition] = how
        if len(group_ranks) > 1:
            series.how[condition] += f"; {len(group_ranks)} groups measured in turn, pooled"
            series.group_count = max(series.group_count, rotation)
            series.groups[condition] = _group_series(by_group, group_ranks, host_of, target)
        series.canaries[condition] = canaries_of(members[0]) if members else ""
        series.ranks = max(series.ranks, ranks)
        series.members |= seen
        series.paths.update((str(i.get("transport")), str(i.get("memory"))) for i in members)
    chosen = _choose(candidates, measured)
    if chosen is not None:
        measured.classes[cls] = chosen
    elif not candidates:
        measured.missing.append(f"{CLASS_TITLES[cls]} of {format_bytes(target)}: the file has no "
                                + (f"{PP_TEST} test" if sends else f"{kind} test"))


def _kv_class(analysis: RunAnalysis, deployment, measured: Measured) -> None:
    d = deployment
    target = kv_request_bytes(d.model, d.tp, d.block_tokens, d.prompt_tokens)
    candidates: Dict[str, ClassSeries] = {}
    groups: Dict[tuple, list] = {}
    for inst in instances_of(analysis.result, kind_measuring("kv")):
        key = (f"{inst.get('strategy')} {inst.get('direction', 'push')} ({inst.get('transport')}, "
               f"{inst.get('memory_path', inst.get('memory'))}, {inst.get('loop', 'closed')} loop)",
               str(inst.get("condition", "quiet")))
        groups.setdefault(key, []).append(inst)
    host_of = _hosts_of_ranks(analysis.result)
    for (name, condition), members in groups.items():
        per_request: Dict[int, np.ndarray] = {}
        hosts_at: Dict[int, Tuple[np.ndarray, np.ndarray]] = {}
        ranks = set()
        for inst in members:
            req = inst.requests()
            if req.empty:
                continue
            ranks.update(int(r) for r in req["prefill_rank"].unique())
            ranks.update(int(r) for r in req["decode_rank"].unique())
            hosts_at[int(inst.get("bytes"))] = tuple(
                np.array([host_of.get(int(r), f"rank {int(r)}") for r in req[column]], dtype=object)
                for column in ("prefill_rank", "decode_rank"))
            transfer = (req["t_done_ns"] - req["t_start_ns"]).to_numpy(dtype=np.float64)
            if str(inst.get("strategy")) == "layer-stream":
                hidden = (d.model.layers - 1) * float(inst.get("compute_per_layer_s", 0)) * 1e9
                transfer = np.maximum(transfer - hidden, 0)
            queue = (req["t_start_ns"] - req["t_arrival_ns"]).to_numpy(dtype=np.float64)
            per_request[int(inst.get("bytes"))] = transfer + queue
        times, how = sequence_at_size(per_request, target)
        series = candidates.setdefault(name, ClassSeries("kv", name, 1, target))
        if times is None:
            measured.missing.append(f"KV push {name} [{condition}]: {how}")
            continue
        series.by_condition[condition] = times
        series.how[condition] = how
        if target in per_request and len(per_request[target]):
            series.hosts[condition] = hosts_at[target]
        series.canaries[condition] = canaries_of(members[0])
        series.members |= ranks
        series.paths.update((str(i.get("transport")), str(i.get("memory_path", i.get("memory"))))
                            for i in members)
    chosen = _choose(candidates, measured)
    if chosen is not None:
        measured.classes["kv"] = chosen
    elif not groups:
        measured.missing.append(f"KV transfer of a {d.prompt_tokens}-token request "
                                f"({format_bytes(target)} per rank): the file has no kvpush test")


def _ranks_of(inst) -> List[int]:
    """An instance's measuring ranks (its `canaries` attribute)."""
    return [int(x) for x in str(inst.get("canaries", "") or "").split(",") if x.strip()]


def _hosts_of_ranks(result: ResultFile) -> Dict[int, str]:
    ranks = result.ranks()
    if ranks is None or len(ranks) == 0 or "host" not in ranks:
        return {}
    return {int(r): str(h) for r, h in zip(ranks["rank"], ranks["host"])}


def _api_class(analysis: RunAnalysis, measured: Measured) -> None:
    candidates: Dict[str, ClassSeries] = {}
    for inst in instances_of(analysis.result, kind_measuring("api")):
        rows = inst.api_requests()
        ok = rows[rows["status"] == "ok"] if not rows.empty else rows
        condition = str(inst.get("condition", "quiet"))
        name = f"{inst.get('name')} ({inst.get('network', '')} {inst.get('interface', '')})"
        series = candidates.setdefault(name, ClassSeries("api", name, 1, 0))
        if ok.empty:
            measured.missing.append(f"API {name} [{condition}]: no request answered")
            continue
        service_ns = float(inst.get("service_time_s", 0)) * 1e9
        series.by_condition[condition] = np.maximum(
            ok["ttfb_ns"].to_numpy(dtype=np.float64) - service_ns, 0)
        series.how[condition] = "time to first byte minus the server's service time"
    chosen = _choose(candidates, measured)
    if chosen is not None:
        measured.classes["api"] = chosen
    elif any(series.cls == "mix/api" for series in measured.mix):
        measured.missing.append("front-end API share of a request: no api test (the serving "
                                "mix's API class is judged as a mix class only): not counted "
                                "in TTFT")
    else:
        measured.missing.append("front-end API share of a request: not measured in this file "
                                "(no api test): not counted in TTFT")


def _mix_classes(result: ResultFile, measured: Measured) -> None:
    """Each mix test's classes: isolated stands in for quiet, together for a condition."""
    for inst in instances_of(result, kind_measuring("mix")):
        s = inst.samples()
        flags = s["flags"].astype("int64").to_numpy()
        head = (flags & FLAG_AUXILIARY_MASK) == 0
        took = (s["t_done_ns"] - s["t_post_ns"]).to_numpy(dtype=np.float64)[head]
        cls = ((flags & FLAG_MIX_CLASS_MASK) >> FLAG_MIX_CLASS_SHIFT)[head]
        together = ((flags & FLAG_MIX_TOGETHER) != 0)[head]
        for k, name in enumerate(MIX_CLASSES):
            series = ClassSeries(f"mix/{name}", f"{inst.get('name')}/{name}", 1, 0)
            for phase, is_together in (("quiet", False), ("mix together", True)):
                values = took[(cls == k + 1) & (together == is_together)]
                if len(values):
                    series.by_condition[phase] = values
                    series.how[phase] = "isolated phase" if phase == "quiet" else "together phase"
            if series.by_condition:
                measured.mix.append(series)


def _prefill_classes(analysis: RunAnalysis, d, out: Measured, place: Placement) -> None:
    """One prefill chunk's communication over this fabric: its TP all-reduces, (DeepEP
    normal) MoE rounds and PP sends at the chunk's tokens; named as not counted when no
    chunk is given."""
    if not d.prefill_chunk:
        out.missing.append("prefill chunk communication (TP all-reduces and MoE normal rounds "
                           "per chunk): no --prefill-chunk given: not counted in TTFT")
        return
    counts = {c: place.fabric_count(c, PREFILL, d.prefill_chunk) for c in ("tp", "moe", "pp")}
    out.prefill_classes = [f"{c}_prefill" for c in ("tp", "moe", "pp") if counts[c]]
    if counts["tp"]:
        _collective_class(analysis, "tp_prefill",
                          allreduce_bytes(d.model, d.prefill_chunk), counts["tp"], out)
    if counts["moe"]:
        token = moe_dispatch_bytes_per_token(d.model, "fp8")
        _collective_class(analysis, "moe_prefill", d.prefill_chunk * token,
                          counts["moe"], out, token_bytes=token)
    if counts["pp"]:
        _collective_class(analysis, "pp_prefill",
                          allreduce_bytes(d.model, d.prefill_chunk), counts["pp"], out)


def _gpcnet_classes(analysis: RunAnalysis, measured: Measured) -> None:
    """GPCNeT's canary tests (plan.gpcnet_tests): per condition, per-operation times (a
    collective: its slowest rank per iteration; point-to-point: each message's time)."""
    for kind in kinds_where(lambda a: a.gpcnet_canary):
        tests: Dict[str, ClassSeries] = {}
        for inst in instances_of(analysis.result, kind):
            name = str(inst.get("name", ""))
            if not name.startswith(GPCNET_PREFIX):
                continue
            s = analysis.samples(inst)
            s = s[(s["flags"].astype("int64") & FLAG_AUXILIARY_MASK) == 0]
            times = (collective_times(s) if analysis_of(kind).collective else
                     (s["t_done_ns"].astype("int64") - s["t_post_ns"].astype("int64"))
                     .to_numpy(dtype=np.float64))
            if not len(times):
                continue
            condition = str(inst.get("condition", "quiet"))
            nbytes = int(inst.get("bytes"))
            series = tests.setdefault(name, ClassSeries(f"gpcnet/{name[len(GPCNET_PREFIX):]}",
                                                        f"{name} ({format_bytes(nbytes)})", 1,
                                                        nbytes))
            series.by_condition[condition] = times
            series.canaries[condition] = canaries_of(inst)
        measured.gpcnet.extend(tests.values())


def measure(result: ResultFile, deployment, placement: Optional[Placement] = None) -> Measured:
    """Every class's distributions for `deployment` (impact.Deployment) placed as
    `placement` says (default: its model, TP and EP with the cluster's shape unknown, so
    every group counts as crossing the fabric)."""
    d = deployment
    place = placement or placement_of(d)
    analysis = RunAnalysis(result)
    out = Measured(placement=place)
    counts = {c: place.fabric_count(c, DECODE, d.decode_batch) for c in ("tp", "moe", "pp")}
    out.itl_classes = [c for c in ("tp", "moe", "pp") if counts[c]]
    if counts["tp"]:
        _collective_class(analysis, "tp", allreduce_bytes(d.model, d.decode_batch),
                          counts["tp"], out)
    elif d.tp <= 1 and not place.dp_attention:
        out.notes.append(f"TP{d.tp}: no tensor-parallel all-reduces (tp = 1)")
    if counts["moe"]:
        token = moe_dispatch_bytes_per_token(d.model, "fp8")
        _collective_class(analysis, "moe", d.decode_batch * token, counts["moe"],
                          out, token_bytes=token)
    if counts["pp"]:   # an activation is decode batch x hidden x dtype, as an all-reduce's
        _collective_class(analysis, "pp", allreduce_bytes(d.model, d.decode_batch),
                          counts["pp"], out)
    out.notes.extend(place.notes())
    _prefill_classes(analysis, d, out, place)
    kv = [op for op in place.request_operations(d.prompt_tokens, d.block_tokens) if op.cls == "kv"]
    out.kv_on_fabric = bool(kv) and kv[0].link == FABRIC
    if out.kv_on_fabric:
        _kv_class(analysis, d, out)
    else:
        out.notes.append("KV transfer prefill -> decode: " + (
            f"{LINK_WORDS[kv[0].link]} ({kv[0].group})" if kv else
            "none (prefill and decode colocated)") + ": not counted in TTFT")
    _mix_classes(result, out)   # first: the API line says whether a mix measured the API
    _api_class(analysis, out)
    _gpcnet_classes(analysis, out)
    return out
