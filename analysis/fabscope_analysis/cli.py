"""Command line: python3 -m fabscope_analysis summary|report|compare|accept|diagnose ...

Exit codes: 0 ok; 1 acceptance failed (diagnose: not fit, or cannot tell); 2 bad usage,
unreadable/unknown result file or bad criteria file.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from . import __version__
from .errors import CriteriaError, ResultFileError
from .reader import ResultFile, open_result

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _open(path: str) -> ResultFile:
    result = open_result(path, warn_incomplete=False)
    if not result.complete:
        print(f"warning: {path} is incomplete (complete=0, exit_code="
              f"{result.attrs.get('exit_code')}): the run did not end normally",
              file=sys.stderr)
    return result


def _cmd_summary(args) -> int:
    from .summary import print_summary
    with _open(args.file) as result:
        print_summary(result)
    return EXIT_OK


def _cmd_report(args) -> int:
    from .report import write_report
    with _open(args.file) as result:
        write_report(result, args.output)
    print(f"wrote {args.output}")
    return EXIT_OK


def _cmd_compare(args) -> int:
    from .compare import run_compare
    results = [_open(p) for p in args.files]
    try:
        run_compare(results, args.output, resamples=args.resamples, seed=args.seed,
                    min_effect=args.min_effect / 100.0)
    finally:
        for r in results:
            r.close()
    if args.output:
        print(f"wrote {args.output}")
    return EXIT_OK


def _cmd_accept(args) -> int:
    from .accept import load_criteria, run_accept
    criteria = load_criteria(args.criteria)
    baseline = _open(args.baseline) if args.baseline else None
    try:
        with _open(args.file) as result:
            ok = run_accept(result, criteria, baseline=baseline, junit_path=args.junit)
    finally:
        if baseline is not None:
            baseline.close()
    return EXIT_OK if ok else EXIT_FAILED


def _cmd_diagnose(args) -> int:
    from .diagnose import diagnose, print_diagnosis, write_json
    baseline = _open(args.baseline) if args.baseline else None
    try:
        with _open(args.file) as result:
            verdict = diagnose(result, baseline=baseline)
    finally:
        if baseline is not None:
            baseline.close()
    print_diagnosis(verdict)
    if args.json:
        write_json(verdict, args.json)
    return EXIT_OK if verdict.fit else EXIT_FAILED


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m fabscope_analysis",
        description="Analyse fabscope HDF5 result files (docs/analysis.md).")
    parser.add_argument("--version", action="version", version=f"fabscope_analysis {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("summary", help="table per test and condition")
    p.add_argument("file")
    p.set_defaults(func=_cmd_summary)

    p = sub.add_parser("report", help="self-contained HTML report with plots")
    p.add_argument("file")
    p.add_argument("-o", "--output", required=True, help="HTML file to write")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("compare", help="compare runs case by case (first file = reference)")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-o", "--output", help="HTML file to write (the text table is always printed)")
    p.add_argument("--resamples", type=int, default=400,
                   help="bootstrap resamples per statistic (default 400, at most 5000)")
    p.add_argument("--seed", type=int, default=12345, help="bootstrap seed (default 12345)")
    p.add_argument("--min-effect", type=float, default=2.0, metavar="PERCENT",
                   help="differences smaller than this (relative, %%) are called negligible "
                        "even when the interval excludes zero (default 2)")
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser("accept", help="verdict against a criteria file (exit 0 pass, 1 fail)")
    p.add_argument("file")
    p.add_argument("--criteria", required=True, help="criteria YAML (see docs/analysis.md)")
    p.add_argument("--baseline", help="baseline result file for relative rules")
    p.add_argument("--junit", help="write JUnit XML here")
    p.set_defaults(func=_cmd_accept)

    p = sub.add_parser("diagnose", help="fit, or name the culprit hosts (exit 0 fit, 1 not)")
    p.add_argument("file")
    p.add_argument("--json", metavar="OUT", help="also write the diagnosis as JSON here")
    p.add_argument("--baseline", help="known-good run of the same scenario: a fabric that is "
                                      "uniformly slower is only visible against it")
    p.set_defaults(func=_cmd_diagnose)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "compare":
        if len(args.files) < 2:
            parser.error("compare needs at least two result files")
        if not 1 <= args.resamples <= 5000:
            parser.error("--resamples must be between 1 and 5000")
    try:
        return args.func(args)
    except (ResultFileError, CriteriaError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # output piped into `head` and closed early: not an error of the analysis
        sys.stderr.close()
        return EXIT_OK
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
