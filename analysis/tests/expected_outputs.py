"""Whole outputs of a command on fixed inputs, held against the expectation committed
beside the tests (analysis/tests/expected/GROUP/CASE.json).

These tests detect change, not correctness. Every figure, word and line a command gives
for a fixed input is compared with what it gave when the expectation was recorded, so a
change anywhere on the path (a threshold, a constant, a rounding, a branch) shows, even
where no test of a stated promise reaches it. The promises themselves are tested
elsewhere; these tests make an unreviewed change to what the product prints visible.

A deliberate change is re-recorded with FABSCOPE_RECORD_EXPECTED=1 (the tests then write
the files and pass) and the diff of the expectation files is read in the commit. Floats
are held at 6 significant digits: a different numpy or BLAS may differ below that.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, List

import numpy as np

EXPECTED_DIR = Path(__file__).resolve().parent / "expected"
RECORD = os.environ.get("FABSCOPE_RECORD_EXPECTED") == "1"
DIGITS = 6


def normalise(value: Any) -> Any:
    """JSON-ready, with floats at DIGITS significant digits and non-finite ones as words."""
    if isinstance(value, dict):
        return {str(k): normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    if isinstance(value, np.ndarray):
        return [normalise(v) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        x = float(value)
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return float(f"{x:.{DIGITS}g}")
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"expected_outputs: cannot hold a {type(value).__name__} ({value!r})")


def text_lines(text: str, replace: dict = None) -> List[str]:
    """A command's text as lines, with run-specific strings (temporary paths) replaced."""
    for old, new in (replace or {}).items():
        text = text.replace(str(old), new)
    return text.splitlines()


def _first_difference(got: Any, want: Any, where: str = "") -> str:
    if isinstance(got, dict) and isinstance(want, dict):
        for key in list(want) + [k for k in got if k not in want]:
            if key not in got or key not in want:
                side = "missing" if key not in got else "not expected"
                return f"{where}/{key}: {side}"
            found = _first_difference(got[key], want[key], f"{where}/{key}")
            if found:
                return found
        return ""
    if isinstance(got, list) and isinstance(want, list):
        for i, (g, w) in enumerate(zip(got, want)):
            found = _first_difference(g, w, f"{where}[{i}]")
            if found:
                return found
        if len(got) != len(want):
            return f"{where}: {len(got)} items, expected {len(want)}"
        return ""
    return "" if got == want else f"{where or '/'}: {got!r}, expected {want!r}"


def check_expected(group: str, case: str, value: Any) -> None:
    """Hold `value` (normalised) against expected/GROUP/CASE.json; record it instead
    under FABSCOPE_RECORD_EXPECTED=1."""
    got = normalise(value)
    path = EXPECTED_DIR / group / f"{case}.json"
    if RECORD:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=1, sort_keys=False) + "\n")
        return
    if not path.exists():
        raise AssertionError(f"{path}: no expectation recorded (run with FABSCOPE_RECORD_EXPECTED=1 "
                             "and review the file)")
    want = json.loads(path.read_text())
    difference = _first_difference(got, want)
    assert not difference, (f"{group}/{case} differs from {path.name} at {difference} "
                            "(a deliberate change: re-record with FABSCOPE_RECORD_EXPECTED=1 and review the diff)")
