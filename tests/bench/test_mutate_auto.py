"""The generated-mutant tool behind `tests/mutate --auto` (tests/mutate_auto/): its sample is
the same for the same seed, every mutant is one change at one site that still parses, and a
module is judged by the tests that reach it."""
import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from mutate_auto.mutants import cpp_sites, python_equivalent_by_construction, python_sites  # noqa: E402
from mutate_auto.sample import (DEFAULT_TARGETS, all_sites, resolve_prefixes, sample,  # noqa: E402
                                seeded_order, target_files)
from mutate_auto.selection import CPP_TESTS, MOST_TEST_FILES, ImportGraph, cpp_tests_for  # noqa: E402

PYTHON_TARGETS = tuple(p for p in DEFAULT_TARGETS if p.startswith("analysis/"))
CPP_TARGETS = tuple(p for p in DEFAULT_TARGETS if p.startswith("src/"))


@pytest.fixture(scope="module")
def python_universe():
    return all_sites(ROOT, PYTHON_TARGETS)


@pytest.fixture(scope="module")
def graph():
    return ImportGraph(ROOT)


def changed_span(before: bytes, after: bytes):
    """(first, last) byte of `before` that differs from `after`, by common prefix and suffix."""
    prefix = 0
    while prefix < min(len(before), len(after)) and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(before), len(after)) - prefix and before[-1 - suffix] == after[-1 - suffix]:
        suffix += 1
    return prefix, len(before) - suffix


def statement_heads(source: bytes):
    """Each statement's own part, in order: a simple statement whole, a compound one
    (if, for, def, ...) without the statements it holds."""
    heads = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.stmt):
            fields = {name: value for name, value in ast.iter_fields(node)
                      if not (isinstance(value, list) and value and
                              isinstance(value[0], (ast.stmt, ast.excepthandler, ast.match_case)))}
            heads.append((type(node).__name__, repr({k: ast.dump(v) if isinstance(v, ast.AST) else
                                                      [ast.dump(x) if isinstance(x, ast.AST) else x for x in v]
                                                      if isinstance(v, list) else v for k, v in fields.items()})))
    return heads


def one_statement_differs(before_heads, after: bytes) -> bool:
    """Whether exactly one statement's own part changed (and no statement came or went)."""
    after_heads = statement_heads(after)
    return len(before_heads) == len(after_heads) and sum(x != y for x, y in zip(before_heads, after_heads)) == 1


def test_the_same_seed_gives_the_same_sample_and_another_seed_another():
    first = sample(ROOT, DEFAULT_TARGETS, 7, 200)
    assert first == sample(ROOT, DEFAULT_TARGETS, 7, 200), "generating twice must give the same mutants"
    universe = all_sites(ROOT, DEFAULT_TARGETS)
    assert [universe[i] for i in seeded_order(len(universe), 7)[:40]] == first[:40]
    assert [universe[i] for i in seeded_order(len(universe), 8)[:40]] != first[:40]
    # the seed's order is Python's Mersenne Twister shuffle: pinned, so a sample named in
    # docs/hardening.md stays the same mutants on another machine or Python 3 version
    assert seeded_order(10, 1) == [6, 8, 9, 7, 5, 3, 0, 4, 1, 2]
    assert {m.language for m in first} == {"python", "cpp"}


def test_every_python_mutant_is_one_change_that_parses_to_another_tree(python_universe):
    chosen = sample(ROOT, PYTHON_TARGETS, 3, 100)
    kinds = set()
    sources, heads = {}, {}
    for m in chosen:
        data = sources.setdefault(m.path, (ROOT / m.path).read_bytes())
        mutated = m.apply(data)
        assert python_equivalent_by_construction(data, mutated) is None, f"{m.path}:{m.line} {m.describe()}"
        if m.path not in heads:
            heads[m.path] = statement_heads(data)
        assert one_statement_differs(heads[m.path], mutated), f"{m.path}:{m.line} {m.describe()}"
        before, after = data.splitlines(), mutated.splitlines()
        site_lines = m.original.count("\n") + 1
        assert before[:m.line - 1] == after[:m.line - 1], f"{m.path}:{m.line}: a line above the site changed"
        assert before[m.line - 1 + site_lines:] == after[len(after) - (len(before) - m.line + 1 - site_lines):]
        kinds.add(m.kind)
    assert kinds == {"operator", "comparison", "boundary", "logic", "constant", "return"}
    assert len({(m.path, m.start, m.replacement) for m in python_universe}) == len(python_universe)


def test_python_sites_of_a_known_snippet():
    source = (b'"""doc 1 < 2"""\n'
              b'def f(x: int = 3) -> int:\n'
              b'    # a comment: 4 + 5\n'
              b'    if x < 2 and not x.ok:\n'
              b'        return max(x, 0)\n'
              b'    y = f"{x + 1}" + "s"\n'
              b'    return x * 2\n')
    found = {(m.line, m.original, m.replacement, m.kind) for m in python_sites("x.py", source)}
    assert found == {
        (2, "3", "4", "constant"), (2, "3", "2", "constant"),
        (4, "<", "<=", "boundary"), (4, "<", ">=", "comparison"), (4, "2", "3", "constant"),
        (4, "2", "1", "constant"), (4, "and", "or", "logic"), (4, "not ", "", "logic"),
        (5, "max", "min", "boundary"), (5, "max(x, 0)", "None", "return"), (5, "0", "1", "constant"),
        (7, "*", "/", "operator"), (7, "2", "3", "constant"), (7, "2", "1", "constant"),
        (7, "x * 2", "None", "return")}


def test_cpp_rules_skip_comments_strings_templates_and_the_preprocessor():
    source = (b'#include <vector>\n'
              b'#define LIMIT 4 + 5\n'
              b'// a comment: a < b\n'
              b'template <typename T> int f(std::vector<T>& v, int n) {\n'
              b'  const char* s = "x < 1";  /* 7 - 8 */\n'
              b'  if (n < 2 && !v.empty()) return std::max(n, 0);\n'
              b'  std::string t = std::to_string(n) + " items";\n'
              b'  return n * 0x10 - 1.5f;\n'
              b'}\n')
    found = {(m.line, m.original, m.replacement, m.kind) for m in cpp_sites("x.cpp", source)}
    assert found == {
        (6, "<", "<=", "boundary"), (6, "<", ">=", "comparison"), (6, "2", "3", "constant"),
        (6, "2", "1", "constant"), (6, "&&", "||", "logic"), (6, "!", "", "logic"),
        (6, "max", "min", "boundary"), (6, "0", "1", "constant"),
        (8, "*", "/", "operator"), (8, "-", "+", "operator"), (8, "1.5f", "3.0f", "constant")}


def test_every_cpp_mutant_is_one_change_on_one_line():
    chosen = sample(ROOT, CPP_TARGETS, 5, 200)
    sources = {}
    for m in chosen:
        data = sources.setdefault(m.path, (ROOT / m.path).read_bytes())
        mutated = m.apply(data)
        first, last = changed_span(data, mutated)
        assert m.start <= first and last <= m.end
        assert data.count(b"\n") == mutated.count(b"\n") and b"\n" not in data[m.start:m.end]
        # whole tokens only: a number or word is never cut out of a longer one
        if re.match(r"\w", m.original):
            assert not re.match(rb"\w", data[m.start - 1:m.start]) and not re.match(rb"\w", data[m.end:m.end + 1])


def test_a_module_is_judged_by_the_tests_that_import_it(graph):
    rules = graph.tests_for("analysis/fabscope_analysis/diagnosis/rules.py")
    # first the subsystem's whole-output file, then a test file that imports it directly
    assert rules[0] == "analysis/tests/test_diagnose_outputs.py", rules
    assert rules[1] in ("analysis/tests/test_diagnose_leaf_rows.py", "analysis/tests/test_diagnose_paths.py",
                        "analysis/tests/test_diagnose_sparse.py"), rules
    # named for its subsystem (past the cap of six: a candidate for the line map)
    assert "analysis/tests/test_diagnose.py" in graph.tests_for("analysis/fabscope_analysis/diagnosis/rules.py", None)
    assert not any("serving" in t for t in rules)
    plan = graph.tests_for("analysis/fabscope_analysis/serving/plan.py")
    assert plan[0] == "analysis/tests/test_serving_plan.py"
    assert "analysis/tests/test_diagnose.py" not in plan
    # named after the module: first, before the cap of files cuts the list
    assert graph.tests_for("analysis/fabscope_analysis/serving/plan_command.py")[0] == \
        "analysis/tests/test_serving_plan.py"
    slo = graph.tests_for("analysis/fabscope_analysis/serving/slo.py")
    assert "analysis/tests/test_serving_fit.py" in slo and "analysis/tests/test_accept.py" not in slo
    for path in target_files(ROOT, PYTHON_TARGETS):
        if not path.endswith("__init__.py"):
            assert graph.tests_for(path), f"no test file reaches {path}"


def test_whole_output_tests_come_right_after_the_tests_named_for_the_module(graph):
    """test_*_outputs.py holds a command's every figure and line on fixed inputs: it is
    among the files a mutant is judged by, before nearer files the cap would keep instead."""
    for module, first in (("accept_limits.py", "test_accept_outputs.py"),
                          ("compare_stats.py", "test_compare_outputs.py"),
                          ("verdict.py", "test_verdict_outputs.py")):
        chosen = graph.tests_for(f"analysis/fabscope_analysis/{module}")
        assert chosen[0] == f"analysis/tests/{first}", (module, chosen)
    assert graph.tests_for("analysis/fabscope_analysis/cli.py", None)[0] == "analysis/tests/test_cli_outputs.py"


def test_the_cap_of_test_files_comes_after_the_line_map(graph):
    """serving/command.py is reached by more serving test files than the cap: uncapped
    (for the line map to choose from) the list holds test_serving_placement.py, whose
    tests fail on its mutants and which the capped list of the six nearest leaves out
    (test_serving_fit_nodes.py, once left out too, now imports command.py itself and comes
    right after the whole-output file); diagnosis/core.py's holds test_retest_visits.py,
    neither nearest nor named for its subsystem, whose tests fail on two of its mutants."""
    path = "analysis/fabscope_analysis/serving/command.py"
    capped, every = graph.tests_for(path), graph.tests_for(path, None)
    assert len(capped) == MOST_TEST_FILES and every[:MOST_TEST_FILES] == capped
    test = "analysis/tests/test_serving_placement.py"
    assert test in every and test not in capped, (test, capped)
    # the subsystem's whole-output file first, then the nearest (it imports command.py itself)
    assert capped[:2] == ["analysis/tests/test_serving_outputs.py",
                          "analysis/tests/test_serving_fit_nodes.py"], capped
    core = graph.tests_for("analysis/fabscope_analysis/diagnosis/core.py", None)
    assert "analysis/tests/test_retest_visits.py" in core
    assert "analysis/tests/test_retest_visits.py" not in graph.tests_for(
        "analysis/fabscope_analysis/diagnosis/core.py")


def test_every_cpp_target_folder_has_its_tests_in_the_table():
    for prefix in CPP_TARGETS:
        row = cpp_tests_for(prefix + "Any.cpp")
        assert row is not None and row.targets and row.ctest, prefix
        assert (ROOT / row.prefix).is_dir()
        assert all((ROOT / arg.split("::")[0]).exists() for arg in row.pytest if arg.startswith("analysis/"))
        re.compile(row.ctest)
        # ctest reads the regex with CMake's engine, which has no class escapes or (?...) groups:
        # KvPush\w* there matched none of the unit tests
        assert not re.search(r"\\[wdsWDSb]|\(\?|\*\?|\+\?", row.ctest), row.ctest
    kvpush = cpp_tests_for("src/kinds/kvpush/KvPushConfig.cpp")
    assert re.search(kvpush.ctest, "mpi.kv_push") and re.search(kvpush.ctest, "KvPushConfig.ConditionErrors")
    assert not re.search(kvpush.ctest, "mpi.incast")
    assert re.search(cpp_tests_for("src/kinds/incast/IncastKind.cpp").ctest, "mpi.incast")
    loss = cpp_tests_for("src/driver/RankLoss.cpp")
    assert all(re.search(loss.ctest, t) for t in ("mpi.silent_rank", "mpi.stopped_after_test.closing"))
    assert not re.search(loss.ctest, "mpi.run_np2") and cpp_tests_for("src/driver/Runner.cpp") != loss
    assert cpp_tests_for("src/transport/MpiTransport.cpp") is None
    assert len({row.prefix for row in CPP_TESTS}) == len(CPP_TESTS)


def test_auto_indices_rerun_the_same_mutants_under_the_same_indices():
    from mutate_auto.sample import chosen_mutants, parse_indices
    assert parse_indices("12, 3,7-9,8") == [3, 7, 8, 9, 12]
    for bad in ("x", "3-", "9-7", "-2", ""):
        with pytest.raises(ValueError, match="--auto-indices"):
            parse_indices(bad)
    prefixes = resolve_prefixes(["analysis/fabscope_analysis/diagnosis/"])
    universe = all_sites(ROOT, prefixes)
    first = chosen_mutants(universe, 31, 40)
    assert [i for i, _ in first] == list(range(40)) and [m for _, m in first] == sample(ROOT, prefixes, 31, 40)
    assert chosen_mutants(universe, 31, 40, [1, 7, 33]) == [first[1], first[7], first[33]]
    with pytest.raises(ValueError, match="outside"):
        chosen_mutants(universe, 31, 40, [len(universe)])


def test_only_narrows_the_default_targets():
    assert resolve_prefixes(["analysis/"]) == list(PYTHON_TARGETS)
    assert resolve_prefixes(["src/"]) == list(CPP_TARGETS)
    assert resolve_prefixes(["src/transport/", "src/cli/"]) == ["src/transport/", "src/cli/"]
    assert resolve_prefixes([]) == list(DEFAULT_TARGETS)


def test_the_generator_reads_every_target_file():
    files = target_files(ROOT, DEFAULT_TARGETS)
    assert "analysis/fabscope_analysis/verdict.py" in files and "src/kinds/incast/IncastKind.cpp" in files
    assert not any(f.startswith("analysis/tests/") for f in target_files(ROOT, ("analysis/",)))
    for path in files:
        if path.endswith(".py"):
            ast.parse((ROOT / path).read_bytes())


def test_a_mutant_is_run_by_the_test_files_that_run_its_statement(tmp_path):
    """The line map (linemap.py): a line a test's call runs is that test file's; a module-level
    line, and one a fixture's setup runs, is everyone's ("*"); a line no test runs is nobody's.
    statement_lines: a mutant's lines are its innermost statement's."""
    import json
    import os
    import subprocess
    from mutate_auto.mutants import Mutant
    from mutate_auto.run import statement_lines
    package = tmp_path / "analysis" / "fabscope_analysis"
    package.mkdir(parents=True)
    source = ("LIMIT = 3\n"                                   # 1: module level
              "def used(x):\n"                                # 2
              "    if x > LIMIT:\n"                           # 3
              "        return (x +\n"                         # 4
              "                1)\n"                          # 5
              "    return 0\n"                                # 6
              "def unused():\n"                               # 7
              "    return 2\n"                                # 8
              "def in_setup():\n"                             # 9
              "    return 5\n")                               # 10
    (package / "__init__.py").write_text("")
    (package / "mod.py").write_text(source)
    (package / "lazy.py").write_text("X = 1\n")     # imported inside a test: still module level
    tests = tmp_path / "analysis" / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text("import pytest\nfrom fabscope_analysis.mod import used, in_setup\n"
                                     "@pytest.fixture\ndef value():\n    return in_setup()\n"
                                     "def test_used(value):\n    assert used(value) == 6\n")
    (tests / "test_b.py").write_text("from fabscope_analysis.mod import used\n"
                                     "def test_small():\n    assert used(1) == 0\n"
                                     "def test_lazy():\n    from fabscope_analysis import lazy\n"
                                     "    assert lazy.X == 1\n")
    # a command the test runs as a new Python: its lines are the test file's too
    (tests / "test_c.py").write_text("import subprocess, sys\n"
                                     "def test_child():\n    subprocess.run([sys.executable, '-c', "
                                     "'from fabscope_analysis.mod import unused; unused()'], check=True)\n")
    out = tmp_path / "map.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "analysis"), str(ROOT / "tests")]),
               MUTATE_LINEMAP_OUT=str(out), MUTATE_LINEMAP_PACKAGE=str(package))
    for test in ("analysis/tests/test_a.py", "analysis/tests/test_b.py", "analysis/tests/test_c.py"):
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                               "mutate_auto.linemap", test], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        lines = json.loads(out.read_text())["analysis/fabscope_analysis/mod.py"]
        if test.endswith("test_a.py"):
            assert lines["1"] == ["*"] and lines["10"] == ["*"]
            assert lines["4"] == [test] and lines["3"] == [test]
            assert "6" not in lines and "8" not in lines
        elif test.endswith("test_c.py"):
            assert lines["8"] == [test] and "4" not in lines and lines["1"] == ["*"]
        else:
            assert lines["6"] == [test] and "4" not in lines
            assert json.loads(out.read_text())["analysis/fabscope_analysis/lazy.py"]["1"] == ["*"]
    data = source.encode()
    plus = Mutant("analysis/fabscope_analysis/mod.py", data.index(b"+"), data.index(b"+") + 1, "+", "-",
                  "operator", 4)
    assert statement_lines(data, plus) == [4, 5]
    gt = Mutant("analysis/fabscope_analysis/mod.py", data.index(b">"), data.index(b">") + 1, ">", ">=",
                "boundary", 3)
    assert statement_lines(data, gt) == [3, 4, 5]
