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

from .faults import Fault, parse_fault
from .make import generate, read_truth
from .noise import NoiseModel, PRESETS, noise_model
from .run import TestPlan, standard_plans
from .topology import PATTERNS, Cluster, SynthError

__all__ = ["Cluster", "NoiseModel", "Fault", "TestPlan", "SynthError", "PATTERNS", "PRESETS",
           "generate", "read_truth", "noise_model", "parse_fault", "standard_plans"]

