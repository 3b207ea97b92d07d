"""The plan's budget: how many operations tell the SLO's tails (the rule of three), and
the steps that shrink a plan, in order, until the loader's estimate fits the budget."""

from __future__ import annotations

import math
from typing import Callable, List, Optional, Tuple

from .placement import PREFILL
from .plan import ALL_PAIRS, ALL_PAIRS_MAX_RANKS, MEMORY_CAP_MIB, P99_VALUES, Knobs, Plan, \
    SAMPLED_BLIND_SPOT, PlanRequest, build_scenario, sampled_probes
from .plan_groups import group_count
from .plan_list import ListAnswer, ModelSizes, PlanError, format_duration, smallest_estimate
from .resample import operations_for_share, operations_to_tell


def _halve(attr: str, least: int, what: str) -> Callable[[Knobs], Optional[str]]:
    def step(k: Knobs) -> Optional[str]:
        value = getattr(k, attr)
        if value <= least:
            return None
        setattr(k, attr, max(least, value // 2))
        return f"{what}: {value} -> {getattr(k, attr)}"
    return step


def _drop(attr: str, keep: int, what: str, last: bool = False) -> Callable[[Knobs], Optional[str]]:
    def step(k: Knobs) -> Optional[str]:
        values = getattr(k, attr)
        if len(values) <= keep:
            return None
        gone = values.pop(-1 if last else 0)
        return f"{what} {gone} left out"
    return step


def _switch_off(attr: str, what: str) -> Callable[[Knobs], Optional[str]]:
    def step(k: Knobs) -> Optional[str]:
        if not getattr(k, attr):
            return None
        setattr(k, attr, False)
        return f"{what} left out"
    return step


def size_for_tails(req: PlanRequest, knobs: Knobs, targets_ms) -> List[Tuple[str, int, str]]:
    """Raises the collective iterations and the KV requests to what `fit` needs to tell
    the SLO's percentiles: a step (or request) of K fabric operations composed from n
    measured ones cannot show an event none of them had, which may still come at up to
    3 / n per operation (resample.operations_for_share, the rule of three). Returns
    (knob, count that tells, what it tells) for tail_notes; the budget may shrink them
    again, and fit then says CANNOT TELL and how many would tell."""
    place, needs = req.placement(), []

    def quantile(kind: str) -> Optional[float]:
        qs = [float(k.split("_p")[1]) for k in targets_ms if k.startswith(kind + "_p")]
        return max(qs) if qs else None
    itl_q, ttft_q = quantile("itl"), quantile("ttft")
    step = sum(place.fabric_count(c) for c in ("tp", "moe", "pp"))
    if itl_q is not None and step:
        needs.append(("collective_iterations", operations_to_tell(step, itl_q),
                      f"the ITL p{itl_q:g} of a step of {step} fabric operations"))
    if ttft_q is not None:
        # fit counts the prefill's communication only at a given chunk
        chunks = -(-max(knobs.prompts) // max(knobs.prefill_chunks)) if knobs.prefill_chunks else 0
        prefill = sum(place.fabric_count(c, PREFILL) for c in ("tp", "moe", "pp")) * chunks
        # the tail split between the KV request and the prefill's operations when both count
        tail = (1.0 - ttft_q / 100.0) / (2 if prefill else 1)
        needs.append(("kv_requests", operations_for_share(1, tail),
                      f"the TTFT p{ttft_q:g}'s KV requests (unseen events below {100 * tail:g} %)"))
        if prefill:
            needs.append(("prefill_iterations", operations_for_share(prefill, tail),
                          f"the TTFT p{ttft_q:g}'s prefill collectives ({prefill} fabric operations "
                          f"a request, unseen events below {100 * tail:g} %)"))
    for knob, need, _ in needs:
        setattr(knobs, knob, max(getattr(knobs, knob), need))
    return needs


def tail_notes(knobs: Knobs, needs: List[Tuple[str, int, str]]) -> List[str]:
    """The plan's word on each tail it sized: told, or cut below what tells by the budget."""
    out = []
    for knob, need, what in needs:
        have = getattr(knobs, knob)
        if knob == "prefill_iterations" and not knobs.prefill_chunks:
            out.append(f"{what}: the budget left the prefill chunk out, so fit does not count "
                       "the prefill's communication (it says so as missing)")
            continue
        out.append(f"{what}: {have} measured, told from {need} (rule of three)" if have >= need
                   else f"{what}: the budget cut it to {have} of the {need} that tell: fit will "
                        "say CANNOT TELL unless a larger --budget is given")
    return out


def _fewer_groups(req: PlanRequest, sizes: ModelSizes) -> Callable[[Knobs], Optional[str]]:
    """Halves the TP / EP groups the rotated collectives measure (every group -> the first
    half of them ...), down to one; the plan's notes name the groups left out."""
    def step(k: Knobs) -> Optional[str]:
        scenario = build_scenario(req, sizes, k, "", [])
        counts = [group_count(t["roles"]["canaries"], req.cluster) for t in scenario["tests"]
                  if "groups" in t.get("roles", {})]
        if not counts:
            return None
        current = min(k.max_groups, max(counts)) if k.max_groups else max(counts)
        if current <= 1:
            return None
        k.max_groups = current // 2
        return (f"TP / MoE groups measured in turn: {current} -> {k.max_groups} per test (the "
                "plan's notes name the groups left out; fit cannot tell for them)")
    return step


def _sample_the_probes(cluster) -> Callable[[Knobs], Optional[str]]:
    """All-pairs -> rails, random rings and bisection, saying what those cannot see."""
    def step(k: Knobs) -> Optional[str]:
        if k.probes != ALL_PAIRS or cluster.ranks <= ALL_PAIRS_MAX_RANKS:
            return None
        k.probes = sampled_probes(cluster)
        return (f"the probes: {', '.join(k.probes)} instead of all-pairs, which the budget cannot "
                f"hold on {cluster.ranks} ranks: {SAMPLED_BLIND_SPOT}")
    return step


GROUPS_STEP = "fewer TP / EP groups"   # _fewer_groups, made per request in fit_budget

# The order the budget shrinks in: the diagnosis's probes first (all-pairs, where it was
# chosen beyond ALL_PAIRS_MAX_RANKS, to the sampled design), then what fit reads least
# (prefill chunks, short prompts), never below what a p99 needs; the rotated collectives'
# groups after GPCNeT's canaries (every group measured is what tells a slow host there).
SHRINK_STEPS = [
    _halve("latency_iterations", 10, "latency probe iterations"),
    _halve("bandwidth_iterations", 3, "bandwidth probe iterations"),
    _halve("prefill_iterations", P99_VALUES, "prefill-chunk collective iterations"),
    _drop("prefill_chunks", 0, "prefill chunk"),
    _drop("prompts", 1, "prompt length"),
    _halve("collective_iterations", P99_VALUES, "TP all-reduce / MoE iterations"),
    _drop("probes", 1, "probe test"),
    _switch_off("gpcnet", "GPCNeT's canary tests"),
    GROUPS_STEP,
    _drop("conditions", 2, "neighbour condition", last=True),
    _drop("decode_batches", 1, "decode batch"),
    _halve("kv_node_requests", 20, "KV requests per node and role (the rotated push)"),
    _halve("kv_requests", P99_VALUES, "KV requests"),
]


def fit_budget(req: PlanRequest, sizes: ModelSizes, knobs: Knobs, criteria_name: str,
               estimate: Callable[[dict], ListAnswer], max_tries: int = 64) -> Plan:
    """Shrinks `knobs` in SHRINK_STEPS order until the loader's estimate fits the budget;
    raises the memory limit (up to MEMORY_CAP_MIB) when only that refuses the plan."""
    shrunk: List[str] = []
    step_index = 0
    steps = [_sample_the_probes(req.cluster)] + [
        _fewer_groups(req, sizes) if s is GROUPS_STEP else s for s in SHRINK_STEPS]
    for _ in range(max_tries):   # bounded: every pass shrinks, raises a limit or ends
        notes: List[str] = []
        scenario = build_scenario(req, sizes, knobs, criteria_name, notes)
        answer = estimate(scenario)
        if answer.ok and answer.estimate_s <= req.budget_s:
            return Plan(req, sizes, knobs, answer, shrunk, notes, scenario, criteria_name)
        need = answer.memory_needed_mib
        if need and knobs.max_memory_mib < need <= MEMORY_CAP_MIB:
            knobs.max_memory_mib = int(math.ceil(need * 1.1 / 1024) * 1024)
            shrunk.append(f"max_memory_per_rank raised to {knobs.max_memory_mib // 1024} GiB "
                          f"(the KV pool needs {need} MiB per rank)")
            continue
        if need and need > MEMORY_CAP_MIB and len(knobs.prompts) > 1:
            shrunk.append(f"prompt length {knobs.prompts.pop()} left out (needs {need} MiB per rank)")
            continue
        if not answer.ok and not answer.over_budget:
            raise PlanError(f"the scenario loader refused the plan: {answer.error}")
        while step_index < len(steps):
            change = steps[step_index](knobs)
            if change:
                shrunk.append(change)
                break
            step_index += 1
        else:
            raise PlanError(f"no plan fits the budget of {format_duration(req.budget_s)}: the "
                            f"smallest is {smallest_estimate(answer)}; give a larger --budget", "--budget")
    raise PlanError("the plan did not settle within its bounded number of tries")
