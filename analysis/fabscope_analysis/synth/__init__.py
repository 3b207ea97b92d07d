"""Synthetic clusters: fabscope result files of any size, with planted faults and known truth.

For tests, benchmarks of the verdicts, and admins who want to see what their criteria
say about a fabric they describe. The files have the layout `fabscope run` writes
(docs/file-format.md); the reader and every analysis read them as real runs.

API::

    from fabscope_analysis.synth import Cluster, generate, read_truth

    truth = generate("x.h5", Cluster(hosts=64, gpus=8, leaves=8, pods=1),
                     noise="realistic", faults=["slow-recv:host12", "lossy:host3/mlx5_2"],
                     patterns=["all-pairs"], iterations=20, seed=3)
    truth["faults"]      # what was planted: one dict per fault (read_truth(path) reads it back)

generate(path, cluster, *, noise="realistic", faults=(), patterns=("all-pairs",),
         iterations=20, seed=1, fabric_seed=None, retest_worst=3, controls=None,
         budget_keep=1.0, conditions=("quiet",), plans=None, command="") -> truth dict

- cluster: Cluster(hosts, gpus=1, leaves=1, pods=1); rank = host x gpus + local rank;
  hosts named host0.. (zero-padded to the widest), NICs mlx5_<local>, leaves leaf<i>,
  pods pod<i> in /ranks.
- noise: a NoiseModel or a spec: presets "ideal", "realistic", "realistic-quiet",
  "bimodal", "shared-cpu", "hiccups" joined with '+', and FIGURE=VALUE overrides
  ("realistic+bimodal", "realistic,hiccup_rate=1e-3"); see synth.noise.
- faults: specs "KIND:TARGET[:VALUE][@load]" (synth.faults lists the kinds: slow-send,
  slow-recv, lossy, flapping, bad-pair, host-pair, slow-uplink, oversubscribed-uplink).
- patterns: any of all-pairs, rails, cross-rail, ring, bisection, hierarchical; each
  gives a latency test (8 B ping-pong) and a bandwidth test (1 MiB x window 4), the
  all-pairs ones followed by a serial retest of the `retest_worst` worst pairs and
  `controls` control pairs (default: as the driver draws them, as many as retested and at
  least 10, capped by the pairs left), flagged as the driver flags them.
  budget_keep < 1 thins every pattern to that share of its rounds (budget_* attributes).
  conditions: ("quiet",) or ("quiet", "alltoall") etc.: each test also measured under
  neighbour load; then, as the driver does, half the ranks (spread over the hosts) measure
  in every condition and the others make the load (congestors, impact_*, quiet_index).
  plans: a list of run.TestPlan instead, for full control.
- seed: the run (sample noise, ECMP collisions, run level); fabric_seed (default: seed):
  the fabric (host, NIC and pair effects). An A/A series: one fabric_seed, several seeds.
- The truth is a JSON root attribute `synthetic_truth` of the file: generator, cluster,
  noise figures, seeds, run level, ECMP-collided pairs, and per fault: fault, spec,
  component (nic, host, gpu-pair, host-pair, leaf), subject, side (send, receive,
  both), hosts, ranks, nics, leaf, value, when (always or load).

Noise figures and fault kinds are documented in docs/analysis.md ("Synthetic clusters").
"""

from __future__ import annotations

import json
from typing import Dict, Optional, Sequence, Union

import h5py
import numpy as np

from .faults import Fault, parse_fault, parse_faults, effects_of
from .fabric import Fabric
from .noise import NoiseModel, PRESETS, noise_model
from .run import TestPlan, measure, measure_retest, standard_plans
from .topology import PATTERNS, Cluster, SynthError, layout_of, rank_labels, spread_half
from . import writer

__all__ = ["Cluster", "NoiseModel", "Fault", "TestPlan", "SynthError", "PATTERNS", "PRESETS",
           "generate", "read_truth", "noise_model", "parse_fault", "standard_plans"]

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
