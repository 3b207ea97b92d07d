"""A synthetic run, instance by instance, as the driver measures and records it.

Parallel pass: the pattern's rounds one after another, every pair of a round at
once (under load), each pair's iterations back to back. All-pairs passes are
followed by their serial retest: the worst pairs against the median of the pair
medians, with control pairs (as many, at least 10: suite::controlCount) drawn from
the middle of the ranking, away from the suspects' ranks
(src/topology/PairSchedule.cpp controlPairs), measured one at a time, alone, the
controls flagged (bit 10).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import topology
from .fabric import Fabric
from .topology import Cluster, SynthError
from .writer import SAMPLE_DTYPE

FLAG_CONTROL_PAIR = 1 << 10
# The driver's kMinControlPairs (src/topology/PairSchedule.hpp): a retest measures as many
# control pairs as retested ones and at least this many, capped by the pairs left.
MIN_CONTROL_PAIRS = 10
GAP_NS = {"latency": 300, "bandwidth": 1000}   # between two iterations of a pair
ROUND_GAP_NS = 20_000                          # the round's synchronisation


@dataclass(frozen=True)
class TestPlan:
    """One test of the synthetic scenario (one instance, plus its retest)."""
    __test__ = False  # not a pytest class despite the name
    kind: str = "latency"           # latency (8 B ping-pong) or bandwidth (one-way, windowed)
    pattern: str = "all-pairs"
    iterations: int = 20
    size: int = 8
    window: int = 1
    retest_worst: int = 3           # all-pairs only; 0: no retest
    controls: Optional[int] = None  # control pairs of the retest; None: as the driver draws
    budget_keep: float = 1.0        # share of the pattern's rounds a time budget keeps
    draws: int = 4                  # rings, splits, matchings of the random patterns
    pattern_seed: int = 1
    conditions: Tuple[str, ...] = ("quiet",)  # more than quiet: half the ranks make the load

    @property
    def name(self) -> str:
        short = "ap" if self.pattern == "all-pairs" else self.pattern
        return f"{short}-{self.kind}"

    @property
    def sample_bytes(self) -> int:
        return self.size * self.window


def standard_plans(patterns: Sequence[str], iterations: int = 20, retest_worst: int = 3,
                   controls: Optional[int] = None, budget_keep: float = 1.0,
                   conditions: Sequence[str] = ("quiet",)) -> List[TestPlan]:
    """A latency (8 B) and a bandwidth (1 MiB x window 4) test per pattern."""
    plans = []
    for pattern in patterns:
        if pattern not in topology.PATTERNS:
            raise SynthError(f"unknown pattern {pattern!r} (expected one of "
                             f"{', '.join(topology.PATTERNS)})")
        common = dict(pattern=pattern, iterations=iterations, retest_worst=retest_worst,
                      controls=controls, budget_keep=budget_keep, conditions=tuple(conditions))
        plans.append(TestPlan(kind="latency", size=8, window=1, **common))
        plans.append(TestPlan(kind="bandwidth", size=1 << 20, window=4, **common))
    return plans


def _schedule(plan: TestPlan, lay: topology.Layout, index: int):
    """(initiator, responder, round) arrays (world ranks) of the plan's pattern over the
    measuring ranks, its rounds, budget attributes."""
    both = plan.kind != "latency"  # a ping-pong measures a pair once; one-way kinds each way
    if plan.pattern == "all-pairs":
        s, d, round_of = topology.all_pairs_arrays(lay.n, both)
    else:
        s, d, round_of = topology.flatten(
            topology.schedule_of(plan.pattern, lay, both, plan.draws, plan.pattern_seed))
    s, d = lay.ranks[s], lay.ranks[d]
    extra: Dict[str, object] = {}
    rounds = int(round_of.max()) + 1 if len(round_of) else 0
    if not 0 < plan.budget_keep <= 1:
        raise SynthError(f"budget keep {plan.budget_keep}: expected a share in (0, 1]")
    keep = 1 + int(np.floor((rounds - 1) * plan.budget_keep))
    if keep < rounds:
        kept = np.array(topology.sample_rounds(rounds, keep, index + 1))
        renumber = np.full(rounds, -1)
        renumber[kept] = np.arange(keep)
        mask = renumber[round_of] >= 0
        left = int(len(s) - mask.sum())
        s, d, round_of = s[mask], d[mask], renumber[round_of[mask]]
        extra["budget_left_out"] = (f"budget (synthetic, keep {plan.budget_keep:g}): kept {keep} of "
                                    f"{rounds} rounds, a seeded sample; left out {rounds - keep} "
                                    f"rounds, {left} pairs")
        extra["rounds_left_out"] = rounds - keep
        extra["pairs_left_out"] = left
    return (s, d, round_of), min(keep, rounds), extra


def _description(plan: TestPlan, c: Cluster, rounds: int) -> str:
    seed = f", seed {plan.pattern_seed}"
    text = {
        "all-pairs": f"all-pairs, {rounds} rounds, every rank busy" + (
            f"; then the {plan.retest_worst} worst pairs serially" if plan.retest_worst else ""),
        "rails": f"rails: all-pairs within each local rank across {c.hosts} nodes, {rounds} rounds",
        "cross-rail": f"cross-rail: {plan.draws} random matchings across nodes and rails{seed}, "
                      f"{rounds} rounds",
        "ring": f"ring: {plan.draws} random rings{seed}, {rounds} rounds",
        "bisection": f"bisection: {plan.draws} random splits in two halves{seed}, {rounds} rounds",
        "hierarchical": f"hierarchical: all-pairs within each leaf, then {plan.draws} random "
                        f"matchings between them{seed}, {rounds} rounds"}[plan.pattern]
    return text + (f", window {plan.window}" if plan.window > 1 else "")


def _samples(s, d, dur, start_ns, plan: TestPlan, c: Cluster, round_of=None,
             flags=None) -> Tuple[np.ndarray, int]:
    """Samples table of pairs (s, d) with durations dur (pairs x iterations), rank-ordered."""
    gap = GAP_NS[plan.kind]
    step = dur + gap
    total = step.sum(axis=1)
    if round_of is None:  # one pair at a time
        round_of = np.arange(len(s))
    rounds = int(round_of.max()) + 1 if len(s) else 0
    round_time = np.zeros(rounds)
    np.maximum.at(round_time, round_of, total)
    round_start = start_ns + np.concatenate([[0.0], np.cumsum(round_time + ROUND_GAP_NS)])
    post = round_start[round_of][:, None] + np.cumsum(step, axis=1) - step
    order = np.argsort(s, kind="stable")  # gathered by rank, each rank's in time order
    iters = dur.shape[1]
    out = np.zeros(len(s) * iters, dtype=SAMPLE_DTYPE)
    out["rank"] = np.repeat(s[order], iters)
    out["peer"] = np.repeat(d[order], iters)
    out["iter"] = np.tile(np.arange(iters), len(s))
    out["bytes"] = plan.sample_bytes
    out["t_post_ns"] = post[order].ravel().astype(np.int64)
    out["t_done_ns"] = out["t_post_ns"] + np.maximum(dur[order].ravel(), 1).astype(np.int64)
    out["level"] = np.repeat(c.levels(s[order], d[order]), iters)
    if flags is not None:
        out["flags"] = np.repeat(flags[order], iters)
    end = int(round_start[-1]) if rounds else start_ns
    return out, end


def pair_matrix(s, d, dur, plan: TestPlan, n: int) -> np.ndarray:
    """The driver's pair matrix: median ns (latency, mirrored) or GB/s per pair."""
    med = np.median(dur, axis=1)
    m = np.full((n, n), np.nan)
    if plan.kind == "latency":
        m[s, d] = m[d, s] = med / 2.0
    else:
        m[s, d] = plan.sample_bytes / med
    return m


def control_pairs(ranked: np.ndarray, retested: int, count: int, seed: int) -> np.ndarray:
    """PairSchedule.cpp's controlPairs: from the middle of the ranking, off the suspects."""
    n = len(ranked)
    if count <= 0 or retested >= n:
        return ranked[:0]
    suspects = np.unique(ranked[:retested].ravel())
    rest = np.arange(retested, n)
    touching = np.isin(ranked[rest, 0], suspects) | np.isin(ranked[rest, 1], suspects)
    positions = rest[~touching]
    if len(positions) < count:
        positions = np.concatenate([positions, rest[touching]])
    middle = (n - 1) / 2.0
    positions = positions[np.argsort(np.abs(positions - middle), kind="stable")]
    pool = int(np.count_nonzero((4 * positions >= n) & (4 * positions < 3 * n)))
    pool = min(len(positions), max(pool, count))
    positions = list(np.sort(positions[:pool]))
    state = [seed & topology.MASK64]
    take = min(pool, count)
    for i in range(take):
        j = i + topology._next(state) % (pool - i)
        positions[i], positions[j] = positions[j], positions[i]
    return ranked[positions[:take]]


def control_count(retested: int) -> int:
    """suite::controlCount: as many controls as retested pairs, at least MIN_CONTROL_PAIRS
    (control_pairs caps it by the pairs left once the retested ones are taken out)."""
    return max(int(retested), MIN_CONTROL_PAIRS)


def retest_choice(s, d, dur, plan: TestPlan, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """(worst pairs, control pairs), each as an array of (initiator, responder)."""
    med = np.median(dur, axis=1)
    badness = med / np.median(med)
    order = np.argsort(-badness, kind="stable")
    ranked = np.stack([s[order], d[order]], axis=1)
    k = min(plan.retest_worst, len(ranked))
    count = control_count(k) if plan.controls is None else plan.controls
    return ranked[:k], control_pairs(ranked, k, count, seed)


def measure(fabric: Fabric, plan: TestPlan, index: int, start_ns: int,
            rng: np.random.Generator, lay: topology.Layout, condition: str = "quiet"):
    """The parallel pass: (attributes, samples, pair matrix or None, end ns, pass data)."""
    c = fabric.cluster
    (s, d, round_of), rounds, extra = _schedule(plan, lay, index)
    dur = fabric.durations(s, d, plan.iterations, plan.kind, plan.sample_bytes, True, rng,
                           background=condition != "quiet")
    samples, end = _samples(s, d, dur, start_ns, plan, c, round_of)
    attrs = _attributes(plan, "parallel", start_ns, end, _description(plan, c, rounds))
    attrs["condition"] = condition
    attrs.update(extra)
    matrix = pair_matrix(s, d, dur, plan, c.ranks) if plan.pattern == "all-pairs" else None
    return attrs, samples, matrix, end, (s, d, dur)


def measure_retest(fabric: Fabric, plan: TestPlan, parent: int, passed, start_ns: int,
                   rng: np.random.Generator, seed: int, description: str,
                   condition: str = "quiet"):
    """The serial retest of `parent`: (attributes, samples, pair matrix, end ns, choice)."""
    c = fabric.cluster
    worst, controls = retest_choice(*passed, plan, seed ^ (parent + 1) * 0x9e3779b9)
    pairs = []
    for i in range(max(len(worst), len(controls))):  # alternated, as retestSchedule
        pairs += [(tuple(worst[i]), 0)] if i < len(worst) else []
        pairs += [(tuple(controls[i]), FLAG_CONTROL_PAIR)] if i < len(controls) else []
    s = np.array([p[0][0] for p in pairs], dtype=np.int64)
    d = np.array([p[0][1] for p in pairs], dtype=np.int64)
    flags = np.array([p[1] for p in pairs], dtype=np.uint32)
    dur = fabric.durations(s, d, plan.iterations, plan.kind, plan.sample_bytes, False, rng,
                           background=condition != "quiet")
    samples, end = _samples(s, d, dur, start_ns, plan, c, None, flags)
    attrs = _attributes(plan, "serial-retest", start_ns, end, description, retest_of=parent)
    attrs["condition"] = condition
    headline = flags == 0
    matrix = pair_matrix(s[headline], d[headline], dur[headline], plan, c.ranks)
    return attrs, samples, matrix, end, (worst, controls)


def _attributes(plan: TestPlan, pass_: str, start: int, end: int, description: str,
                retest_of: int = -1) -> Dict[str, object]:
    latency = plan.kind == "latency"
    size = f"{plan.size}B" if plan.size < 1024 else f"{plan.size >> 10}KiB"
    return {"name": plan.name, "kind": plan.kind, "case": f"{plan.name}/{size}",
            "condition": "quiet", "transport": "mpi", "memory": "host",
            "pattern": plan.pattern, "pass": pass_, "bytes": plan.size, "window": plan.window,
            "iterations": plan.iterations, "warmup": 10, "timeout_s": 600.0,
            "metric": "latency" if latency else "bandwidth",
            "sample_divisor": 2 if latency else 1, "error": "", "t_start_ns": start,
            "t_end_ns": end, "retest_of": retest_of, "canaries": "", "congestors": "",
            "placement": "spread", "size_formula": "", "description": description,
            **({} if latency else {"receive_slices": plan.window}), "status": "passed"}
