#!/usr/bin/python3
"""The mutation catalogue (tests/mutations/) still fits the tree it is meant to break.

tests/mutate runs on demand, not in CI; this cheap check runs in CI so that a break
that no longer applies, names a test that no longer exists, or lacks its header is
seen the day the code under it changes. For every tests/mutations/*.patch:

- its name is <area>-<short-name>.patch (lower case words joined by '-');
- its header has '# break:', '# promise:' and '# ctest:' and/or '# pytest:', no other
  '# key:' line, and a diff follows;
- 'git apply --check' accepts it on the sources being tested (HEAD in CI);
- its ctest regex matches at least one test of the build folder (when one is given),
  and each pytest path exists;
and tests/mutate compiles and lists every patch by name.

usage: check_mutation_catalogue.py [BUILD_DIR]   (default: $FABSCOPE_BUILD_DIR)
Exit 0 when all hold, 1 naming each problem, 77 (skipped) outside a git checkout.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(os.environ.get("FABSCOPE_SOURCE_DIR") or Path(__file__).resolve().parents[2])
CATALOGUE = ROOT / "tests" / "mutations"
NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)+\.patch$")
HEADER = re.compile(r"^# ([a-z]+):\s*(.*?)\s*$")
KEYS = {"break", "promise", "ctest", "pytest", "build"}


def header_of(text):
    """(fields, problems) of a patch's header: the lines before its first diff."""
    fields, problems = {}, []
    lines = text.splitlines()
    if not any(line.startswith("diff --git ") for line in lines):
        problems.append("no 'diff --git' section")
    for number, line in enumerate(lines, 1):
        if line.startswith("diff --git "):
            break
        match = HEADER.match(line)
        if not match:
            continue
        key, value = match.groups()
        if key not in KEYS:
            problems.append(f"line {number}: unknown header '{key}:' (expected {', '.join(sorted(KEYS))})")
        elif not value:
            problems.append(f"line {number}: '{key}:' is empty")
        elif key in fields:
            problems.append(f"line {number}: '{key}:' given twice")
        fields[key] = value
    for key in ("break", "promise"):
        if key not in fields:
            problems.append(f"the header lacks '# {key}:'")
    if "ctest" not in fields and "pytest" not in fields:
        problems.append("the header names no test ('# ctest:' or '# pytest:')")
    return fields, problems


def unit_test_names():
    """Suite.Name of every GoogleTest test in tests/unit (parameterised ones without their
    instantiation's prefix and parameter: a regex anchored at the suite still finds them)."""
    names = []
    for source in sorted((ROOT / "tests" / "unit").glob("*.cpp")):
        for suite, name in re.findall(r"^TEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)\s*\)", source.read_text(errors="replace"),
                                      re.MULTILINE):
            names.append(f"{suite}.{name}")
    return names


def ctest_names(build_dir):
    out = subprocess.run(["ctest", "--test-dir", str(build_dir), "-N"], capture_output=True, text=True,
                         timeout=60)
    names = re.findall(r"Test +#\d+: (\S+)", out.stdout)
    # A build without the unit test program (./tests/run's main tree: the unit tests run
    # in its sanitizer tree) still has their names in the sources.
    cache = Path(build_dir) / "CMakeCache.txt"
    if cache.exists() and re.search(r"^FABSCOPE_BUILD_UNIT_TESTS:BOOL=OFF$", cache.read_text(errors="replace"),
                                    re.MULTILINE):
        names += unit_test_names()
    return names


def check_patch(path, tests):
    fields, problems = header_of(path.read_text(errors="replace"))
    if not NAME.match(path.name):
        problems.append("the name is not <area>-<short-name>.patch in lower case")
    applied = subprocess.run(["git", "apply", "--check", str(path)], cwd=ROOT, capture_output=True, text=True,
                             timeout=60)
    if applied.returncode != 0:
        problems.append("git apply --check fails: " + " / ".join(applied.stderr.strip().splitlines()[:2])
                        + " (tests/mutate --check says whether its lines moved; --rebase re-writes it)")
    regex = fields.get("ctest")
    if regex and tests is not None:
        try:
            if not any(re.search(regex, t) for t in tests):
                problems.append(f"ctest regex '{regex}' matches no test of the build")
        except re.error as e:
            problems.append(f"ctest regex '{regex}' does not parse: {e}")
    for arg in fields.get("pytest", "").split():
        if not arg.startswith("-") and not (ROOT / arg.split("::")[0]).exists():
            problems.append(f"pytest path {arg.split('::')[0]} does not exist")
    return problems


def check_runner(patches):
    runner = ROOT / "tests" / "mutate"
    problems = []
    try:
        compile(runner.read_text(), str(runner), "exec")
    except SyntaxError as e:
        return [f"tests/mutate does not compile: {e}"]
    listed = subprocess.run([str(runner), "--list"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    if listed.returncode != 0:
        problems.append(f"tests/mutate --list exits {listed.returncode}: {listed.stderr.strip()[-300:]}")
    for patch in patches:
        if not re.search(rf"^{re.escape(patch.stem)}\s", listed.stdout, re.M):
            problems.append(f"tests/mutate --list does not list {patch.stem}")
    return problems


def main():
    inside = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=ROOT, capture_output=True, text=True)
    if inside.returncode != 0:
        print("check_mutation_catalogue: not a git checkout; nothing to apply the catalogue to (skipped)")
        return 77
    build_dir = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("FABSCOPE_BUILD_DIR")
    tests = ctest_names(build_dir) if build_dir else None
    patches = sorted(CATALOGUE.glob("*.patch"))
    failures = []
    if not patches:
        failures.append("tests/mutations/ holds no patch")
    for patch in patches:
        failures += [f"{patch.relative_to(ROOT)}: {p}" for p in check_patch(patch, tests)]
    failures += check_runner(patches)
    for failure in failures:
        print(f"check_mutation_catalogue: {failure}")
    print(f"check_mutation_catalogue: {len(patches)} break(s) checked"
          f"{'' if tests is not None else ' (no build folder: ctest names not checked)'}, "
          f"{len(failures)} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
