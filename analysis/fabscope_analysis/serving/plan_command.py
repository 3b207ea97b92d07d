"""`plan --model M --tp N --ranks R --budget 30m --slo ... --output plan.yaml`: the scenario
that measures what `fit` needs, within a time budget, with the estimate printed first.

Exit codes: 0 written; 2 bad usage (the message names the option), a model or layout the
binary refuses, or a budget no plan fits.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import List

import yaml

from .plan import CONGESTED, Cluster, Knobs, Plan, PlanRequest, build_scenario, criteria_text, \
    fit_arguments, probes_for, scenario_text
from .plan_budget import fit_budget, size_for_tails, tail_notes
from .plan_paths import GPU, PATH_MODES, choose_paths
from .calibrate import (DEFAULT_WINDOW, calibrate, calibration_scenario, estimate_words, gpu_path_probes,
                        probe_window)
from .plan_list import PlanError, fabscope_binary, format_duration, layout_from_topology, \
    parse_duration_s, parse_model_listing, parse_scenario_listing, run_list
from ..verdict import CRITERIA_DIR
from .placement_command import add_parser as add_placement_parser
from .slo import SloError, parse_slo_text

EXIT_WRITTEN, EXIT_USAGE = 0, 2
CONDITIONS = ("quiet",) + CONGESTED


def add_parser(sub) -> None:
    p = sub.add_parser("plan", help="write the scenario that measures what fit needs for a model "
                                    "on this cluster, within a time budget (estimate printed)")
    p.add_argument("--model", required=True, help="model preset (fabscope list --model)")
    p.add_argument("--tp", type=int, default=8, help="tensor parallelism (default 8)")
    p.add_argument("--ep", type=int, help="expert parallelism (models with experts; default: "
                                          "all ranks)")
    p.add_argument("--pp", type=int, default=1, help="pipeline parallelism: stages per replica "
                                                     "(default 1)")
    p.add_argument("--dp-attention", action="store_true",
                   help="attention data parallel (models with experts, --tp 1): no TP all-reduce")
    p.add_argument("--nodes-per-nvlink-domain", type=int, default=1,
                   help="nodes sharing one NVLink domain (default 1); groups inside a domain "
                        "are not measured")
    p.add_argument("--ranks", type=int, required=True, help="ranks of the run (one per GPU)")
    p.add_argument("--ranks-per-node", type=int, default=8, help="ranks per node (default 8)")
    p.add_argument("--nodes-per-leaf", type=int, default=0, help="nodes under one leaf switch")
    p.add_argument("--leaves-per-pod", type=int, default=0, help="leaf switches in one pod")
    p.add_argument("--topology", metavar="FILE", help="topology file (docs/inventory.md): nodes "
                                                      "per leaf and leaves per pod counted from it")
    p.add_argument("--budget", default="30m", help="time budget of the run (default 30m)")
    p.add_argument("--slo", required=True, help="objectives as fit takes them: "
                                                "itl_p99=50ms,ttft_p99=2s,...")
    p.add_argument("--conditions", default="quiet,incast,bidirectional,copy",
                   help="neighbour conditions, quiet first (quiet, incast, alltoall, bidirectional, "
                        "copy; default quiet,incast,bidirectional,copy)")
    p.add_argument("--decode-batch", default="1,32", help="decode batches (default 1,32; fit "
                                                          "judges the largest)")
    p.add_argument("--prefill-chunk", default="2048", help="prefill chunks in tokens whose TP "
                                                           "all-reduce is measured (default 2048; "
                                                           "'none' for none)")
    p.add_argument("--prompt", default="2048,8192", help="prompt lengths whose KV moves "
                                                         "(default 2048,8192; fit judges the largest)")
    p.add_argument("--paths", default="auto", choices=PATH_MODES,
                   help="the serving tests' data path: gpu (NCCL on GPU memory, KV GPU-direct), "
                        "host (MPI through host memory, a stand-in), auto (default: gpu when "
                        "'fabscope inventory' on this host lists a GPU and the binary has NCCL)")
    p.add_argument("--require-gpu-paths", action="store_true",
                   help="refuse (exit 2) a plan over host memory; fit then refuses a file "
                        "measured over it")
    p.add_argument("--calibration-probe", metavar="YAML",
                   help="write the short probe of the cluster (per-message cost, link rate, "
                        "per-round overhead) to YAML and stop: run it, then give --calibration")
    p.add_argument("--calibration", metavar="RESULT.h5",
                   help="the probe's result: the estimate (and what fits the budget) is "
                        "computed from what it measured, not from the loader's planning figure")
    p.add_argument("--calibration-wall", type=float, metavar="SECONDS",
                   help="what the probe's launch took in all (start-up included; default: "
                        "the file's started..finished)")
    p.add_argument("--seed", type=int, default=7, help="the scenario's seed (default 7)")
    p.add_argument("--fabscope", metavar="PATH", help="fabscope binary (default FABSCOPE_BIN, "
                                                      "build/fabscope, PATH)")
    p.add_argument("--output", required=True, help="the scenario to write (its criteria file "
                                                   "goes next to it)")
    p.set_defaults(func=run_plan)
    add_placement_parser(sub)


def _counts(text: str, option: str, allow_none: bool = False) -> List[int]:
    if allow_none and text.strip() == "none":
        return []
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise PlanError(f"{option}: expected whole numbers separated by commas, got {text!r}",
                        option) from None
    if not values or any(v < 1 for v in values):
        raise PlanError(f"{option}: expected whole numbers of at least 1, got {text!r}", option)
    return sorted(set(values))


def _cluster(args) -> Cluster:
    if args.ranks < 2:
        raise PlanError(f"--ranks: at least 2 ranks, got {args.ranks}", "--ranks")
    if args.ranks_per_node < 1 or (args.ranks > args.ranks_per_node
                                   and args.ranks % args.ranks_per_node):
        raise PlanError(f"--ranks-per-node: {args.ranks_per_node} does not divide --ranks "
                        f"{args.ranks} into whole nodes", "--ranks-per-node")
    if args.nodes_per_leaf < 0 or args.leaves_per_pod < 0:
        raise PlanError("--nodes-per-leaf/--leaves-per-pod: must be 0 or more", "--nodes-per-leaf")
    cluster = Cluster(args.ranks, min(args.ranks_per_node, args.ranks), args.nodes_per_leaf,
                      args.leaves_per_pod)
    if args.topology:
        if args.nodes_per_leaf or args.leaves_per_pod:
            raise PlanError("--topology: give it or --nodes-per-leaf/--leaves-per-pod, not both",
                            "--topology")
        cluster.nodes_per_leaf, cluster.leaves_per_pod = layout_from_topology(args.topology)
        cluster.topology = args.topology
    return cluster


def _conditions(text: str) -> List[str]:
    values = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in values if c not in CONDITIONS]
    if unknown or not values or values[0] != "quiet" or len(set(values)) != len(values):
        raise PlanError(f"--conditions: expected quiet first, then any of {', '.join(CONGESTED)} "
                        f"once each, got {text!r}", "--conditions")
    return values


def _request(args) -> PlanRequest:
    cluster = _cluster(args)
    if args.tp < 1 or args.tp > args.ranks:
        raise PlanError(f"--tp: expected 1 .. --ranks ({args.ranks}), got {args.tp}", "--tp")
    if args.ep is not None and not 2 <= args.ep <= args.ranks:
        raise PlanError(f"--ep: expected 2 .. --ranks ({args.ranks}), got {args.ep}", "--ep")
    try:
        budget = parse_duration_s(args.budget)
    except PlanError as exc:
        raise PlanError(f"--budget: {exc}", "--budget") from None
    if budget <= 0:
        raise PlanError(f"--budget: must be above zero, got {args.budget!r}", "--budget")
    try:
        slo = parse_slo_text(args.slo)
    except SloError as exc:
        raise PlanError(str(exc), "--slo") from None
    if not slo.targets_ms:
        raise PlanError("--slo: no latency target (itl_p99=50ms, ttft_p99=2s, ...)", "--slo")
    req = PlanRequest(args.model, args.tp, args.ep, cluster, budget, args.slo, args.seed,
                      args.pp, args.dp_attention, args.nodes_per_nvlink_domain)
    req.placement()   # a layout that cannot be placed is refused before anything runs
    return req


def _model_sizes(binary: str, args, knobs: Knobs):
    rc, out, err = run_list(binary, ["--model", args.model, "--tp", str(args.tp), "--decode-batch"]
                            + [str(b) for b in knobs.decode_batches] + ["--prompt"]
                            + [str(p) for p in knobs.prompts])
    if rc != 0:
        message = (err.strip() or out.strip() or f"exit {rc}").splitlines()[-1]
        option = "--tp" if " tp" in message.lower() else "--model"
        raise PlanError(f"{option}: fabscope list refused it: {message}", option)
    return parse_model_listing(out)


def _knobs(args, req: PlanRequest) -> Knobs:
    return Knobs(decode_batches=_counts(args.decode_batch, "--decode-batch"),
                 prefill_chunks=_counts(args.prefill_chunk, "--prefill-chunk", allow_none=True),
                 prompts=_counts(args.prompt, "--prompt"),
                 conditions=_conditions(args.conditions),
                 probes=probes_for(req.cluster, calibrated=bool(args.calibration)))


def make_plan(args, argv: List[str]) -> Plan:
    req = _request(args)
    knobs = _knobs(args, req)
    req.paths = choose_paths(args.paths, lambda: fabscope_binary(args.fabscope),
                             args.require_gpu_paths)
    binary = fabscope_binary(args.fabscope)
    calibration = _calibration(binary, args, req)
    window_note = []
    if calibration is not None and probe_window(calibration) < DEFAULT_WINDOW:
        knobs.bandwidth_window = probe_window(calibration)
        window_note = [f"the bandwidth probes send {knobs.bandwidth_window} x 1 MiB per sample "
                       f"(warmup 2), sized for the calibrated {calibration.bytes_per_s / 1e9:.3g} "
                       f"GB/s per pair; the default {DEFAULT_WINDOW} is sized for 10 GB/s"]
    sizes = _model_sizes(binary, args, knobs)
    out_dir = os.path.dirname(os.path.abspath(args.output))
    stem = os.path.splitext(os.path.basename(args.output))[0]
    criteria_name = f"{stem}.criteria.yaml"

    def estimate(scenario: dict):
        plan = Plan(req, sizes, knobs, parse_scenario_listing(0, "estimated time: 0s in all", ""),
                    [], [], scenario, criteria_name)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=out_dir, prefix=".plan-",
                                         delete=False) as tmp:
            tmp.write(scenario_text(plan, argv))
        try:
            answer = parse_scenario_listing(*run_list(binary, ["--scenario", tmp.name]
                                                      + req.cluster.list_args()))
        finally:
            os.unlink(tmp.name)
        if calibration is not None and answer.ok:
            answer.loader_estimate_s = answer.estimate_s
            answer.estimate_s = calibration.estimate_s(answer.text)
        return answer

    needs = size_for_tails(req, knobs, parse_slo_text(args.slo).targets_ms)
    plan = fit_budget(req, sizes, knobs, criteria_name, estimate)
    plan.notes[:0] = tail_notes(plan.knobs, needs) + window_note + [
        f"{line.split(':')[0]} thinned by the loader ({line.split(': ', 1)[1]}): a single bad pair "
        "is seen only in the rounds kept" for line in plan.answer.thinned if line.startswith("all-pairs")]
    plan.calibration = calibration
    return plan


def probe_scenario(binary: str, args, req: PlanRequest) -> dict:
    """The calibration probe for this plan: over the GPU paths, with two short copies of
    each serving test the plan would put on them (its sizes from the model, as planned)."""
    if req.paths.mode != GPU:
        return calibration_scenario(args.seed)
    knobs = _knobs(args, req)
    planned = build_scenario(req, _model_sizes(binary, args, knobs), knobs, "probe.criteria.yaml", [])
    return calibration_scenario(args.seed, gpu_path_probes(planned["tests"]),
                                {key: planned[key] for key in ("model", "parallel")})


def _calibration(binary: str, args, req: PlanRequest):
    """The calibration from --calibration's probe result (None without it): the probe
    scenario listed at the run's ranks gives each instance's rounds and sizes."""
    if not args.calibration:
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix=".calibration-",
                                     dir=os.path.dirname(os.path.abspath(args.output)),
                                     delete=False) as tmp:
        yaml.safe_dump(probe_scenario(binary, args, req), tmp, sort_keys=False)
    try:
        rc, out, err = run_list(binary, ["--scenario", tmp.name] + req.cluster.list_args())
    finally:
        os.unlink(tmp.name)
    if rc != 0:
        raise PlanError(f"--calibration: the loader refused the probe: {err.strip() or out.strip()}",
                        "--calibration")
    return calibrate(args.calibration, out, args.calibration_wall)


def write_probe(args, scenario: dict) -> int:
    try:
        with open(args.calibration_probe, "w", encoding="utf-8") as out:
            out.write("# The plan's calibration probe: run it with the run's ranks and launcher,\n"
                      "# then: python3 -m fabscope_analysis plan ... --calibration RESULT.h5\n")
            yaml.safe_dump(scenario, out, sort_keys=False)
    except OSError as exc:
        print(f"error: --calibration-probe {args.calibration_probe}: cannot write it "
              f"({exc.strerror})", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {args.calibration_probe}: run it on the cluster, then plan with --calibration")
    return EXIT_WRITTEN


def print_plan(plan: Plan, output: str, stream) -> None:
    req, answer = plan.request, plan.answer
    c = req.cluster
    print(f"plan for {plan.sizes.name} TP {req.tp}" + (f" PP {req.pp}" if req.pp > 1 else "")
          + (" DP attention" if req.dp_attention else "") + (f" EP {req.ep}" if req.ep else "")
          + f" on {c.ranks} ranks ({c.ranks_per_node} per node, {c.nodes_per_leaf or '-'} nodes per "
          f"leaf, {c.leaves_per_pod or '-'} leaves per pod): {answer.instances} test instances, "
          f"estimate {format_duration(answer.estimate_s)} within the budget of "
          f"{format_duration(req.budget_s)} ("
          + estimate_words(plan.calibration, answer.loader_estimate_s or answer.estimate_s) + ")",
          file=stream)
    for test in plan.scenario["tests"]:
        extra = f" {test.get('pattern')}" if test.get("pattern") else ""
        groups = test.get("roles", {}).get("groups")
        rotation = (f" in each of {test.get('repeats', 1)} rounds over groups: {groups}"
                    if groups else "")
        print(f"  {test['name']}: {test['kind']}{extra}, sizes {test['sizes']}, conditions "
              f"{test.get('conditions', ['quiet'])}, iterations {test['iterations']}{rotation}",
              file=stream)
    for what, lines in (("changed to fit", plan.shrunk), ("thinned", answer.thinned), ("note", plan.notes)):
        for line in lines:
            print(f"  {what}: {line}", file=stream)
    topology = f" --topology {c.topology}" if c.topology else ""
    print(f"run: launch/fabscope-mpirun -np {c.ranks} -N {c.ranks_per_node} -- run --scenario "
          f"{output}{topology} --output RESULT.h5", file=stream)
    print(f"then: python3 -m fabscope_analysis fit RESULT.h5 {fit_arguments(plan)}", file=stream)


def command_of(args) -> List[str]:
    """The options the plan was made with, as a command line (stored in the scenario)."""
    words = []
    for option in ("model", "tp", "ep", "pp", "ranks", "ranks_per_node", "nodes_per_leaf",
                   "leaves_per_pod", "topology", "budget", "slo", "conditions", "decode_batch",
                   "prefill_chunk", "prompt", "paths", "calibration", "calibration_wall", "seed",
                   "output"):
        value = getattr(args, option)
        if value is not None:
            words += ["--" + option.replace("_", "-"), str(value)]
    if args.dp_attention:
        words.append("--dp-attention")
    if args.require_gpu_paths:
        words.append("--require-gpu-paths")
    if args.nodes_per_nvlink_domain != 1:
        words += ["--nodes-per-nvlink-domain", str(args.nodes_per_nvlink_domain)]
    return words


def run_plan(args) -> int:
    if args.calibration_probe:
        try:   # refuse what the plan would refuse before the probe runs on the cluster
            req = _request(args)
            req.paths = choose_paths(args.paths, lambda: fabscope_binary(args.fabscope),
                                     args.require_gpu_paths)
            scenario = probe_scenario(fabscope_binary(args.fabscope), args, req)
        except PlanError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        return write_probe(args, scenario)
    argv = command_of(args)
    try:
        plan = make_plan(args, argv)
        text = scenario_text(plan, argv)
        criteria = criteria_text(plan.request.slo_text, plan.request.cluster, CRITERIA_DIR)
    except PlanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    criteria_path = os.path.join(os.path.dirname(os.path.abspath(args.output)), plan.criteria_name)
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
        with open(criteria_path, "w", encoding="utf-8") as out:
            out.write(criteria)
    except OSError as exc:
        print(f"error: --output {args.output}: cannot write it ({exc.strerror})", file=sys.stderr)
        return EXIT_USAGE
    print_plan(plan, args.output, sys.stdout)
    print(f"wrote {args.output} and {criteria_path}")
    return EXIT_WRITTEN
