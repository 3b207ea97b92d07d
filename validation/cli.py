"""python3 -m validation run ...: one simulated run, written as a fabscope result file."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from typing import List, Optional, Tuple

import numpy as np

from . import fabric as fabric_mod
from . import faults as faults_mod
from .fabric import Shape, WorldError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m validation")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="simulate one all-pairs run and write its result file")
    r.add_argument("--hosts", type=int, default=16)
    r.add_argument("--gpus", type=int, default=8, help="GPUs (and NICs) a host")
    r.add_argument("--topology", choices=["leaf-spine", "rail"], default="leaf-spine")
    r.add_argument("--hosts-per-leaf", type=int, default=4, help="leaf-spine: hosts a leaf")
    r.add_argument("--rail-group", type=int, default=16, help="rail: hosts a rail group")
    r.add_argument("--uplinks", type=int, default=8, help="k uplinks a leaf (and k spines)")
    r.add_argument("--oversubscription", type=float, default=1.0)
    r.add_argument("--nic-gbps", type=float, default=50.0, help="GB/s a NIC port (50: 400 Gb/s)")
    r.add_argument("--software-us", type=float, default=0.5,
                   help="mean software time of one message end, us (drawn per host)")
    r.add_argument("--fault", action="append", default=[], metavar="NAME:VALUE[@TARGET]",
                   help=f"a planted fault, repeatable; one of {', '.join(faults_mod.KINDS)}")
    r.add_argument("--bursts", type=float, default=0.0, metavar="SHARE",
                   help="another tenant's bursts on this share of (round, inter-switch link) slots")
    r.add_argument("--burst-ms", default="0.2:1.5", metavar="LO:HI",
                   help="a burst lasts uniform in [LO, HI] ms (default 0.2:1.5)")
    r.add_argument("--drift", action="store_true", help="NIC speed and host software time wander")
    r.add_argument("--pair-tail", default="", metavar="SPREAD[:DF]",
                   help="healthy pair effects, Student-t with DF (default 3) degrees of freedom "
                        "scaled to a log sd of SPREAD")
    r.add_argument("--hiccups", type=float, default=1e-4, help="OS hiccups a sample")
    r.add_argument("--labels", default="true", help="leaf labels in /ranks: true, missing, wrong:S")
    r.add_argument("--retry-ms", type=float, default=1.0,
                   help="the transport's retransmission timeout: a message that meets a port "
                        "down is sent again this long after (an RC queue pair's 4.096 us x "
                        "2^timeout, 67 ms at timeout 14; UCX's default 1000)")
    r.add_argument("--iterations", type=int, default=20)
    r.add_argument("--retest-worst", type=int, default=3)
    r.add_argument("--retest-visits", type=int, choices=[1, 2], default=2,
                   help="visits of each retested pair (2: as the runner; 1: as runners before "
                        "the second visit)")
    r.add_argument("--seed", type=int, required=True, help="draws the fabric, the faults' targets, the noise")
    r.add_argument("--noise-seed", type=int, default=None,
                   help="draws the run apart from its fabric: software times, hiccups, bursts, "
                        "drift and the flows' ECMP hashes (default: --seed); the same --seed "
                        "under another --noise-seed is the same fabric measured again")
    r.add_argument("--out", required=True, help="the result file (.h5); the truth goes beside it")
    r.add_argument("--quiet", action="store_true")
    return p


def _pair_tail(text: str):
    """(log sd, degrees of freedom) of --pair-tail SPREAD[:DF]; (0, 3) when not given."""
    if not text:
        return 0.0, 3.0
    spread, _, df = text.partition(":")
    try:
        value, dof = float(spread), float(df or 3.0)
    except ValueError:
        raise WorldError(f"pair-tail {text!r}: expected SPREAD[:DF], e.g. 0.1:3") from None
    if not (0 < value < 1 and dof > 2):
        raise WorldError(f"pair-tail {text!r}: expected a spread in (0, 1) and DF above 2 "
                         "(a finite spread)")
    return value, dof


def _burst_s(text: str) -> Tuple[float, float]:
    """--burst-ms LO:HI -> (lo, hi) in seconds."""
    try:
        lo, hi = (float(x) for x in text.split(":"))
    except ValueError:
        lo = hi = float("nan")
    if not 0 < lo <= hi:
        raise WorldError(f"burst-ms {text!r}: expected LO:HI in ms, 0 < LO <= HI (as 0.2:1.5)")
    return lo * 1e-3, hi * 1e-3


def run(args) -> int:
    from .resultfile import write, truth_path
    from .simulate import Noise, Test, World

    shape = Shape(hosts=args.hosts, gpus=args.gpus, topology=args.topology,
                  hosts_per_leaf=args.hosts_per_leaf, rail_group=args.rail_group,
                  uplinks=args.uplinks, oversubscription=args.oversubscription,
                  nic_gbps=args.nic_gbps, software_s=args.software_us * 1e-6)
    if args.iterations < 3:
        raise WorldError(f"iterations {args.iterations}: expected at least 3")
    if not 0 < args.retry_ms <= 60e3:
        raise WorldError(f"retry-ms {args.retry_ms}: expected a timeout in (0, 60000] ms")
    if not 0 <= args.bursts < 1:
        raise WorldError(f"bursts {args.bursts}: expected a share in [0, 1)")
    f = fabric_mod.build(shape, args.seed)
    rng = np.random.default_rng([args.seed, 0xFA17])
    planted = faults_mod.plant(f, args.fault, rng)
    leaf, label_truth = fabric_mod.labels(f, args.labels, rng)
    spread, df = _pair_tail(args.pair_tail)
    noise = Noise(hiccup_rate=args.hiccups, bursts=args.bursts, burst_s=_burst_s(args.burst_ms),
                  drift=args.drift, pair_spread=spread, pair_df=df)
    tests = [Test("latency", 8, 1, args.iterations, args.retest_worst, args.retest_visits),
             Test("bandwidth", 1 << 20, 4, args.iterations, args.retest_worst, args.retest_visits)]
    started = time.time()
    noise_seed = args.seed if args.noise_seed is None else args.noise_seed
    f.flow_salt = noise_seed
    world = World(f, planted, noise, noise_seed, retry_s=args.retry_ms / 1e3)
    instances = world.run(tests)
    command = "python3 -m validation " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    truth = {"world": "validation-simgrid", "seed": args.seed, "noise_seed": noise_seed,
             "cluster": {"hosts": shape.hosts, "gpus": shape.gpus, "topology": shape.topology,
                         "leaves": f.leaves, "uplinks": shape.uplinks,
                         "leaf_of_host": {fabric_mod.host_name(h): fabric_mod.leaf_name(
                             int(f.leaf_of_rank[h * shape.gpus])) for h in range(shape.hosts)}
                         if shape.topology == "leaf-spine" else {}},
             "noise": {"pair_tail": {"spread": spread, "df": df},
                       "bursts": args.bursts, "burst_ms": args.burst_ms, "drift": args.drift,
                       "hiccups": args.hiccups,
                       **label_truth},
             "transport": {"retry_ms": args.retry_ms},
             "faults": planted.truth, "events": world.events}
    write(args.out, f, leaf, instances, noise_seed, command, truth)
    if not args.quiet:
        print(f"{args.out}: {f.ranks} ranks, {f.leaves} leaves, {len(instances)} instances, "
              f"simulated {instances[-1].t_end:.3f} s in {time.time() - started:.1f} s; "
              f"truth in {truth_path(args.out)}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return run(args)
    except WorldError as exc:
        print(f"validation: {exc}", file=sys.stderr)
        return 2
