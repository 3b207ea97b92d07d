"""Command line: python3 -m fabscope_analysis COMMAND ... (summary, report, compare, accept,
verdict, diagnose, impact, fit, export, synth).

Exit codes (docs/analysis.md, "Exit codes"): 0 done (accept/verdict: the verdict is PASS;
diagnose: fit; fit: PASS; export: the file is written, whatever the verdict); 1 the verdict is
FAIL (accept, verdict), diagnose finds the fabric not fit or cannot tell, or fit is FAIL or
CANNOT TELL; 2 bad usage, an
unreadable/unknown result file, a bad or missing criteria file, compare with no case in
common, or export unable to write its file.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import List, Optional

from . import __version__
from .accept_text import run_accept
from .compare import run_compare
from .diagnose import diagnose, print_diagnosis
from .diagnose import write_json as write_diagnosis_json
from .errors import CriteriaError, ResultFileError
from .export import export_openmetrics, series_count
from .serving.impact import compute_impact, deployment_from_run
from .serving.impact_text import print_impact
from .serving.impact_text import write_json as write_impact_json
from .models import ModelError, preset
from .reader import open_for_command as _open
from .report import write_report
from .serving.command import add_parser as add_fit_parser
from .serving.plan_command import add_parser as add_plan_parser
from .summary import print_summary
from .synth.command import add_parser as add_synth_parser
from .verdict import compute_verdict

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
COMPARE_VALUE_OPTIONS = {"-o", "--output", "--resamples", "--seed", "--negligible",
                         "--min-effect", "--model", "--tp"}


def _cmd_summary(args) -> int:
    with _open(args.file) as result:
        print_summary(result, criteria=args.criteria)
    return EXIT_OK


def _cmd_report(args) -> int:
    with _open(args.file) as result:
        write_report(result, args.output, criteria=args.criteria, model=args.model, tp=args.tp)
    print(f"wrote {args.output}")
    return EXIT_OK


def _cmd_compare(args) -> int:
    results = [_open(p) for p in args.files]
    try:
        run_compare(results, args.output, resamples=args.resamples, seed=args.seed,
                    min_effect=args.negligible / 100.0, split=args.split,
                    model=args.model, tp=args.tp, aa_archive=args.aa_archive)
    finally:
        for r in results:
            r.close()
    if args.output:
        print(f"wrote {args.output}")
    return EXIT_OK


def _cmd_accept(args) -> int:
    baselines = []
    try:
        for path in args.baseline or []:
            baselines.append(_open(path))
        with _open(args.file) as result:
            ok = run_accept(result, args.criteria, baseline=baselines, junit_path=args.junit)
    finally:
        for baseline in baselines:
            baseline.close()
    return EXIT_OK if ok else EXIT_FAILED


def _cmd_diagnose(args) -> int:
    baseline = _open(args.baseline) if args.baseline else None
    try:
        with _open(args.file) as result:
            verdict = diagnose(result, baseline=baseline)
    finally:
        if baseline is not None:
            baseline.close()
    print_diagnosis(verdict)
    if args.json:
        write_diagnosis_json(verdict, args.json)
    return EXIT_OK if verdict.fit else EXIT_FAILED


def _cmd_impact(args) -> int:
    with _open(args.file) as result:
        try:
            deployment = deployment_from_run(
                result, args.model, args.tp, decode_batch=args.decode_batch,
                prompt_tokens=args.prompt, block_tokens=args.block_tokens, ep=args.ep,
                prefill_ms=args.prefill_ms, dp_attention=args.dp_attention)
        except ModelError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if deployment is None:
            print(f"error: {args.file}: the scenario names no model; give --model "
                  "(llama3-8b, llama3-70b, llama3-405b, deepseek-v3)", file=sys.stderr)
            return EXIT_USAGE
        impact = compute_impact(result, deployment)
    print_impact(impact, sys.stdout)
    if args.json:
        write_impact_json(impact, args.json)
    return EXIT_OK


def _cmd_verdict(args) -> int:
    with _open(args.file) as result:
        verdict = compute_verdict(result, args.criteria)
    print(verdict.line())
    if not args.brief:
        for reason in verdict.reasons:
            print(f"  - {reason.text}")
    return EXIT_OK if verdict.passed else EXIT_FAILED


def _cmd_export(args) -> int:
    results = []
    try:
        for path in args.files:
            results.append(_open(path))
        metrics = export_openmetrics(results, args.openmetrics, criteria=args.criteria,
                                     model=args.model, tp=args.tp, max_pairs=args.max_pairs)
    finally:
        for r in results:
            r.close()
    if args.openmetrics != "-":
        print(f"wrote {args.openmetrics} ({series_count(metrics)} series from "
              f"{len(args.files)} file{'s' if len(args.files) != 1 else ''})")
    return EXIT_OK


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def _deployment_options(p) -> None:
    p.add_argument("--model", help="model preset for the serving impact (default: the "
                                   "scenario's model): llama3-8b, llama3-70b, llama3-405b, "
                                   "deepseek-v3")
    p.add_argument("--tp", type=_positive_int,
                   help="tensor parallelism (default: the scenario's parallel.tp)")


def _add_compare(sub) -> None:
    """The compare command and its options."""
    p = sub.add_parser("compare", help="compare runs case by case: A.h5 B.h5 [C.h5 ...] "
                                       "(first = reference) or A1.h5 A2.h5 -- B1.h5 B2.h5")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="result files; put -- between side A's runs and side B's runs")
    p.add_argument("-o", "--output", help="HTML file to write (the text table is always printed)")
    p.add_argument("--resamples", type=int, default=400,
                   help="bootstrap resamples per statistic (default 400, at most 5000)")
    p.add_argument("--seed", type=int, default=12345, help="bootstrap seed (default 12345)")
    p.add_argument("--negligible", "--min-effect", type=float, default=5.0, metavar="PERCENT",
                   dest="negligible",
                   help="real differences smaller than this (relative, %%) are called "
                        "negligible, not better/worse (default 5)")
    p.add_argument("--aa-archive", metavar="DIR",
                   help="directory of A/A runs (*.h5: the same scenario, same fabric, nothing "
                        "changed): their spread stands for run-to-run variation, so one run "
                        "per side can tell a difference larger than it")
    _deployment_options(p)
    p.set_defaults(func=_cmd_compare, split=None)


def _add_impact(sub) -> None:
    """The impact command and its options."""
    p = sub.add_parser("impact", help="what the measured fabric costs a served model: ms per "
                                      "token of TP communication, KV transfer in TTFT")
    p.add_argument("file")
    _deployment_options(p)
    p.add_argument("--decode-batch", type=_positive_int, default=32,
                   help="sequences per decode step (default 32)")
    p.add_argument("--prompt", type=_positive_int, default=8192,
                   help="prompt tokens of a request whose KV moves (default 8192)")
    p.add_argument("--block-tokens", type=_positive_int, default=16,
                   help="tokens per KV block (default 16)")
    p.add_argument("--ep", type=_positive_int, help="expert parallelism (MoE models)")
    p.add_argument("--dp-attention", action="store_true",
                   help="attention data parallel (tp 1, a model with experts): no TP "
                        "all-reduce, as `fit --dp-attention` counts it")
    p.add_argument("--prefill-ms", type=float,
                   help="prefill time of one prompt on the deployment's GPUs (not measured by "
                        "fabscope); gives the KV transfer's share of time to first token")
    p.add_argument("--json", metavar="OUT", help="also write every figure as JSON here")
    p.set_defaults(func=_cmd_impact)


def _add_export(sub) -> None:
    """The export command and its options."""
    p = sub.add_parser("export", help="the headline figures as metrics for Prometheus "
                                      "(node_exporter's textfile collector)")
    p.add_argument("--openmetrics", required=True, metavar="OUT",
                   help="write OpenMetrics text here (also valid Prometheus text: "
                        "node_exporter's textfile collector reads it); - for stdout")
    p.add_argument("files", nargs="+", metavar="FILE", help="result files")
    p.add_argument("--criteria", help="criteria YAML for the verdict (default: in force, "
                                      "per file)")
    _deployment_options(p)
    p.add_argument("--max-pairs", type=_positive_int, default=4096, metavar="N",
                   help="per-pair series only for instances with at most N pairs "
                        "(default 4096: 64 ranks all-pairs)")
    p.set_defaults(func=_cmd_export)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m fabscope_analysis",
        description="Analyse fabscope HDF5 result files (docs/analysis.md).")
    parser.add_argument("--version", action="version", version=f"fabscope_analysis {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("summary", help="table per test and condition")
    p.add_argument("file")
    p.add_argument("--criteria", help="criteria YAML for the verdict line (default: in force)")
    p.set_defaults(func=_cmd_summary)

    p = sub.add_parser("report", help="self-contained HTML report with plots")
    p.add_argument("file")
    p.add_argument("-o", "--output", required=True, help="HTML file to write")
    p.add_argument("--criteria", help="criteria YAML for the verdict (default: in force)")
    _deployment_options(p)
    p.set_defaults(func=_cmd_report)

    _add_compare(sub)

    p = sub.add_parser("accept", help="every check of the criteria in force (exit 0 PASS, 1 FAIL or CANNOT TELL)")
    p.add_argument("file")
    p.add_argument("--criteria", help="criteria YAML (docs/analysis.md); default: the criteria "
                                      "the scenario names, else the shipped default for the "
                                      "run (local.yaml on one host, rack-acceptance.yaml)")
    p.add_argument("--baseline", nargs="+", action="extend", metavar="B.h5",
                   help="known-good run(s) of the same scenario: one for the baseline ratio "
                        "rules, two or more for tolerance limits (rules' tolerance:)")
    p.add_argument("--junit", help="write JUnit XML here")
    p.set_defaults(func=_cmd_accept)

    p = sub.add_parser("diagnose", help="fit, or name the culprit hosts (exit 0 fit, 1 not)")
    p.add_argument("file")
    p.add_argument("--json", metavar="OUT", help="also write the diagnosis as JSON here")
    p.add_argument("--baseline", help="known-good run of the same scenario: a fabric that is "
                                      "uniformly slower is only visible against it")
    p.set_defaults(func=_cmd_diagnose)

    _add_impact(sub)

    p = sub.add_parser("verdict", help="the run's verdict in one line (exit 0 PASS, 1 FAIL or CANNOT TELL)")
    p.add_argument("file")
    p.add_argument("--criteria", help="criteria YAML (default: the criteria in force, as accept)")
    p.add_argument("--brief", action="store_true", help="only the verdict line")
    p.set_defaults(func=_cmd_verdict)

    _add_export(sub)
    add_synth_parser(sub)
    add_fit_parser(sub)
    add_plan_parser(sub)
    return parser


# C0 control characters but tab and newline, and DEL: a terminal acts on them
# (ESC starts an escape sequence, BEL rings, CR overwrites the line).
_TERMINAL_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")


class TerminalSafe:
    """A text stream that writes control characters as visible escapes (\\x1b)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(_TERMINAL_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text))

    def __getattr__(self, name):
        return getattr(self._stream, name)


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    split = None
    if "compare" in argv and "--" in argv[argv.index("compare"):]:
        # compare A1 A2 -- B1 B2: argparse would swallow the "--", so split here
        cut = argv.index("--", argv.index("compare"))
        before, after = argv[:cut], argv[cut + 1:]
        split, skip = 0, False
        for token in before[before.index("compare") + 1:]:
            if skip:
                skip = False
            elif token in COMPARE_VALUE_OPTIONS:
                skip = True
            elif not token.startswith("-"):
                split += 1
        argv = before + after
    args = parser.parse_args(argv)
    if getattr(args, "model", None):
        try:
            preset(args.model)
        except ModelError as exc:
            parser.error(str(exc))
    if args.command == "compare":
        args.split = split
        if len(args.files) < 2:
            parser.error("compare needs at least two result files")
        if split is not None and not 0 < split < len(args.files):
            parser.error("compare A1.h5 [A2.h5 ...] -- B1.h5 [B2.h5 ...]: each side needs at "
                         "least one file")
        if not 1 <= args.resamples <= 5000:
            parser.error("--resamples must be between 1 and 5000")
    # Names in a result file from elsewhere (hosts, tests, the scenario) reach the
    # terminal: their control characters are shown, not obeyed.
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalSafe(sys.stdout), TerminalSafe(sys.stderr)
    try:
        return _run(args)
    finally:
        sys.stdout, sys.stderr = streams


def _run(args) -> int:
    try:
        return args.func(args)
    except (ResultFileError, CriteriaError, ModelError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # output piped into `head` and closed early: not an error of the analysis
        sys.stderr.close()
        return EXIT_OK
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
