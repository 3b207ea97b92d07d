#!/usr/bin/env python3
"""Every outcome the docs promise has exactly one contract test, and every contract test
pins an outcome the docs promise.

The outcome tables are the single source: every table in docs/*.md whose header is

    | command | exit | outcome | meaning |

lists one outcome per row: the command as users type it, its exit code, and the verdict
word or closing line it prints (the first `...` span of the cell; "—" when the outcome has
none). A row is the key "COMMAND | EXIT | OUTCOME".

A test claims a key with
    @outcome_contract("COMMAND", EXIT, "OUTCOME")       (Python, analysis/tests/contracts.py)
    # outcome-contract: COMMAND | EXIT | OUTCOME        (a shell test under tests/)
and must assert that exact exit code and that exact word or line, in a file ./tests/run runs
by default (analysis/tests/test_*.py, tests/mpi/*.sh, tests/system/*.sh not labelled full).
This check fails when a row has no claim (a new outcome without a test), when two tests claim
one row, when a claim names a row no table has (an outcome removed or renamed in the docs),
and when a claim sits in a file the suite does not run by default.

Usage: check_outcome_contracts.py [--list]   (--list prints every row and its test)
"""

from __future__ import annotations

import ast
import glob
import os
import re
import sys
from typing import Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = ["command", "exit", "outcome", "meaning"]
NONE = "—"
SHELL_CLAIM = re.compile(r"^\s*#\s*outcome-contract:\s*(.+?)\s*$")
DECORATOR = "outcome_contract"


def key(command: str, code: int, outcome: str) -> str:
    return f"{command} | {code} | {outcome}"


def _cells(line: str) -> List[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|"):
        body = body[:-1]
    # A `|` inside backticks (e.g. `ib\|roce`) is escaped in the docs' tables.
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def _code_span(cell: str, where: str, what: str, errors: List[str]) -> str:
    if cell == NONE:
        return NONE
    match = re.match(r"`([^`]+)`", cell)
    if not match:
        errors.append(f"{where}: the {what} cell '{cell}' is neither `...` nor {NONE}")
        return ""
    return match.group(1)


def doc_rows(paths: List[str]) -> Tuple[Dict[str, str], List[str]]:
    """key -> 'file:line' of every outcome row of every outcome table; and the errors."""
    rows: Dict[str, str] = {}
    errors: List[str] = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        rel = os.path.relpath(path, ROOT)
        i = 0
        while i < len(lines):
            if lines[i].lstrip().startswith("|") and [c.lower() for c in _cells(lines[i])] == HEADER:
                i += 2  # the header and its |---| line
                while i < len(lines) and lines[i].lstrip().startswith("|"):
                    where = f"{rel}:{i + 1}"
                    cells = _cells(lines[i])
                    if len(cells) != len(HEADER):
                        errors.append(f"{where}: {len(cells)} cells, expected {len(HEADER)} ({' | '.join(HEADER)})")
                    else:
                        command = _code_span(cells[0], where, "command", errors)
                        outcome = _code_span(cells[2], where, "outcome", errors)
                        if not re.fullmatch(r"[0-9]+", cells[1]):
                            errors.append(f"{where}: exit '{cells[1]}' is not a number")
                        elif command and outcome:
                            k = key(command, int(cells[1]), outcome)
                            if k in rows:
                                errors.append(f"{where}: row '{k}' repeats {rows[k]}")
                            rows[k] = where
                    i += 1
            i += 1
    return rows, errors


def python_claims(path: str, errors: List[str]) -> List[Tuple[str, str]]:
    """(key, 'file:line test') of every @outcome_contract(...) in a Python test file."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if DECORATOR not in text:
        return []
    rel = os.path.relpath(path, ROOT)
    out = []
    for node in ast.walk(ast.parse(text, filename=path)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in node.decorator_list:
            if not (isinstance(deco, ast.Call) and getattr(deco.func, "id", getattr(deco.func, "attr", "")) == DECORATOR):
                continue
            where = f"{rel}:{deco.lineno} {node.name}"
            if not node.name.startswith("test_"):
                errors.append(f"{where}: @{DECORATOR} on a function pytest does not collect")
            try:
                command, code, outcome = (ast.literal_eval(a) for a in deco.args)
            except (ValueError, TypeError):
                errors.append(f"{where}: @{DECORATOR} takes three literals (command, exit, outcome)")
                continue
            out.append((key(command, int(code), outcome), where))
    return out


def shell_claims(path: str, errors: List[str]) -> List[Tuple[str, str]]:
    rel = os.path.relpath(path, ROOT)
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            match = SHELL_CLAIM.match(line)
            if not match:
                continue
            parts = [p.strip() for p in match.group(1).split(" | ")]
            if len(parts) != 3 or not re.fullmatch(r"[0-9]+", parts[1]):
                errors.append(f"{rel}:{n}: expected '# outcome-contract: COMMAND | EXIT | OUTCOME'")
                continue
            out.append((key(parts[0], int(parts[1]), parts[2]), f"{rel}:{n}"))
    return out


def _test_files(suffix: str) -> List[str]:
    """Test files under analysis/tests and tests/ (os.walk without following links: tests/data
    holds sysfs trees whose links loop)."""
    out = []
    for top in ("analysis/tests", "tests"):
        for folder, dirs, names in os.walk(os.path.join(ROOT, top)):
            dirs[:] = sorted(d for d in dirs if d not in ("data", "__pycache__"))
            out += [os.path.join(folder, n) for n in sorted(names) if n.endswith(suffix)]
    return out


def _run_by_default(path: str) -> bool:
    """Whether ./tests/run runs this file by default: a pytest module of analysis/tests or
    tests/bench, or a ctest script tests/mpi/*.sh or tests/system/*.sh not labelled full."""
    rel = os.path.relpath(path, ROOT)
    folder, name = os.path.split(rel)
    if name.endswith(".py"):
        return folder in ("analysis/tests", "tests/bench") and name.startswith("test_")
    if folder not in ("tests/mpi", "tests/system"):
        return False
    with open(path, encoding="utf-8", errors="replace") as f:
        labels = [line for line in f if line.startswith("# ctest-labels:")]
    return not any("full" in line.split(":", 1)[1].split() for line in labels)


def claims(errors: List[str]) -> List[Tuple[str, str]]:
    out: List[Tuple[str, str]] = []
    for path in _test_files(".py"):
        if os.path.abspath(path) != os.path.abspath(__file__):
            out += [(k, w, path) for k, w in python_claims(path, errors)]
    for path in _test_files(".sh"):
        out += [(k, w, path) for k, w in shell_claims(path, errors)]
    for k, where, path in out:
        if not _run_by_default(path):
            errors.append(f"{where}: claims '{k}' in a file ./tests/run does not run by default "
                          "(a contract lives in analysis/tests/test_*.py, tests/mpi/*.sh or "
                          "tests/system/*.sh, not labelled full)")
    return [(k, w) for k, w, _ in out]


def check(doc_paths: List[str]) -> Tuple[List[str], Dict[str, str], Dict[str, List[str]]]:
    rows, errors = doc_rows(doc_paths)
    claimed: Dict[str, List[str]] = {}
    for k, where in claims(errors):
        claimed.setdefault(k, []).append(where)
    if not rows:
        errors.append("no outcome table (| command | exit | outcome | meaning |) found in docs/")
    for k, where in rows.items():
        tests = claimed.get(k, [])
        if not tests:
            errors.append(f"{where}: outcome '{k}' has no contract test "
                          f"(@{DECORATOR}(...) or '# outcome-contract: {k}')")
        elif len(tests) > 1:
            errors.append(f"{where}: outcome '{k}' is claimed by {len(tests)} tests: {', '.join(tests)}")
    for k, tests in claimed.items():
        if k not in rows:
            errors.append(f"{tests[0]}: claims '{k}', which no outcome table in docs/ lists")
    return errors, rows, claimed


def main(argv: List[str]) -> int:
    doc_paths = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    errors, rows, claimed = check(doc_paths)
    if "--list" in argv:
        for k, where in rows.items():
            print(f"{where}: {k}  <-  {', '.join(claimed.get(k, ['(none)']))}")
    for e in errors:
        print(f"outcome contracts: {e}", file=sys.stderr)
    if errors:
        return 1
    print(f"outcome contracts: {len(rows)} outcomes in the docs' tables, each pinned by one contract test")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
