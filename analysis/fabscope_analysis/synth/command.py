"""`python3 -m fabscope_analysis synth`: write synthetic runs of a cluster you describe."""

from __future__ import annotations

import argparse
import json
import sys

from .faults import KINDS
from .make import generate
from .noise import PRESETS
from .topology import PATTERNS, Cluster, SynthError

EXIT_OK, EXIT_USAGE = 0, 2


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


def add_parser(sub) -> None:
    p = sub.add_parser(
        "synth", help="write a synthetic run of a cluster you describe, with planted faults "
                      "(to see what diagnose, accept and compare say about it)",
        description="Writes fabscope result files of a simulated cluster: all-pairs and the "
                    "scale patterns, latency and bandwidth, with a noise model and planted "
                    "faults; the ground truth is stored in the file (docs/analysis.md, "
                    "'Synthetic clusters').")
    p.add_argument("-o", "--output", required=True, metavar="OUT.h5",
                   help="file to write; with --runs N, {run} in the name is the run number "
                        "(else -1, -2, ... before .h5)")
    p.add_argument("--hosts", type=_positive, required=True)
    p.add_argument("--gpus", type=_positive, default=1, help="GPUs (ranks, NICs) per host (1)")
    p.add_argument("--leaves", type=_positive, default=1, help="leaf switches, dividing the hosts (1)")
    p.add_argument("--pods", type=_positive, default=1, help="pods, dividing the leaves (1)")
    p.add_argument("--noise", default="realistic",
                   help=f"noise model: {', '.join(PRESETS)}, joined with +, and FIGURE=VALUE "
                        "(default realistic)")
    p.add_argument("--plant", action="append", default=[], metavar="KIND:TARGET[:VALUE][@load]",
                   help=f"a fault (repeatable); KIND: {', '.join(KINDS)}")
    p.add_argument("--pattern", action="append", choices=PATTERNS, metavar="PATTERN",
                   help=f"test pattern (repeatable): {', '.join(PATTERNS)} (default all-pairs)")
    p.add_argument("--iterations", type=_positive, default=20, help="samples per pair (20)")
    p.add_argument("--retest-worst", type=int, default=3, metavar="N",
                   help="all-pairs: the worst N pairs retested alone (3; 0: no retest)")
    p.add_argument("--controls", type=int, metavar="N",
                   help="control pairs of the retest (default: as the driver draws them: as "
                        "many as retested, at least 10, capped by the pairs left)")
    p.add_argument("--budget-keep", type=float, default=1.0, metavar="SHARE",
                   help="a time budget keeps this share of each pattern's rounds (1.0)")
    p.add_argument("--condition", action="append", default=[], metavar="LOAD",
                   help="also measure each test under neighbour load (alltoall, incast, "
                        "bidirectional, copy; repeatable): half the ranks then make the load")
    p.add_argument("--seed", type=int, default=1, help="the run's seed (1)")
    p.add_argument("--fabric-seed", type=int,
                   help="the fabric's seed (default: --seed); several runs of one fabric "
                        "share it")
    p.add_argument("--runs", type=_positive, default=1,
                   help="runs of the same fabric, seeds --seed, --seed+1, ... (1)")
    p.add_argument("--truth", action="store_true", help="print what was planted as JSON")
    p.set_defaults(func=run_synth)


def _paths(output: str, runs: int):
    if runs == 1:
        return [output]
    if "{run}" in output:
        return [output.replace("{run}", str(i + 1)) for i in range(runs)]
    stem = output[:-3] if output.endswith(".h5") else output
    return [f"{stem}-{i + 1}.h5" for i in range(runs)]


def run_synth(args) -> int:
    try:
        cluster = Cluster(args.hosts, args.gpus, args.leaves, args.pods)
        fabric_seed = args.seed if args.fabric_seed is None else args.fabric_seed
        command = "python3 -m fabscope_analysis synth " + " ".join(sys.argv[2:])
        for i, path in enumerate(_paths(args.output, args.runs)):
            truth = generate(path, cluster, noise=args.noise, faults=args.plant,
                             patterns=args.pattern or ["all-pairs"], iterations=args.iterations,
                             seed=args.seed + i, fabric_seed=fabric_seed,
                             retest_worst=args.retest_worst, controls=args.controls,
                             budget_keep=args.budget_keep,
                             conditions=["quiet"] + args.condition, command=command)
            planted = "; ".join(f"{f['fault']} {f['subject']}" for f in truth["faults"]) or "nothing"
            print(f"wrote {path}: {cluster.hosts} hosts x {cluster.gpus} GPUs ({cluster.ranks} "
                  f"ranks) in {cluster.leaves} leaves, {cluster.pods} pod(s); noise {args.noise}; "
                  f"seed {args.seed + i}, fabric seed {fabric_seed}; planted: {planted}")
            if args.truth:
                print(json.dumps(truth, indent=1, sort_keys=True))
    except SynthError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK
