#!/usr/bin/python3
"""The C++ of src/, kernels/ and tests/ is in the style .clang-format writes down.

Two checks, each problem printed on a line of its own:
    FILE:LINE: N characters (at most 120)
    FILE: not as clang-format writes it (clang-format -i FILE shows the difference)
The line length is checked everywhere. The layout is checked with the clang-format
the tree was formatted with (major version FORMAT_MAJOR, Debian 12's); another
version lays some constructs out differently, so with another one, or none, that
half is left out and said so.

usage: check_code_format.py
Exit 0 when every file holds, 1 otherwise.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(os.environ.get("FABSCOPE_SOURCE_DIR") or Path(__file__).resolve().parents[2])
FOLDERS = ["src", "kernels", "tests"]
SUFFIXES = {".cpp", ".hpp", ".h", ".cu", ".cuh"}
MAX_COLUMNS = 120
FORMAT_MAJOR = 14


def sources():
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file():
                yield path


def long_lines(path):
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if len(line) > MAX_COLUMNS:
            yield f"{path.relative_to(ROOT)}:{number}: {len(line)} characters (at most {MAX_COLUMNS})"


def clang_format():
    """The clang-format to check the layout with, or None and why not."""
    tool = shutil.which("clang-format")
    if not tool:
        return None, "no clang-format on PATH"
    version = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    match = re.search(r"version (\d+)\.", version)
    if not match or int(match.group(1)) != FORMAT_MAJOR:
        return None, f"clang-format is '{version.strip()}', not version {FORMAT_MAJOR} the tree was formatted with"
    return tool, ""


def misformatted(tool, paths):
    out = subprocess.run([tool, "--dry-run", f"--style=file:{ROOT / '.clang-format'}", *map(str, paths)],
                         capture_output=True, text=True, cwd=ROOT)
    files = sorted({line.split(":", 1)[0] for line in out.stderr.splitlines() if ": warning:" in line})
    if out.returncode != 0 and not files:
        sys.exit(f"clang-format failed: {out.stderr.strip()}")
    return [f"{Path(f).resolve().relative_to(ROOT)}: not as clang-format writes it "
            f"(clang-format -i FILE shows the difference)" for f in files]


def main():
    paths = list(sources())
    problems = [p for path in paths for p in long_lines(path)]
    tool, why_not = clang_format()
    if tool:
        problems += misformatted(tool, paths)
    for problem in problems:
        print(problem)
    layout = "and their layout" if tool else f"(layout not checked: {why_not})"
    print(f"{len(paths)} C++ files, line length {layout}: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
