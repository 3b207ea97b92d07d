"""`fit FILE --slo ... [--model M --tp N ...]`: is this fabric fit to serve M at the SLO?

Exit codes (the analysis contract): 0 PASS; 1 FAIL or CANNOT TELL (nothing shows the
fabric fit); 2 bad usage, an unreadable file or criteria file, an unknown model, and with
--require-gpu-paths a file measured over host memory.
"""

from __future__ import annotations

import json
import sys
from typing import List, Optional, Tuple

import yaml

from ..diagnose import diagnose
from .impact import deployment_from_run
from ..models import ModelError
from ..reader import open_for_command as _open
from ..verdict import resolve_criteria_file, scenario_criteria
from .attribution import cluster_check, costs, culprit_words, hold_unexplained_fails, \
    shared_cpu_findings
from .checks import FAIL, PASS, worst_status
from .fit import FitVerdict, compose_verdict, json_of
from .line_rate import headline
from .measured import measure
from .groups import GROUPS_CHECK, named_group_hosts
from .nodes import NODES_CHECK, named_hosts
from .paths import paths_of
from .placement import PlacementError, placement_of
from .slo import SloError, Slo, load_slo_file, parse_slo_text

EXIT_PASS, EXIT_NOT_PASS, EXIT_USAGE = 0, 1, 2


def add_parser(sub) -> None:
    p = sub.add_parser("fit", help="is the fabric fit to serve a model at an SLO: PASS, FAIL or "
                                   "CANNOT TELL (exit 0 PASS, 1 otherwise)")
    p.add_argument("file")
    p.add_argument("--slo", help="objectives, e.g. itl_p99=50ms,ttft_p99=2s (also itl_p50, "
                                 "ttft_p50; itl_share and ttft_share: the share of each target "
                                 "the fabric may take, default 10%%; cif_p99: the largest "
                                 "congested/quiet p99 of a serving class, default 2)")
    p.add_argument("--criteria", metavar="YAML", help="a file with an slo: section (same keys); "
                                                      "--slo overrides its keys")
    p.add_argument("--model", help="model preset (default: the scenario's model): llama3-8b, "
                                   "llama3-70b, llama3-405b, deepseek-v3")
    p.add_argument("--tp", type=int, help="tensor parallelism (default: the scenario's)")
    p.add_argument("--ep", type=int, help="expert parallelism (MoE models)")
    add_layout_options(p)
    p.add_argument("--decode-batch", type=int, default=32, help="sequences per decode step "
                                                                "(default 32)")
    p.add_argument("--prefill-chunk", type=int, help="tokens of a prefill chunk: its TP "
                   "all-reduces and MoE normal rounds count in TTFT (default: not counted, "
                   "and named as missing)")
    p.add_argument("--prompt", type=int, default=8192, help="prompt tokens of a request whose KV "
                                                            "moves (default 8192)")
    p.add_argument("--block-tokens", type=int, default=16, help="tokens per KV block (default 16)")
    p.add_argument("--require-gpu-paths", action="store_true",
                   help="refuse (exit 2) a file whose serving classes were measured over host "
                        "memory (MPI, or KV staged through pinned host): a stand-in for NCCL "
                        "and GPU-direct")
    p.add_argument("--no-diagnose", action="store_true",
                   help="on FAIL, do not run the diagnosis for components to fix")
    p.add_argument("--json", metavar="OUT", help="also write the verdict and every figure here")
    p.set_defaults(func=run_fit)


def add_layout_options(p) -> None:
    """The placement's options beyond TP and EP (placement.py), shared with `placement`."""
    p.add_argument("--pp", type=int, default=1, help="pipeline parallelism: stages per "
                                                     "replica (default 1)")
    p.add_argument("--dp-attention", action="store_true",
                   help="attention data parallel (each rank its own requests; models with "
                        "experts, --tp 1): no TP all-reduce")
    p.add_argument("--gpus-per-node", type=int,
                   help="GPUs per node: groups inside one NVLink domain are not this fabric's "
                        "(default: not given, every group counted as crossing the fabric)")
    p.add_argument("--nodes-per-nvlink-domain", type=int, default=1,
                   help="nodes sharing one NVLink domain (default 1: NVLink inside a node; "
                        "a GB200 NVL72 rack is 18 nodes of 4 GPUs)")
    p.add_argument("--colocated", action="store_true",
                   help="prefill and decode on the same instances: no KV transfer")


def placement_from_args(args, deployment):
    """The deployment's placement from the layout options (PlacementError when it cannot
    be placed)."""
    return placement_of(deployment, pp=args.pp, dp_attention=args.dp_attention,
                        gpus_per_node=args.gpus_per_node,
                        nodes_per_nvlink_domain=args.nodes_per_nvlink_domain,
                        disaggregated=not args.colocated)


def _slo_of(args, result=None) -> Slo:
    """--slo over --criteria's slo: section, or over that of the criteria the scenario names
    (a scenario written by `plan` names one)."""
    slo = load_slo_file(args.criteria) if args.criteria else None
    if slo is None and result is not None:
        slo = _scenario_slo(result)
    if args.slo is not None:
        slo = parse_slo_text(args.slo, slo)
    if slo is None or not slo.targets_ms:
        raise SloError("no latency target: give --slo itl_p99=50ms,ttft_p99=2s (or --criteria "
                       "FILE with an slo: section, or run a scenario whose criteria have one)")
    return slo


def _scenario_slo(result) -> Optional[Slo]:
    named = scenario_criteria(result)
    path = resolve_criteria_file(named, str(result.attrs.get("scenario_file", "") or "")) if named else None
    if path is None:
        return None
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    if not isinstance(doc, dict) or "slo" not in doc:
        return None   # the shipped rules only: the objectives must come from --slo
    return load_slo_file(path)   # a malformed slo: section is an error naming file and line


def components_to_fix(result) -> Tuple[List[str], list]:
    """(lines, culprits): the diagnosis's culprits (components to fix), or why it names none.
    The diagnosis is of the whole file; attribution.costs says which check each costs."""
    diagnosis = diagnose(result)
    if diagnosis.culprits:
        return [f"{culprit_words(c)}: {'; '.join(c.symptoms)} (confidence {c.confidence})"
                for c in diagnosis.culprits], diagnosis.culprits
    found = [c.line() for c in diagnosis.congestion]
    if diagnosis.verdict == "cannot tell":
        found.append("diagnose cannot name a component: " + "; ".join(diagnosis.reasons))
    else:
        found.append("diagnose names no single component: the cost is fabric-wide (congestion, "
                     "routing, the transport or its settings)")
    return found, []


SIDE_WORDS = {"both": ": its KV requests, as prefill and as decode,",
              "send": " (send): the KV requests it pushes as prefill",
              "receive": " (receive): the KV requests it receives as decode"}


def _named_check(verdict: FitVerdict, name: str):
    """The verdict's check of that name, or None where it did not run."""
    return next((c for c in verdict.checks if c.name == name), None)


def disagreements(verdict: FitVerdict, culprits) -> List[str]:
    """Why the per-node check, the per-group check and the diagnosis (what the run's
    closing verdict names) do not name the same hosts, where they do not."""
    per_node = _named_check(verdict, NODES_CHECK)
    by_kv = set(named_hosts(per_node))
    by_diagnosis = {c.host for c in culprits}
    notes = []
    if by_kv - by_diagnosis:
        notes.append(f"the rotated KV push names {', '.join(sorted(by_kv - by_diagnosis))}, the "
                     "diagnosis (the run's closing verdict) does not: its probes (small latency "
                     "and bandwidth samples per pair) did not show what the KV requests through "
                     "it met; fit FAILs on the requests")
    if per_node is not None and by_diagnosis - by_kv:
        notes.append(f"the diagnosis names {', '.join(sorted(by_diagnosis - by_kv))}, the rotated "
                     "KV push does not (its requests through it stayed within the budget): fit "
                     "FAILs on the diagnosis, as the run's closing verdict does")
    per_group = _named_check(verdict, GROUPS_CHECK)
    by_groups = set(named_group_hosts(per_group)) - by_diagnosis
    if by_groups:
        notes.append(f"the rotated TP / EP collectives name {', '.join(sorted(by_groups))}, the "
                     "diagnosis (the run's closing verdict) does not: its probes (small latency "
                     "and bandwidth samples per pair) did not show what the group's collectives "
                     "met; fit FAILs on the decode steps")
    return notes


def print_verdict(verdict: FitVerdict, stream) -> None:
    print(verdict.line(), file=stream)
    for check in verdict.checks:
        print(f"  {check.name}: {check.text}", file=stream)
    if verdict.cif:
        print("congestion impact factor (congested / quiet per operation; >1 is worse):",
              file=stream)
        for r in verdict.cif:
            figures = ", ".join(f"{k} {'-' if v is None else f'x{v:.3g}'}"
                                for k, v in r.cif.items())
            extra = f" ({r.why})" if r.why else ""
            extra += f"; canaries: {r.canaries}" if r.canaries else ""
            print(f"  {r.title()} {r.series} [{r.condition}]: {figures} over {r.samples} / "
                  f"{r.quiet_samples} operations: {r.status}{extra}", file=stream)
    for what, lines in (("fix", verdict.to_fix), ("cost", verdict.costs),
                        ("line rate", verdict.limiters),
                        ("missing", verdict.missing), ("note", verdict.notes)):
        for line in lines:
            print(f"{what}: {line}", file=stream)


def _judge_with_diagnosis(verdict, result, measured):
    """The whole cluster serves: a component the diagnosis names anywhere fails the verdict;
    the hosts the nodes and groups checks name go first among what to fix. Returns the
    diagnosis's culprits."""
    verdict.to_fix, culprits = components_to_fix(result)
    if culprits:
        verdict.checks.append(cluster_check(culprits, len(set(result.ranks()["host"])), measured))
        verdict.status = worst_status(c.status for c in verdict.checks)
    verdict.notes.extend(disagreements(verdict, culprits))
    named = {c.host for c in culprits}
    per_node = _named_check(verdict, NODES_CHECK)
    sides = per_node.figures.get("sides", {}) if per_node is not None else {}
    verdict.to_fix[:0] = [f"host {h}{SIDE_WORDS[sides.get(h, 'both')]} miss the TTFT "
                          "budget (the nodes check)" for h in named_hosts(per_node) if h not in named]
    verdict.to_fix[:0] = [f"host {h}: the decode steps of its TP / EP group miss the ITL "
                          "budget (the groups check)"
                          for h in named_group_hosts(_named_check(verdict, GROUPS_CHECK)) if h not in named]
    return culprits


def run_fit(args) -> int:
    with _open(args.file) as result:
        try:
            slo = _slo_of(args, result)
        except SloError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        try:
            deployment = deployment_from_run(
                result, args.model, args.tp, decode_batch=args.decode_batch,
                prompt_tokens=args.prompt, block_tokens=args.block_tokens, ep=args.ep,
                prefill_chunk=args.prefill_chunk)
        except ModelError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if deployment is None:
            print(f"error: {args.file}: the scenario names no model; give --model "
                  "(llama3-8b, llama3-70b, llama3-405b, deepseek-v3)", file=sys.stderr)
            return EXIT_USAGE
        try:
            placement = placement_from_args(args, deployment)
        except PlacementError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        measured = measure(result, deployment, placement)
        stand_in = paths_of(measured).stand_in
        if args.require_gpu_paths and stand_in:
            print(f"error: --require-gpu-paths: {args.file} measured over host memory, a "
                  f"stand-in for serving's GPU paths: {'; '.join(stand_in)}", file=sys.stderr)
            return EXIT_USAGE
        verdict = compose_verdict(measured, slo, deployment)
        kv_line = headline(result)
        verdict.limiters = [kv_line] if kv_line else []
        if not args.no_diagnose:
            culprits = _judge_with_diagnosis(verdict, result, measured)
        shared = shared_cpu_findings(result) if verdict.status == FAIL else []
        if verdict.status == FAIL and (shared or not args.no_diagnose):
            if args.no_diagnose:
                verdict.to_fix, culprits = components_to_fix(result)
            verdict.costs = costs(verdict, measured, culprits)
            hold_unexplained_fails(verdict, measured, culprits, shared)
        if verdict.status != FAIL:
            verdict.to_fix = []   # the diagnosis's words are for a FAIL
    print_verdict(verdict, sys.stdout)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(json_of(verdict), out, indent=2, default=str)
    return EXIT_PASS if verdict.status == PASS else EXIT_NOT_PASS
