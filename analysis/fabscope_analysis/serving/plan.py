"""The test plan for "is this cluster fit to serve model M at this SLO?".

From the model (sizes from the C++ model code through `fabscope list --model`), the
cluster's size and layout, the time budget and the neighbour conditions, `plan` writes a
scenario whose tests measure what `fit` composes (docs/serving-fit.md):

- what crosses the fabric, as the placement says (placement.py: TP, PP, EP, DP attention,
  GPUs per node = ranks per node, nodes per NVLink domain); a group inside one NVLink
  domain is not measured, and the plan says so;
- the TP all-reduce at the decode batches and prefill chunks when the TP group spans NVLink
  domains, on one TP group (packed) as canaries while the other ranks make each neighbour
  condition; at the decode sizes, where the SLO has an ITL target, the measuring group
  rotates over every TP group of the cluster (plan_groups.py), so that `fit` judges every
  group against the others round by round (groups.py);
- for a model with experts whose EP group spans NVLink domains, the MoE dispatch + combine
  over the expert group (rotated the same way where the measured group is a part of the
  ranks), under the same conditions, in DeepEP's two configurations: low-latency (decode: each decode batch
  and 128 tokens per rank) and normal (prefill: the tokens of each prefill chunk per
  rank), both with fp8
  dispatch / bf16 combine copies as DeepEP runs them;
- the KV push of a request at each prompt length, from one node's ranks to the next
  node's (so it crosses the fabric), with enough requests for a p99, under the same
  conditions (its prefill and decode ranks measure, the other ranks load);
- GPCNeT's canaries, where the rank count allows: a random 20 % of the ranks measure
  random-ring latency (8 B) and bandwidth and an 8 B all-reduce, quiet and while the other
  80 % make each neighbour condition, so that the congestion impact factor has GPCNeT's
  own reference beside the serving classes';
- tests that relate ranks to many peers so that a FAIL names what to fix: all-pairs on a
  small cluster, rails + random rings + bisection beyond it.

The SLO goes into a criteria file the scenario names (`criteria:`; the shipped default
rules plus an `slo:` section), so `fit` reads it from the result file. The loader's
estimate (`fabscope list --scenario`) must fit the budget: the plan shrinks, in a fixed
order, until it does and says what it shrank.
"""

from __future__ import annotations

import copy
import math
import os
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import yaml

from ..kinds import analysis_of
from ..models import DTYPE_BYTES, ModelError, preset
from .measured import PP_TEST
from .placement import FABRIC, Placement, PlacementError
from .plan_groups import rotate_groups
from .plan_list import ListAnswer, ModelSizes, PlanError, format_duration
from .plan_paths import HOST, DataPaths, apply_paths
from .slo import ALL_KEYS

ALL_PAIRS_MAX_RANKS = 128      # all-pairs is N-1 rounds of N ranks; beyond this, samples
P99_VALUES = 100               # fit reads a p99 from 100 values or more
DEEPEP_LOW_LATENCY_TOKENS = 128   # DeepEP's low-latency (decode) kernels: tokens per rank
CONGESTED = ("incast", "alltoall", "bidirectional", "copy")
MEMORY_CAP_MIB = 32 * 1024     # beyond this per rank, drop prompt lengths instead
GPCNET_CANARY_FRACTION = 0.2   # GPCNeT: a random 20 % of nodes measure, 80 % congest
GPCNET_MIN_CANARIES = 4        # a random ring of fewer is hardly a ring
GPCNET_ITERATIONS = 200          # the GPCNeT all-reduce canary's iterations, at most
GPCNET_BANDWIDTH_SIZE = "128KiB"   # GPCNeT's random-ring bandwidth message


@dataclass
class Cluster:
    ranks: int
    ranks_per_node: int = 8
    nodes_per_leaf: int = 0
    leaves_per_pod: int = 0
    topology: Optional[str] = None

    @property
    def nodes(self) -> int:
        return max(1, self.ranks // self.ranks_per_node)

    def list_args(self) -> List[str]:
        return ["--ranks", str(self.ranks), "--ranks-per-node", str(self.ranks_per_node),
                "--nodes-per-leaf", str(self.nodes_per_leaf),
                "--leaves-per-pod", str(self.leaves_per_pod)]


@dataclass
class Knobs:
    """Everything the budget may shrink, at its starting value."""
    decode_batches: List[int]
    prefill_chunks: List[int]
    prompts: List[int]
    conditions: List[str]
    collective_iterations: int = 200     # each decode-step size (TP, MoE, PP)
    prefill_iterations: int = 200        # each prefill-chunk size (TTFT only)
    latency_iterations: int = 50
    bandwidth_iterations: int = 10
    bandwidth_window: int = 0      # messages per bandwidth sample; 0: the kind's default (64)
    kv_requests: int = 120
    # the rotated KV push (several nodes, quiet): requests each node sends as prefill and
    # receives as decode, what fit's per-node check reads (80: a node whose requests miss
    # the budget in 10 % of cases shows 4 or more in each role in about 9 runs of 10)
    kv_node_requests: int = 80
    probes: List[str] = field(default_factory=list)   # p2p tests for the diagnosis
    gpcnet: bool = True                                # GPCNeT's canary tests, where they fit
    max_memory_mib: int = 4096
    # the TP / EP groups each rotated decode-size test measures in turn (roles.groups); 0:
    # every group of the cluster, else the first this many (the budget's step)
    max_groups: int = 0


@dataclass
class PlanRequest:
    model: str
    tp: int
    ep: Optional[int]
    cluster: Cluster
    budget_s: float
    slo_text: str
    seed: int = 7
    pp: int = 1
    dp_attention: bool = False
    nodes_per_nvlink_domain: int = 1
    # the serving tests' data path (plan_paths.py); host memory unless the plan chose GPUs
    paths: DataPaths = field(default_factory=lambda: DataPaths(HOST, "not chosen"))

    def placement(self) -> Placement:
        """Where the deployment's operations run on this cluster (GPUs per node = ranks per
        node); PlanError naming the option when it cannot be placed."""
        try:
            model = preset(self.model)
            ep = self.ep or (self.cluster.ranks if model.moe is not None else None)
            return Placement(model, self.tp, self.pp, ep, self.dp_attention,
                             self.cluster.ranks_per_node, self.nodes_per_nvlink_domain)
        except (ModelError, PlacementError) as exc:
            option = "--model" if isinstance(exc, ModelError) else "--tp"
            raise PlanError(f"{option}: {exc}", option) from None


@dataclass
class Plan:
    request: PlanRequest
    sizes: ModelSizes
    knobs: Knobs
    answer: ListAnswer
    shrunk: List[str]
    notes: List[str]
    scenario: dict
    criteria_name: str
    calibration: Optional[object] = None   # calibrate.Calibration: the estimate's figures


ALL_PAIRS = ["all-pairs-latency", "all-pairs-bandwidth"]
# What the sampled probes cannot see that all-pairs would: said in the plan when chosen.
SAMPLED_BLIND_SPOT = ("a single bad GPU pair (rank pair) that is neither on a rail, nor a "
                      "random ring's neighbours, nor split by the bisection is not seen; all-pairs "
                      "would see it")


def sampled_probes(cluster: Cluster) -> List[str]:
    probes = ["ring-latency", "bisection-bandwidth"]
    return (["rails-latency", "rails-bandwidth"] if cluster.nodes > 1 else []) + probes


def probes_for(cluster: Cluster, calibrated: bool = False) -> List[str]:
    """All-pairs (every pair) up to ALL_PAIRS_MAX_RANKS by the loader's planning figure;
    with a calibrated estimate, all-pairs at any size, swapped for the sampled design only
    when the budget cannot hold it (plan_budget.SHRINK_STEPS, the first step)."""
    if calibrated or cluster.ranks <= ALL_PAIRS_MAX_RANKS:
        return list(ALL_PAIRS)
    return sampled_probes(cluster)


def _p2p_test(probe: str, knobs: Knobs) -> dict:
    pattern, kind = probe.rsplit("-", 1)
    test = {"name": probe, "kind": kind, "pattern": pattern}
    if analysis_of(kind).metric == "latency":
        test.update(sizes=[8], iterations=knobs.latency_iterations)
    else:
        test.update(sizes=["1MiB"], iterations=knobs.bandwidth_iterations)
        if knobs.bandwidth_window:   # sized for the calibrated link rate (calibrate.py)
            test.update(window=knobs.bandwidth_window, warmup=2)
    return test


def gpcnet_canaries(cluster: Cluster, conditions: List[str]) -> int:
    """The canaries of GPCNeT's layout (floor of 20 % of the ranks, as the loader counts
    `canaries: 20%`); 0 when there is no congested condition or too few ranks."""
    if not any(c in CONGESTED for c in conditions):
        return 0
    canaries = int(math.floor(GPCNET_CANARY_FRACTION * cluster.ranks + 1e-9))
    return canaries if canaries >= GPCNET_MIN_CANARIES else 0


def gpcnet_tests(cluster: Cluster, knobs: Knobs, notes: List[str]) -> List[dict]:
    """GPCNeT's canary tests: random-ring latency 8 B and bandwidth, an 8 B all-reduce, on
    20 % of the ranks while the other 80 % make each neighbour condition. The rings' canaries
    fill nodes in rank order (packed): the loader fixes a topology pattern's members at
    load, so it refuses placement random there; the all-reduce's are drawn at random."""
    canaries = gpcnet_canaries(cluster, knobs.conditions)
    if not knobs.gpcnet or not canaries:
        if knobs.gpcnet and any(c in CONGESTED for c in knobs.conditions):
            notes.append(f"no GPCNeT canary tests: 20 % of {cluster.ranks} ranks is fewer than "
                         f"{GPCNET_MIN_CANARIES} canaries")
        return []
    fraction = f"{round(100 * GPCNET_CANARY_FRACTION)}%"

    def common(placement: str) -> dict:
        return {"conditions": list(knobs.conditions),
                "roles": {"canaries": fraction, "placement": placement}}
    notes.append(f"GPCNeT's canaries: {canaries} ranks of {cluster.ranks} (20 %) measure "
                 f"random-ring latency 8 B and bandwidth {GPCNET_BANDWIDTH_SIZE} (nodes filled in "
                 "rank order: a ring's members are fixed at load) and an 8 B all-reduce (ranks "
                 f"drawn at random) while the other {cluster.ranks - canaries} make each condition")
    return [dict(name="gpcnet-ring-latency", kind="latency", pattern="ring", sizes=[8],
                 iterations=knobs.latency_iterations, **common("packed")),
            dict(name="gpcnet-ring-bandwidth", kind="bandwidth", pattern="ring",
                 sizes=[GPCNET_BANDWIDTH_SIZE], iterations=knobs.bandwidth_iterations,
                 **common("packed")),
            # a canary's congestion factor is a ratio of medians: the tail sizing of the
            # serving collectives (tens of thousands) is not its
            dict(name="gpcnet-allreduce", kind="allreduce", sizes=[8],
                 iterations=min(knobs.collective_iterations, GPCNET_ITERATIONS), **common("random"))]


def _canaries(group: int, cluster: Cluster, conditions: List[str]) -> int:
    """The measured group: under a neighbour condition at most half the ranks, so that the
    other half congests (the loader's default split)."""
    if any(c in CONGESTED for c in conditions) and group > cluster.ranks // 2:
        return max(2, cluster.ranks // 2)
    return min(group, cluster.ranks)


ROTATION_CYCLES = 4   # times the KV push's ring of roles runs (kvpush rotation_cycles)


def kv_group(cluster: Cluster) -> Tuple[int, int]:
    """(prefill ranks, decode ranks): one node pushes to the next, across the fabric."""
    if cluster.nodes > 1:
        return cluster.ranks_per_node, cluster.ranks_per_node
    half = max(1, cluster.ranks // 2)
    return half, half


def _kv_test(cluster: Cluster, sizes: ModelSizes, knobs: Knobs, notes: List[str]) -> dict:
    """KV push, quiet and under the neighbour conditions: its prefill and decode ranks
    measure (packed: one node pushes to the next), every other rank makes the load; the
    group shrinks to half the ranks when it would leave fewer than 2 to congest. Quiet only
    (no rank needed for the load) on several nodes, the roles rotate over every node."""
    prefill, decode = kv_group(cluster)
    test = {"name": "kv-push", "kind": "kvpush", "strategy": "staged",
            "sizes": {"derive": "kv-request", "block_tokens": sizes.block_tokens,
                      "prompt_tokens": list(knobs.prompts)},
            "loop": {"mode": "closed", "in_flight": 1}}
    if any(c in CONGESTED for c in knobs.conditions):
        if prefill + decode > cluster.ranks - 2:
            half = max(2, cluster.ranks // 2)
            prefill, decode = half // 2, half - half // 2
            notes.append(f"the KV push is measured {prefill} -> {decode} ranks: the neighbour "
                         "conditions need 2 congesting ranks or more")
        test.update(conditions=list(knobs.conditions),
                    roles={"canaries": prefill + decode, "placement": "packed"})
    elif cluster.nodes > 1:
        # every node that would serve pushes and receives (kvpush role_rotation), the
        # ring run ROTATION_CYCLES times so that a node's roles spread over the run
        test["role_rotation"] = "ring"
        test["rotation_cycles"] = ROTATION_CYCLES
        rounds = cluster.nodes * ROTATION_CYCLES
        per_round = max(math.ceil(math.ceil(knobs.kv_requests / prefill) / rounds),
                        math.ceil(knobs.kv_node_requests / (prefill * ROTATION_CYCLES)))
        notes.append(f"the KV push rotates over all {cluster.nodes} nodes, the ring run "
                     f"{ROTATION_CYCLES} times: {rounds} rounds of {per_round} "
                     f"request{'s' if per_round > 1 else ''} per prefill rank, each node prefill "
                     f"in {ROTATION_CYCLES} rounds and decode in {ROTATION_CYCLES}, each side with "
                     f"{min(ROTATION_CYCLES, cluster.nodes - 1)} partner(s), "
                     f"{per_round * prefill * ROTATION_CYCLES} requests per node and role; fit "
                     "judges each node on both sides. Not on its path: the links between nodes "
                     "it never pairs (the probes' pairs cover them)")
        test.update(prefill_ranks=prefill, decode_ranks=decode,
                    iterations=per_round * rounds, warmup_requests=1)
        return test
    else:
        test["ranks"] = prefill + decode
    test.update(prefill_ranks=prefill, decode_ranks=decode,
                iterations=max(1, math.ceil(knobs.kv_requests / prefill)), warmup_requests=1)
    return test


def moe_tokens(knobs: Knobs) -> List[int]:
    """Tokens per rank of the MoE rounds: DeepEP's low-latency configuration (decode: each
    decode batch, which fit reads, and the published 128) and its normal one at each
    prefill chunk (a chunk's tokens go through one dispatch)."""
    return sorted({*knobs.decode_batches, DEEPEP_LOW_LATENCY_TOKENS, *knobs.prefill_chunks})


def moe_labels(knobs: Knobs) -> List[str]:
    decode = sorted({*knobs.decode_batches, DEEPEP_LOW_LATENCY_TOKENS})
    labels = [f"{', '.join(map(str, decode))} tokens per rank = DeepEP low-latency (decode "
              f"batches; {DEEPEP_LOW_LATENCY_TOKENS} as DeepEP publishes it)"]
    labels += [f"{c} tokens per rank = DeepEP normal (prefill chunk)" for c in knobs.prefill_chunks]
    return labels


def build_scenario(req: PlanRequest, sizes: ModelSizes, knobs: Knobs, criteria_name: str,
                   notes: List[str]) -> dict:
    cluster = req.cluster
    tests = []
    place = req.placement()
    notes.extend(f"placement: {line}" for line in place.statements())
    if place.fabric_count("tp"):
        tests += _by_phase(_tp_test(req, knobs, notes), knobs)
    elif place.total_count("tp"):
        notes.append(f"the TP all-reduces run over NVLink inside each {place.domain_words()}: "
                     "not this fabric's, not measured")
    if place.fabric_count("pp"):
        test = _pp_test(req, place, knobs, notes)
        if test:
            tests += _by_phase(test, knobs, place)
    if sizes.has_experts and place.fabric_count("moe"):
        ep = min(req.ep or cluster.ranks, cluster.ranks)
        ep_canaries = _canaries(ep, cluster, knobs.conditions)
        if ep_canaries < (req.ep or ep):
            notes.append(f"the MoE rounds are measured over {ep_canaries} ranks, not EP "
                         f"{req.ep or ep}: the cluster has {cluster.ranks} ranks and the neighbour "
                         "conditions need 2 congesting ranks or more; fit uses them as measured")
        moe = {"name": "moe-dispatch-combine", "kind": "alltoall",
               "sizes": {"derive": "moe-dispatch", "tokens": moe_tokens(knobs)},
               "conditions": list(knobs.conditions), "iterations": knobs.collective_iterations,
               "roles": {"canaries": ep_canaries, "placement": "packed"}}
        rotate_groups(moe, "MoE dispatch + combine", "EP" if ep_canaries == (req.ep or ep)
                      else "measured", req, knobs, notes)
        tests += _by_phase(moe, knobs)
    elif sizes.has_experts and place.total_count("moe"):
        notes.append(f"the MoE rounds run over NVLink inside each {place.domain_words()} (EP "
                     f"{place.ep}): not this fabric's, not measured")
    kv = [op for op in place.request_operations(max(knobs.prompts)) if op.cls == "kv"]
    if kv and kv[0].link == FABRIC:
        tests.append(_kv_test(cluster, sizes, knobs, notes))
    else:
        notes.append("the KV transfer does not cross this fabric: not measured")
    apply_paths(tests, req.paths)
    if tests:
        notes.append(req.paths.note(tests))
    tests += gpcnet_tests(cluster, knobs, notes)
    tests += [_p2p_test(p, knobs) for p in knobs.probes]
    scenario = {"name": f"plan-{sizes.name}-tp{req.tp}-{cluster.ranks}",
                "description": f"what fit needs for {sizes.name} TP {req.tp}"
                               + (f" PP {req.pp}" if req.pp > 1 else "")
                               + (" DP attention" if req.dp_attention else "")
                               + (f" EP {req.ep}" if req.ep else "")
                               + f" on {cluster.ranks} ranks, budget {format_duration(req.budget_s)}",
                "seed": req.seed, "model": sizes.name, "parallel": {"tp": req.tp},
                "criteria": criteria_name, "budget": f"{int(math.ceil(req.budget_s))}s",
                "defaults": {"warmup": 10, "timeout": "120s"}, "tests": tests}
    if knobs.max_memory_mib > 4096:
        scenario["max_memory_per_rank"] = f"{math.ceil(knobs.max_memory_mib / 1024)}GiB"
    return scenario


def _by_phase(test: dict, knobs: Knobs, place: Optional[Placement] = None) -> List[dict]:
    """A collective's test split into its decode-step sizes (knobs.collective_iterations,
    what the ITL needs) and, as `<name>-prefill`, its prefill-chunk sizes
    (knobs.prefill_iterations, what the TTFT needs): a p99 of a step of many operations
    needs tens of thousands of the small ones, which the prefill's large sizes would turn
    into hours."""
    if not knobs.prefill_chunks:
        return [test]
    decode, prefill = copy.deepcopy(test), copy.deepcopy(test)
    prefill["name"] = f"{test['name']}-prefill"
    prefill["iterations"] = knobs.prefill_iterations
    if prefill.get("roles", {}).pop("groups", None):   # the ITL's sizes rotate; the TTFT's do not
        prefill.pop("repeats", None)
    sizes = test["sizes"]
    if isinstance(sizes, dict) and sizes.get("derive") == "tp-allreduce":
        decode["sizes"].pop("prefill_chunk", None)
        prefill["sizes"].pop("decode_batch", None)
    elif isinstance(sizes, dict):   # moe-dispatch: tokens per rank
        decode["sizes"]["tokens"] = sorted({*knobs.decode_batches, DEEPEP_LOW_LATENCY_TOKENS})
        prefill["sizes"]["tokens"] = sorted(set(knobs.prefill_chunks))
    else:                           # explicit bytes: tokens x the activation per token
        per_token = place.model.hidden_size * DTYPE_BYTES[place.model.dtype]
        decode["sizes"] = sorted({t * per_token for t in knobs.decode_batches})
        prefill["sizes"] = sorted({t * per_token for t in knobs.prefill_chunks})
    return [decode, prefill]


def _tp_test(req: PlanRequest, knobs: Knobs, notes: List[str]) -> dict:
    """The TP all-reduce at each decode batch and prefill chunk, one TP group measuring at a
    time: at the decode sizes every TP group in turn (rotate_groups)."""
    tp_canaries = _canaries(req.tp, req.cluster, knobs.conditions)
    if tp_canaries < req.tp:
        notes.append(f"the TP all-reduce is measured over {tp_canaries} ranks, not {req.tp}: the "
                     "neighbour conditions need 2 congesting ranks or more")
    derive = {"derive": "tp-allreduce", "decode_batch": list(knobs.decode_batches)}
    if knobs.prefill_chunks:
        derive["prefill_chunk"] = list(knobs.prefill_chunks)
    test = {"name": "tp-allreduce", "kind": "allreduce", "sizes": derive,
            "conditions": list(knobs.conditions), "iterations": knobs.collective_iterations,
            "roles": {"canaries": tp_canaries, "placement": "packed"}}
    rotate_groups(test, "TP all-reduce", "TP" if tp_canaries == req.tp else "measured",
                  req, knobs, notes)
    return test


def _pp_test(req: PlanRequest, place: Placement, knobs: Knobs, notes: List[str]) -> Optional[dict]:
    """The PP activation sends that cross the fabric: ping-pong latency (half a round trip)
    between the ranks of one local rank on two nodes (pattern rails), at the activation of
    each decode batch and prefill chunk (tokens x hidden x dtype), the other ranks making
    each neighbour condition. None, with a note, where the plan cannot place it."""
    cluster, crossing = req.cluster, place.fabric_count("pp")
    if req.nodes_per_nvlink_domain > 1 or cluster.nodes < 2:
        notes.append(f"{crossing} PP activation send(s) per step cross this fabric: not measured "
                     "(the plan measures them between two single-node domains; fit names them "
                     "as missing)")
        return None
    per_token = place.model.hidden_size * DTYPE_BYTES[place.model.dtype]
    sizes = sorted({t * per_token for t in knobs.decode_batches + knobs.prefill_chunks})
    pair = 2 * cluster.ranks_per_node
    test = {"name": PP_TEST, "kind": "latency", "pattern": "rails", "sizes": sizes,
            "iterations": knobs.collective_iterations}
    if any(c in CONGESTED for c in knobs.conditions):
        canaries = _canaries(pair, cluster, knobs.conditions)
        canaries -= canaries % 2
        test.update(conditions=list(knobs.conditions),
                    roles={"canaries": canaries,
                           "placement": "packed" if canaries == pair else "spread"})
        if canaries < pair:
            notes.append(f"the PP activation sends are measured by {canaries} ranks spread over "
                         f"the nodes, not two whole nodes: the neighbour conditions need 2 "
                         "congesting ranks or more")
    else:
        test["ranks"] = pair
    notes.append(f"{crossing} PP activation send(s) per step cross this fabric: {PP_TEST} "
                 "measures them between nodes (rails), half a round trip at each activation size")
    return test


def criteria_text(slo_text: str, cluster: Cluster, criteria_dir: str) -> str:
    """The shipped default rules for the run's size, plus the SLO `fit` reads."""
    default = "rack-acceptance.yaml" if cluster.nodes > 1 else "local.yaml"
    with open(os.path.join(criteria_dir, default), encoding="utf-8") as f:
        rules = f.read().rstrip("\n")
    slo = {}
    for item in filter(None, (p.strip() for p in slo_text.split(","))):
        key, value = (s.strip() for s in item.split("=", 1))
        assert key in ALL_KEYS, key   # parse_slo_text checked it before
        slo[key] = value
    return (f"# criteria/{default} as shipped, with the serving objectives that `fit` reads\n"
            + rules + "\n\n" + yaml.safe_dump({"slo": slo}, sort_keys=False))


def scenario_text(plan: Plan, argv: List[str]) -> str:
    req, answer = plan.request, plan.answer
    lines = [f"# Written by: python3 -m fabscope_analysis plan {' '.join(argv)}",
             f"# Estimate (fabscope list --scenario THIS {' '.join(req.cluster.list_args())}): "
             f"{format_duration(answer.estimate_s)} for {answer.instances} test instances, "
             f"budget {format_duration(req.budget_s)} ("
             + (plan.calibration.describe() + "; the loader's planning figure "
                + format_duration(answer.loader_estimate_s or 0) if plan.calibration
                else "a planning figure, not a prediction") + ")",
             f"# Model sizes (fabscope list --model {plan.sizes.name} --tp {req.tp}); per decode "
             "step (placement): " + _step_counts(req.placement())]
    lines += [f"#   {line}" for line in plan.sizes.size_lines]
    if plan.sizes.has_experts:
        lines.append("# MoE rounds (moe-dispatch-combine, fp8 dispatch / bf16 combine in both): "
                     + "; ".join(moe_labels(plan.knobs)))
    lines += [f"# Changed to fit the budget or the memory limit: {s}" for s in plan.shrunk]
    lines += [f"# Thinned by the loader: {t}" for t in answer.thinned]
    lines += [f"# Note: {n}" for n in plan.notes]
    lines.append(f"# The verdict: python3 -m fabscope_analysis fit RESULT.h5 {fit_arguments(plan)}")
    body = yaml.safe_dump(copy.deepcopy(plan.scenario), sort_keys=False, default_flow_style=None,
                          width=110)
    return "\n".join(lines) + "\n" + body


def _step_counts(place: Placement) -> str:
    ops = place.step_operations(1)
    return "; ".join(f"{op.count} x {op.name} ({'this fabric' if op.link == FABRIC else op.link})"
                     for op in ops) or "no communication"


def fit_arguments(plan: Plan) -> str:
    req, knobs = plan.request, plan.knobs
    args = [f"--tp {req.tp}"]
    if plan.sizes.has_experts:
        args.append(f"--ep {req.placement().ep}")
    if req.pp > 1:
        args.append(f"--pp {req.pp}")
    if req.dp_attention:
        args.append("--dp-attention")
    args.append(f"--gpus-per-node {req.cluster.ranks_per_node}")
    if req.nodes_per_nvlink_domain > 1:
        args.append(f"--nodes-per-nvlink-domain {req.nodes_per_nvlink_domain}")
    args.append(f"--decode-batch {max(knobs.decode_batches)}")
    if knobs.prefill_chunks:
        args.append(f"--prefill-chunk {max(knobs.prefill_chunks)}")
    args += [f"--prompt {max(knobs.prompts)}",
             f"--block-tokens {plan.sizes.block_tokens}"]
    if req.paths.required:
        args.append("--require-gpu-paths")
    return " ".join(args)
