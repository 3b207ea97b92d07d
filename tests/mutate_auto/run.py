"""`tests/mutate --auto N`: runs a seeded sample of generated mutants in the scratch tree.

tests/mutate passes in its own scratch-tree machinery (Scratch, Deadline, run, build_env,
run_ctest), so both modes share one way of making, resetting and building the tree and one
vocabulary: caught, escaped, broken.
"""
from __future__ import annotations

import ast
import difflib
import json
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .mutants import Mutant, python_equivalent_by_construction, python_tree
from .sample import all_sites, chosen_mutants, module_of, parse_indices, resolve_prefixes, seeded_order
from .selection import MOST_TEST_FILES, ImportGraph, cpp_tests_for

PYTEST = ["nice", "/usr/bin/python3", "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider"]


def diff_of(m: Mutant, data: bytes) -> str:
    before = data.decode("utf-8").splitlines(keepends=True)
    after = m.apply(data).decode("utf-8").splitlines(keepends=True)
    return "".join(difflib.unified_diff(before, after, f"a/{m.path}", f"b/{m.path}", n=1))


def statement_lines(original: bytes, m: Mutant) -> List[int]:
    """The lines of the innermost statement holding the mutant's text: a test that runs none
    of them cannot see the change (a token's bytecode may sit on its statement's first line)."""
    first, last = m.line, m.line + m.original.count("\n")
    around = [(node.end_lineno - node.lineno, node.lineno, node.end_lineno) for node in ast.walk(ast.parse(original))
              if isinstance(node, ast.stmt) and node.lineno <= first and last <= node.end_lineno]
    if around:
        _, top, bottom = min(around)
        first, last = min(top, first), max(bottom, last)
    return list(range(first, last + 1))


class AutoRun:
    def __init__(self, args, root: Path, scratch, deadline_type, run, run_ctest):
        self.a, self.root, self.scratch = args, root, scratch
        self.Deadline, self.run, self.run_ctest = deadline_type, run, run_ctest
        self.graph: Optional[ImportGraph] = None
        self.unpatched: Dict[str, bool] = {}         # pytest node id -> passes without a mutant
        self.cpp_baseline: Dict[str, Tuple[List[str], int]] = {}   # ctest regex -> (failing, ran)
        self.trees: Dict[str, int] = {}              # a mutated module's syntax tree -> first index
        self.linemap: Dict[str, Optional[dict]] = {}  # test file -> lines it runs (linemap.py)

    # ---------------------------------------------------------------- python
    def pytest(self, args: List[str], log: Path, deadline) -> Tuple[int, List[str], int]:
        rc, text = self.run(PYTEST + args, self.scratch.path, log, deadline, self.scratch.env)
        failed = sorted(set(re.findall(r"^(?:FAILED|ERROR) (\S+)", text, re.M)))
        passed = re.search(r"(\d+) passed", text)
        return rc, failed, int(passed.group(1)) if passed else 0

    def fails_unpatched(self, failed: List[str], log: Path) -> List[str]:
        """Of the tests that failed with the mutant, those that fail without it too."""
        unchecked = [t for t in failed if t not in self.unpatched]
        if unchecked:
            self.scratch.reset()
            rc, still, _ = self.pytest(unchecked, log, self.Deadline(self.a.timeout))
            for t in unchecked:
                self.unpatched[t] = rc == 0 or t not in still
        return [t for t in failed if not self.unpatched[t]]

    def tests_running(self, tests: List[str], path: str, lines: List[int], log: Path) -> List[str]:
        """Of the selected test files, those that run any of the lines (all of them where a line
        runs outside a test's call: imports, module and class bodies, shared fixtures)."""
        missing = [t for t in tests if t not in self.linemap]
        if missing:
            self.scratch.reset()
            out = self.scratch.logs / "linemap.json"
            env = dict(self.scratch.env, MUTATE_LINEMAP_OUT=str(out),
                       MUTATE_LINEMAP_PACKAGE=str(self.scratch.path / "analysis" / "fabscope_analysis"),
                       PYTHONPATH=os.pathsep.join(filter(None, [self.scratch.env.get("PYTHONPATH", ""),
                                                                 str(self.scratch.path / "tests")])))
            out.unlink(missing_ok=True)
            for test in missing:
                # one file a run: a file's map must not depend on which files ran before it
                rc, _ = self.run(PYTEST + ["-p", "mutate_auto.linemap", test], self.scratch.path, log,
                                 self.Deadline(self.a.build_timeout), env)
                self.linemap[test] = json.loads(out.read_text()) if out.exists() and rc != 124 else None
                out.unlink(missing_ok=True)
        chosen = []
        for test in tests:
            ran = self.linemap[test]
            if ran is None:                 # no map (it ran past its limit): the file judges
                chosen.append(test)
                continue
            who = set()
            for line in lines:
                who.update(ran.get(path, {}).get(str(line), ()))
            if who:
                chosen.append(test)
        return chosen

    def judge_python(self, index: int, m: Mutant, original: bytes, mutated: bytes, log: Path):
        why = python_equivalent_by_construction(original, mutated)
        if why:
            return "broken", why, []
        tree = m.path + python_tree(mutated)
        if tree in self.trees:
            return "broken", f"equivalent by construction: the same syntax tree as mutant {self.trees[tree]}", []
        self.trees[tree] = index
        tests = self.graph.tests_for(m.path, MOST_TEST_FILES if self.a.no_linemap else None)
        if not tests:
            return "broken", "no test file imports this module", []
        if not self.a.no_linemap:
            lines = statement_lines(original, m)
            tests = self.tests_running(tests, m.path, lines, log)[:MOST_TEST_FILES]
            if not tests:
                return "escaped", f"no selected test runs lines {lines[0]}-{lines[-1]}", []
        (self.scratch.path / m.path).write_bytes(mutated)
        deadline = self.Deadline(self.a.timeout)
        rc, failed, passed = self.pytest(["-x", *tests], log, deadline)
        if rc == 124:
            return "broken", "ran past its time limit", tests
        if rc not in (0, 1):
            # collection errors, an import that fails: the mutant broke loading, which a test saw
            failed = failed or [f"pytest exit {rc}"]
        if not failed:
            return ("escaped", f"{passed} test(s) passed", tests) if passed else \
                ("broken", "the selected tests ran nothing", tests)
        if failed[0].startswith("pytest exit"):
            return "caught", failed[0], tests
        real = [t for t in failed if t not in self.fails_unpatched(failed, log)]
        if not real:
            return "broken", "the failing tests fail without the mutant too: " + ", ".join(failed), tests
        return "caught", real[0], tests

    # ---------------------------------------------------------------- C++
    def cpp_baseline_for(self, row, log: Path):
        """The row's tests on the unpatched tree: which fail anyway (left out of the judging)."""
        if row.ctest not in self.cpp_baseline:
            self.scratch.reset()
            if self.scratch.compile(list(row.targets), log, self.Deadline(self.a.build_timeout)) != 0:
                raise SystemExit(f"tests/mutate: the unpatched tree does not build {row.targets} (see {log})")
            failed, ran, skipped = self.run_ctest(self.scratch, row.ctest, log, self.Deadline(self.a.build_timeout))
            if row.pytest:
                _, py_failed, py_passed = self.binary_pytest(row, log, self.Deadline(self.a.build_timeout))
                failed, ran = failed + py_failed, ran + py_passed + len(py_failed)
            self.cpp_baseline[row.ctest] = (failed, ran - skipped)
            print(f"tests/mutate: unpatched {row.prefix}: {ran} test(s), {len(failed)} failing, {skipped} skipped",
                  flush=True)
        return self.cpp_baseline[row.ctest]

    def binary_pytest(self, row, log: Path, deadline):
        """The row's analysis tests that run the binary, given the scratch tree's (mutated) one."""
        env = dict(self.scratch.env, FABSCOPE_BIN=str(self.scratch.build / "fabscope"))
        rc, text = self.run(PYTEST + ["-x", *row.pytest], self.scratch.path, log, deadline, env)
        failed = sorted(set(re.findall(r"^(?:FAILED|ERROR) (\S+)", text, re.M)))
        passed = re.search(r"(\d+) passed", text)
        if rc not in (0, 1, 5) and not failed and rc != 124:
            failed = [f"pytest exit {rc}"]
        return rc, failed, int(passed.group(1)) if passed else 0

    def judge_cpp(self, m: Mutant, mutated: bytes, log: Path):
        row = cpp_tests_for(m.path)
        if row is None:
            return "broken", "no row of the C++ test table covers this folder", []
        failing_anyway, ran = self.cpp_baseline_for(row, self.scratch.logs / "auto-baseline.log")
        if ran == 0:
            return "broken", f"the tests {row.ctest} ran nothing unpatched", [row.ctest]
        self.scratch.reset()
        (self.scratch.path / m.path).write_bytes(mutated)
        deadline = self.Deadline(self.a.timeout)
        built = self.scratch.compile(list(row.targets), log, deadline)
        if built == 124:
            # a header's mutant, or the one after it, rebuilds everything that includes it
            return "broken", "its build ran past the time limit", [row.ctest]
        if built != 0:
            return "broken", "does not build", [row.ctest]
        # the tests that fail anyway are left out, so that ctest may stop at the first failure
        extra = ["--stop-on-failure"]
        if failing_anyway:
            extra += ["-E", "^(" + "|".join(re.escape(t) for t in failing_anyway) + ")$"]
        failed, ran, skipped = self.run_ctest(self.scratch, row.ctest, log, deadline, extra)
        real = [t for t in failed if t not in failing_anyway]
        if "time limit" in failed:
            return "broken", "ran past its time limit", [row.ctest]
        if not real and row.pytest:
            rc, py_failed, py_passed = self.binary_pytest(row, log, deadline)
            if rc == 124:
                return "broken", "ran past its time limit", [row.ctest, *row.pytest]
            real = [t for t in py_failed if t not in failing_anyway]
            ran += py_passed + len(py_failed)
        if real:
            return "caught", real[0] + (f" (+{len(real) - 1} more)" if len(real) > 1 else ""), [row.ctest]
        return "escaped", f"{ran - skipped} test(s) passed", [row.ctest]

    # ---------------------------------------------------------------- the sample
    def execute(self, chosen: List[Tuple[int, Mutant]]):
        rows = []
        try:
            self._execute(chosen, rows)
        except KeyboardInterrupt:
            print(f"tests/mutate: interrupted after {len(rows)} mutant(s); the scores below are theirs", flush=True)
        self.scratch.reset()
        return rows

    def _execute(self, chosen, rows):
        for index, m in chosen:
            t0 = time.monotonic()
            log = self.scratch.logs / f"auto-{self.a.seed}-{index}.log"
            log.write_text(f"mutant ({self.a.seed}, {index}): {m.path}:{m.line} {m.describe()}\n")
            self.scratch.reset()
            original = (self.scratch.path / m.path).read_bytes()
            mutated = m.apply(original)
            if m.language == "python":
                result, detail, tests = self.judge_python(index, m, original, mutated, log)
            else:
                result, detail, tests = self.judge_cpp(m, mutated, log)
            seconds = time.monotonic() - t0
            rows.append((index, m, result, detail, seconds))
            print(f"{index:5d}  {m.path}:{m.line}  {m.describe()[:70]:<70}  {result:<8} {seconds:5.0f} s  "
                  f"{detail[:100]}", flush=True)


def score_table(rows) -> List[str]:
    per: Dict[str, Dict[str, int]] = {}
    for _, m, result, _, _ in rows:
        per.setdefault(module_of(m.path), {"caught": 0, "escaped": 0, "broken": 0})[result] += 1
    lines = ["| module | mutants | caught | escaped | broken | killed |", "|---|---|---|---|---|---|"]
    total = {"caught": 0, "escaped": 0, "broken": 0}
    for module in sorted(per):
        c = per[module]
        for k in total:
            total[k] += c[k]
        judged = c["caught"] + c["escaped"]
        lines.append(f"| `{module}` | {sum(c.values())} | {c['caught']} | {c['escaped']} | {c['broken']} | "
                     f"{100 * c['caught'] / judged:.0f} % |" if judged else
                     f"| `{module}` | {sum(c.values())} | 0 | 0 | {c['broken']} | - |")
    judged = total["caught"] + total["escaped"]
    lines.append(f"| all | {sum(total.values())} | {total['caught']} | {total['escaped']} | {total['broken']} | "
                 + (f"{100 * total['caught'] / judged:.0f} % |" if judged else "- |"))
    return lines


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def show(a, root: Path, prefixes, indices=None) -> int:
    """--auto-list and --auto-show: read the checkout as it is (a run reads HEAD: the same
    mutants when the target files are committed)."""
    import subprocess
    changed = subprocess.run(["git", "status", "--porcelain", "--", *prefixes], cwd=root, capture_output=True,
                             text=True).stdout.strip()
    if changed:
        print("tests/mutate: note: target files differ from HEAD, which a run mutates:\n" + changed, file=sys.stderr)
    sites = all_sites(root, prefixes)
    order = seeded_order(len(sites), a.seed)
    if a.auto_show is not None:
        if not 0 <= a.auto_show < len(sites):
            raise SystemExit(f"tests/mutate: index {a.auto_show} is outside 0..{len(sites) - 1}")
        m = sites[order[a.auto_show]]
        print(f"# mutant ({a.seed}, {a.auto_show}): {m.path}:{m.line} {m.describe()}")
        print(diff_of(m, (root / m.path).read_bytes()), end="")
        return 0
    try:
        chosen = chosen_mutants(sites, a.seed, a.auto or 0, indices)
    except ValueError as e:
        raise SystemExit(f"tests/mutate: {e}")
    for index, m in chosen:
        print(f"{index:5d}  {m.path}:{m.line}  {m.describe()}")
    return 0


def main(a, root: Path, Scratch, Deadline, run, build_env, run_ctest) -> int:
    a.timeout = a.timeout or 300
    prefixes = tuple(resolve_prefixes(a.only))
    try:
        indices = parse_indices(a.auto_indices) if a.auto_indices else None
    except ValueError as e:
        raise SystemExit(f"tests/mutate: {e}")
    if a.auto_show is not None or a.auto_list:
        return show(a, root, prefixes, indices)
    # a run started in the background ignores SIGINT: SIGTERM stops it the same way,
    # with the scores of the mutants done so far
    signal.signal(signal.SIGTERM, _interrupt)
    env = build_env()
    # the analysis tests that load what they write in the real binary skip without one
    # (test_serving_plan.py): the checkout's own build serves, the scratch tree's is mutated
    if not env.get("FABSCOPE_BIN") and (root / "build" / "fabscope").exists():
        env["FABSCOPE_BIN"] = str(root / "build" / "fabscope")
    scratch = Scratch(a.dir or str(root / "build-mutate-auto"), env)
    # the sites are listed on the scratch tree, which is HEAD: the sample names committed code
    needs_build = any(p.startswith("src") for p in prefixes)
    began = time.monotonic()
    scratch.logs.mkdir(parents=True, exist_ok=True)
    head = scratch.prepare(scratch.logs / "auto-baseline.log", Deadline(a.build_timeout), configure=needs_build,
                           cmake_args=("-DCMAKE_UNITY_BUILD=ON",))
    sites = all_sites(scratch.path, prefixes)
    try:
        chosen = chosen_mutants(sites, a.seed, a.auto or 0, indices)
    except ValueError as e:
        raise SystemExit(f"tests/mutate: {e}")
    print(f"tests/mutate: {len(chosen)} generated mutant(s) of {len(sites)} sites, seed {a.seed}, "
          f"of {head[:12]} in {scratch.path}", flush=True)
    auto = AutoRun(a, root, scratch, Deadline, run, run_ctest)
    auto.graph = ImportGraph(scratch.path)
    rows = auto.execute(chosen)
    total = time.monotonic() - began
    table = score_table(rows)
    survivors = [r for r in rows if r[2] == "escaped"]
    broken = [r for r in rows if r[2] == "broken"]
    print("\n" + "\n".join(table))
    print(f"\nsurvivors ({len(survivors)}):")
    for index, m, _, detail, _ in survivors:
        print(f"  ({a.seed}, {index}) {m.path}:{m.line}  {m.describe()}  [{detail}]")
    print(f"\n{len(rows)} mutants in {total:.0f} s (logs: {scratch.logs})")
    if a.markdown:
        what = f"--auto-indices {a.auto_indices}" if indices is not None else f"--auto {a.auto}"
        text = [f"`tests/mutate {what} --seed {a.seed}"
                + "".join(f" --only {p}" for p in (a.only or [])) + f"` on {head[:12]}, {total:.0f} s.", ""]
        text += table + ["", "| mutant | where | change | result | detail |", "|---|---|---|---|---|"]
        text += [f"| ({a.seed}, {i}) | `{m.path}:{m.line}` | {m.kind}: `{m.original.splitlines()[0][:60]}` → "
                 f"`{m.replacement.splitlines()[0][:60] if m.replacement else '(removed)'}` | {r} | "
                 f"{d.replace('|', '/')[:120]} |" for i, m, r, d, _ in sorted(survivors + broken, key=lambda r: r[0])]
        Path(a.markdown).write_text("\n".join(text) + "\n")
    return 0
