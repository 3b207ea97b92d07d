"""generate() and read_truth(): a synthetic run written to a file, and its ground truth
read back (the package's API; see synth/__init__.py)."""

from __future__ import annotations

import json
from typing import Dict, Optional, Sequence, Union

import h5py
import numpy as np

from .faults import Fault, effects_of, parse_fault
from .fabric import Fabric
from .noise import NoiseModel, noise_model
from .run import TestPlan, measure, measure_retest, standard_plans
from .topology import Cluster, SynthError, layout_of, rank_labels, spread_half
from . import writer

CONDITIONS = ("quiet", "alltoall", "incast", "bidirectional", "copy")  # src/conditions
SHARED_CPU_EFFECT = ("{n} ranks may run on only {cpus} CPU(s) of one machine: a waiting rank holds "
                     "a CPU another needs, so times include the kernel scheduler's slices "
                     "(milliseconds) unless waits yield, and even then latency resolution is "
                     "bounded by the wake-up time")


def _scenario_text(plans: Sequence[TestPlan]) -> str:
    lines = ["name: synthetic", "tests:"]
    for p in plans:
        lines += [f"  - name: {p.name}", f"    kind: {p.kind}", f"    pattern: {p.pattern}",
                  f"    sizes: [{p.size}]", f"    iterations: {p.iterations}"]
    return "\n".join(lines) + "\n"


def generate(path, cluster: Cluster, *, noise: Union[str, NoiseModel] = "realistic",
             faults: Sequence[Union[str, Fault]] = (), patterns: Sequence[str] = ("all-pairs",),
             iterations: int = 20, seed: int = 1, fabric_seed: Optional[int] = None,
             retest_worst: int = 3, controls: Optional[int] = None, budget_keep: float = 1.0,
             conditions: Sequence[str] = ("quiet",), plans: Optional[Sequence[TestPlan]] = None,
             command: str = "") -> Dict[str, object]:
    """Write a synthetic run to `path`; returns its ground truth (also stored in the file)."""
    model = noise_model(noise) if isinstance(noise, str) else noise
    planted = [f if isinstance(f, Fault) else parse_fault(f, cluster) for f in faults]
    if iterations < 1:
        raise SynthError(f"iterations {iterations}: expected at least 1")
    if list(conditions)[:1] != ["quiet"] or not set(conditions) <= set(CONDITIONS):
        raise SynthError(f"conditions {', '.join(conditions)}: expected quiet first, then any of "
                         f"{', '.join(CONDITIONS[1:])}")
    plans = list(plans) if plans is not None else standard_plans(
        patterns, iterations, retest_worst, controls, budget_keep, conditions)
    fabric_seed = seed if fabric_seed is None else fabric_seed
    fabric = Fabric(cluster, model, effects_of(planted, cluster), fabric_seed, seed)
    truth = {"generator": "fabscope_analysis.synth",
             "cluster": {"hosts": cluster.hosts, "gpus": cluster.gpus,
                         "leaves": cluster.leaves, "pods": cluster.pods},
             "noise": noise if isinstance(noise, str) else "custom",
             "noise_figures": model.describe(), "seed": seed, "fabric_seed": fabric_seed,
             "run_level": fabric.run_level, "bimodal_high": fabric.bimodal_high,
             "ecmp_collided_pairs": fabric.ecmp_pairs,
             "faults": [f.truth(cluster) for f in planted]}
    rng = np.random.default_rng([seed, 0x5a])
    shared = model.slice_rate > 0
    with h5py.File(str(path), "w") as f:
        writer.root_attributes(f, nranks=cluster.ranks, nhosts=cluster.hosts, seed=seed,
                               scenario=_scenario_text(plans), truth=truth, waits_yield=shared,
                               command=command or "python3 -m fabscope_analysis synth")
        writer.write_ranks(f, rank_labels(cluster), cluster.gpus, rng)
        writer.write_validity(f, [("*", "oversubscribed", float(cluster.ranks), 2.0,
                                   SHARED_CPU_EFFECT.format(n=cluster.ranks, cpus=2))]
                              if shared else [])
        _write_tests(f, fabric, plans, rng, seed)
    return truth


def _time_stats(samples: np.ndarray) -> tuple:
    headline = samples[(samples["flags"] & 0xff00) == 0]
    dur = (headline["t_done_ns"] - headline["t_post_ns"]).astype(np.float64)
    return (float(dur.mean()), float(np.percentile(dur, 99))) if len(dur) else (np.nan, np.nan)


def _congested(attrs: dict, samples: np.ndarray, quiet: Optional[tuple], quiet_index: int,
               congestors: np.ndarray, model: NoiseModel) -> None:
    """The attributes of an instance under neighbour load (docs/file-format.md)."""
    attrs["congestors"] = ",".join(str(r) for r in congestors)
    attrs["load"] = (f"synthetic neighbour traffic of {len(congestors)} congestors: cross-leaf "
                     f"pairs x{model.background_factor:g}")
    attrs["load_bytes"] = 1 << 20
    attrs["load_gbps"] = 20.0 * len(congestors)
    if quiet is not None:
        mean, p99 = _time_stats(samples)
        attrs["quiet_index"] = quiet_index
        attrs["impact_mean"], attrs["impact_p99"] = mean / quiet[0], p99 / quiet[1]


def _write_tests(f: h5py.File, fabric: Fabric, plans: Sequence[TestPlan],
                 rng: np.random.Generator, seed: int) -> None:
    c = fabric.cluster
    nics = rank_labels(c)["nic"]
    words = rng.integers(1 << 30, 1 << 40, (c.ranks, 2))
    clock, index = writer.T0 + 5_000_000, 0
    for plan in plans:
        loaded = [x for x in plan.conditions if x != "quiet"]
        canaries, congestors = spread_half(c) if loaded else (np.arange(c.ranks), np.arange(0))
        lay = layout_of(c, canaries)
        quiet = {}
        for condition in plan.conditions:
            passes = [("parallel", None)]
            while passes:
                pass_, parent = passes.pop(0)
                if pass_ == "parallel":
                    attrs, samples, matrix, end, data = measure(fabric, plan, index, clock, rng,
                                                                lay, condition)
                    if plan.pattern == "all-pairs" and plan.retest_worst > 0:
                        passes.append(("serial-retest", (index, data, attrs["description"])))
                else:
                    attrs, samples, matrix, end, _ = measure_retest(
                        fabric, plan, parent[0], parent[1], clock, rng, seed, parent[2], condition)
                attrs["canaries"] = ",".join(str(r) for r in canaries)
                if condition == "quiet":
                    quiet[pass_] = (index, _time_stats(samples))
                else:
                    q_index, q_stats = quiet.get(pass_, (-1, None))
                    _congested(attrs, samples, q_stats, q_index, congestors, fabric.noise)
                writer.write_instance(f, index, attrs, samples, matrix,
                                      writer.counter_table(samples, nics, words))
                index, clock = index + 1, end + 2_000_000
        f.flush()
    writer.close_run(f, clock)


def read_truth(path) -> Dict[str, object]:
    """The ground truth a synthetic file carries ({} for a file `fabscope run` wrote)."""
    with h5py.File(str(path), "r") as f:
        text = f.attrs.get(writer.TRUTH_ATTRIBUTE)
    if text is None:
        return {}
    return json.loads(text.decode() if isinstance(text, bytes) else text)
