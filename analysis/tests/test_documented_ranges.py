"""Every whole-number range docs/scenarios.md states ("whole number, A .. B") is the range
the binary's scenario loader enforces, for the key in the kind the table is under.

Four `fabscope list` calls per documented row: A - 1 and B + 1 must be refused (exit 2),
A and B accepted (exit 0). So a bound changed in a kind's source (or in the table) fails
here, whichever end moved and whichever layer checks it. The calls run side by side
(each mostly waits for MPI to start), a few seconds in all.
"""

from __future__ import annotations

import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional, Tuple

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "scenarios.md")

# What a test of each kind needs besides the key under test to load at all, and the
# documented conditions a key applies under ("(`ring` only)" and the like).
KIND_BASE: Dict[str, str] = {
    "latency": "", "bandwidth": "", "bibw": "", "incast": "", "allreduce": "",
    "alltoall": "", "api": "", "example": "",
    "kvpush": "",
    "mix": "    layout: {prefill: 1, decode: 1, tp: 1, frontend: 5}\n",
    "fault": "    fault: loss\n",
    "reference": "    tool: ib_write_bw\n",
}
# kvpush derives its sizes from the model, with the block size inside them.
KIND_SIZES = {"kvpush": "{derive: kv-request, block_tokens: 16, prompt_tokens: [2048]}"}
CONDITION_BASE: Dict[str, str] = {
    "ring": "    role_rotation: ring\n",
    "loss": "",
    "bandwidth": "",
    "bibw": "",
}
# The kind a table's rows are tried in, where the heading names several or none.
SECTION_KIND = {"Keys every test takes": "latency"}
# Rows whose bound is not a number the loader can be asked one below of.
NOT_A_NUMBER = ("the run's ranks", "2^63")

ROW = re.compile(r"^\| `([a-z_.]+)` \| whole number, (-?[0-9^]+) \.\. ([^|(]+?)\s*"
                 r"(?:\(([^)]*) only\))?\s*\|")


def _number(text: str) -> Optional[int]:
    text = text.strip()
    if any(t in text for t in NOT_A_NUMBER):
        return None
    m = re.fullmatch(r"10\^([0-9]+)", text)
    return 10 ** int(m.group(1)) if m else int(text)


def documented_ranges(doc: str = DOC) -> List[Tuple[str, str, int, int, str, int]]:
    """(kind, key, low, high, condition, line) per documented whole-number key of a kind."""
    rows, kind = [], None
    with open(doc, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.startswith("#"):
                title = line.lstrip("#").strip()
                kinds = re.findall(r"`([a-z]+)`", title) if line.startswith("### ") else []
                kind = SECTION_KIND.get(title) or (kinds[0] if kinds and kinds[0] in KIND_BASE
                                                   else None)
                continue
            m = ROW.match(line)
            if not m or kind is None:
                continue
            low, high = _number(m.group(2)), _number(m.group(3))
            if low is None or high is None:
                continue
            condition = (m.group(4) or "").replace("`", "").split(",")[0].strip()
            rows.append((kind, m.group(1), low, high, condition, number))
    return rows


def _scenario(kind: str, key: str, value: int, condition: str) -> str:
    """A one-test scenario of the kind with the key (dotted: nested) set to value."""
    head, _, leaf = key.rpartition(".")
    kind_line = "bandwidth" if kind == "latency" and condition in ("bandwidth", "bibw") else kind
    setting = f"    {head}: {{{leaf}: {value}}}\n" if head else f"    {key}: {value}\n"
    sizes = KIND_SIZES.get(kind, "[64KiB]")
    if f"{key}: " in sizes:     # a key the sizes carry is set there
        sizes, setting = sizes.replace(f"{key}: 16", f"{key}: {value}"), ""
    # the model sizes the serving kinds' messages (the other kinds ignore it); the memory
    # limit is raised so that the largest documented values fit
    return ("name: ranges\nmodel: llama3-8b\nmax_memory_per_rank: 1024GiB\ntests:\n  - name: t\n"
            f"    kind: {kind_line}\n    sizes: {sizes}\n"
            + KIND_BASE[kind] + CONDITION_BASE.get(condition, "") + setting)


def _binary() -> str:
    for candidate in (os.environ.get("FABSCOPE_BIN"), os.path.join(ROOT, "build", "fabscope")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.skip("no fabscope binary (build/fabscope or FABSCOPE_BIN)")


def test_the_table_parser_reads_the_ranges_the_docs_state():
    rows = {(kind, key): (low, high, cond) for kind, key, low, high, cond, _ in documented_ranges()}
    assert rows[("incast", "window")] == (1, 256, "")
    assert rows[("latency", "window")] == (1, 1024, "bandwidth")
    assert rows[("kvpush", "rotation_cycles")] == (1, 1000, "ring")
    assert rows[("latency", "iterations")] == (1, 10 ** 8, "")
    assert len(rows) >= 15


def test_every_documented_whole_number_range_is_the_one_the_loader_enforces(tmp_path):
    binary = _binary()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

    def one(case):
        (kind, key, low, high, condition, line), value = case
        path = tmp_path / f"{kind}-{key}-{value}.yaml"
        path.write_text(_scenario(kind, key, value, condition))
        run = subprocess.run([binary, "list", "--scenario", str(path), "--ranks", "8"],
                             capture_output=True, text=True, timeout=120, env=env)
        if run.returncode == (0 if low <= value <= high else 2):
            return None
        return (f"docs/scenarios.md:{line}: {kind} `{key}` is documented {low} .. {high}; "
                f"{value} gave exit {run.returncode}: {run.stderr.strip()[-160:]!r}")

    cases = [(row, value) for row in documented_ranges()
             for value in (row[2] - 1, row[2], row[3], row[3] + 1)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        problems = [p for p in pool.map(one, cases) if p]
    assert not problems, "\n".join(problems)
