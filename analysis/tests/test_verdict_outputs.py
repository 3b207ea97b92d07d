"""verdict's line (full and --brief) and export's OpenMetrics text on fixed runs, held
against the recorded expectation (expected_outputs.py: a change detector; the promises
are test_verdict*.py's and test_export.py's). Both surfaces say the same verdict as
accept, whose whole output test_accept_outputs.py holds."""

import re

import pytest

from expected_outputs import check_expected, text_lines
from helpers import ANALYSIS_DIR, run_main

NAMES = ["standard", "clean", "slower", "small", "same", "incomplete"]


def _replace(files):
    out = {str(p): f"<{name}>" for name, p in files.items()}
    out[ANALYSIS_DIR] = "<analysis>"
    return out


def _held(out, files):
    return {"exit": out.returncode, "stdout": text_lines(out.stdout, _replace(files)),
            "stderr": text_lines(re.sub(r"/tmp/\S+", "<path>", out.stderr))}


@pytest.mark.parametrize("name", NAMES)
def test_verdict(files, name):
    check_expected("verdict", name, {"full": _held(run_main("verdict", files[name]), files),
                                     "brief": _held(run_main("verdict", files[name], "--brief"), files)})


def test_export_openmetrics(files):
    out = run_main("export", "--openmetrics", "-", *(files[n] for n in NAMES))
    check_expected("verdict", "export-openmetrics", _held(out, files))
