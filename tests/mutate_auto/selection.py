"""Which tests judge a mutant of a given source file.

Python (analysis/fabscope_analysis): the import graph of the package, its test files
(analysis/tests/test_*.py, tests/bench/test_*.py) and their helper modules. A test file
imports a module directly, or through helpers and other modules; its distance is the
number of import steps. A mutant's tests are the test files at the smallest distance
found and the test files named after the module's subsystem (test_diagnose*.py for
diagnosis/, test_accept*.py for accept_*.py, so a module that one small test imports
directly is still judged by the tests of the command that uses it), nearest first (after
the files named after the module and the whole-output files, test_*_outputs.py) and at
most MOST_TEST_FILES of them (on 2 shared cores a mutant that escapes runs them all): `pytest -x` stops at
the first failure, so a caught mutant costs the nearest tests only. With the line map
(the default) the cap applies after it: every such file that runs the mutant's statement
is a candidate, the nearest and subsystem files first, then every other test file that
reaches the module (capped before the map, the nearest serving files cut the two whose
tests failed on mutants of command.py, and test_retest_visits.py, two import steps from
diagnosis/core.py, was never a candidate for it).

C++ (src/): the table CPP_TESTS below, from a source folder to the cmake targets that
compile it into something a test runs, the ctest regex of those tests, and the pytest
files that read what the binary writes.
"""
from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

PACKAGE = "fabscope_analysis"
PACKAGE_DIR = Path("analysis") / PACKAGE
TEST_DIRS = (Path("analysis") / "tests", Path("tests") / "bench")
MOST_TEST_FILES = 6


@dataclass(frozen=True)
class CppTests:
    prefix: str          # a source folder or file prefix under src/
    targets: Tuple[str, ...]
    ctest: str           # ctest -R regex
    pytest: Tuple[str, ...] = ()   # pytest arguments, run with FABSCOPE_BIN set to the mutated binary
    why: str = ""


# Each row: the folder, what must be rebuilt, and the tests that exercise that folder's
# code through the binary (mpi.*) or the unit test program (Suite.Name). The regexes are
# ctest's (CMake's own regex syntax: no \w, \d, \s or (?...) groups).
CPP_TESTS: List[CppTests] = [
    CppTests("src/cli/", ("fabscope",),
             r"^mpi\.(cli|closing_verdict|bad_scenarios|launch_args)$",
             ("analysis/tests/test_binary_outputs.py", "analysis/tests/test_impact.py", "-k",
              "list_model or fabscope_list or fabscope_inventory"),
             "the command line: options, list (and list --model, read by the analysis; list's whole "
             "output for every shipped scenario; inventory's text and JSON), exit codes, the closing "
             "verdict"),
    CppTests("src/driver/", ("fabscope", "fabscope_unit_tests"),
             r"^(mpi\.(allreduce|run_np2|run_np4|batch_figure|file_structure|progress|repeats|data_check|impact)|"
             r"(BatchFigure|CounterSummary|CounterWindow|InstanceAttributes|PatternBudget|ProgressWatch|"
             r"ScopedStatistics|SiteScopes|SummaryTable)\..*)$", ("analysis/tests/test_binary_outputs.py",),
             "the runner: plans (and list's whole output for every shipped scenario), runs, summary "
             "rows, impacts against the quiet instance and the file's structure, a run of one rank (mpi), "
             "its figures, its progress lines and its counter window (unit)"),
    CppTests("src/driver/RankLoss", ("fabscope",),
             r"^mpi\.(silent_rank|stopped_after_test\..*|mpi_blocking_waits|contract_outcomes)$",
             why="a lost or silent rank: the loss round, the line naming the rank and its host, the "
                 "file's lost ranks and the job's end (the runner's own tests never lose a rank)"),
    CppTests("src/kinds/kvpush/", ("fabscope", "fabscope_unit_tests"),
             r"^(mpi\.kv_(push|conditions|one_sided)|KvPush[A-Za-z]*\..*)$",
             ("analysis/tests/test_documented_ranges.py", "analysis/tests/test_binary_outputs.py"),
             "the KV push kind: its configuration and schedule (unit), its runs (mpi), its "
             "keys' documented ranges and the plans list prints"),
    CppTests("src/kinds/incast/", ("fabscope",), r"^mpi\.incast$",
             ("analysis/tests/test_documented_ranges.py", "analysis/tests/test_binary_outputs.py"),
             "the incast kind's runs and per-sender bytes, its keys' documented ranges and the "
             "plans list prints"),
]


def cpp_tests_for(path: str) -> Optional[CppTests]:
    """The longest table row whose prefix the path starts with, or None."""
    rows = [row for row in CPP_TESTS if path.startswith(row.prefix)]
    return max(rows, key=lambda row: len(row.prefix)) if rows else None


def module_name(path: Path) -> str:
    """fabscope_analysis.diagnosis.core for analysis/fabscope_analysis/diagnosis/core.py."""
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST, own: str, is_package: bool) -> Set[str]:
    """The module names a source imports (absolute, for relative imports too)."""
    names: Set[str] = set()
    package = own if is_package else own.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names.add(prefix)
            # 'from . import evidence' and 'from pkg import submodule' import the submodule too
            names.update(f"{prefix}.{alias.name}" for alias in node.names)
    return names


def is_output_test(test: str) -> bool:
    """A whole-output test file (analysis/tests/expected_outputs.py): test_<subsystem>_outputs.py."""
    return Path(test).stem.startswith("test_") and Path(test).stem.endswith("_outputs")


def affinity(path: str) -> str:
    """The word a module's own tests are named by: 'diagnos' for diagnosis/rules.py (test_diagnose*),
    'accept' for accept_limits.py, 'serving' for serving/plan.py."""
    parts = Path(path).relative_to(PACKAGE_DIR).with_suffix("").parts
    return parts[0].split("_")[0][:7]


class ImportGraph:
    """Modules of the analysis and the test files, with who imports whom."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.edges: Dict[str, Set[str]] = {}
        self.files: Dict[str, str] = {}      # node -> repository path
        self.tests: List[str] = []
        for source in sorted((self.root / PACKAGE_DIR).rglob("*.py")):
            rel = source.relative_to(self.root)
            name = module_name(rel)
            self._add(name, rel, source.name == "__init__.py")
        for folder in TEST_DIRS:
            for source in sorted((self.root / folder).glob("*.py")):
                rel = source.relative_to(self.root)
                name = f"{folder.as_posix()}:{source.stem}"
                self._add(name, rel, False, local=folder)
                if source.name.startswith("test_"):
                    self.tests.append(name)

    def _add(self, name: str, rel: Path, is_package: bool, local: Optional[Path] = None):
        tree = ast.parse((self.root / rel).read_bytes(), filename=str(rel))
        own = name if local is None else ""
        imported = _imports(tree, own, is_package)
        edges: Set[str] = set()
        for target in imported:
            parts = target.split(".")
            # importing a.b.c runs a/__init__ and a/b/__init__ too
            edges.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            if local is not None and len(parts) == 1:
                edges.add(f"{local.as_posix()}:{target}")      # a helper next to the test
        self.edges[name] = edges
        self.files[name] = rel.as_posix()

    def distances_from(self, start: str) -> Dict[str, int]:
        seen, queue = {start: 0}, deque([start])
        while queue:
            node = queue.popleft()
            for nxt in self.edges.get(node, ()):
                if nxt in self.files and nxt not in seen:
                    seen[nxt] = seen[node] + 1
                    queue.append(nxt)
        return seen

    def tests_for(self, path: str, most: Optional[int] = MOST_TEST_FILES) -> List[str]:
        """The test files (repository paths) that judge a mutant of `path`, nearest first:
        at most `most` of them; None: those and then every other test file that reaches
        the module, farther ones later, for the line map to choose from."""
        target = module_name(Path(path))
        found = []
        for test in self.tests:
            distance = self.distances_from(test).get(target)
            if distance is not None:
                found.append((distance, self.files[test]))
        if not found:
            return []
        nearest = min(d for d, _ in found)
        family = affinity(path)
        own = Path(path).stem.split("_")[0]
        # a test named after the module itself (test_serving_plan.py for plan_command.py) first,
        # then the whole-output tests (test_*_outputs.py: a command's every figure and line on
        # fixed inputs, seconds to run), then by distance
        ranked = sorted(found, key=lambda f: (own not in Path(f[1]).stem, not is_output_test(f[1]), f))
        chosen = [test for d, test in ranked
                  if d == nearest or Path(test).stem[len("test_"):].startswith(family)]
        if most is None:   # for the line map: every other file that reaches it, after these
            return chosen + [test for d, test in sorted(found) if test not in chosen]
        return chosen[:most]
