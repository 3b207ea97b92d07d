"""Checks on result files written by the real fabscope binary.

./tests/run sets FABSCOPE_REAL_H5 to one or more result files (separated by the path
separator, ':' on Linux). Each file is checked against docs/file-format.md and pushed
through every command. Skipped when the variable is not set.
"""

import math
import os
import re
import shutil
import subprocess
import textwrap
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from fabscope_analysis import open_result
from fabscope_analysis.reader import (COUNTER_COLUMNS, EVENT_COLUMNS, RANK_COLUMNS,
                                      SAMPLE_COLUMNS, SUMMARY_COLUMNS)
from helpers import ANALYSIS_DIR, chromium_binary, run_cli, screenshot

REAL = [p for p in os.environ.get("FABSCOPE_REAL_H5", "").split(os.pathsep) if p]
SHIPPED = os.path.join(ANALYSIS_DIR, "criteria", "rack-acceptance.yaml")

pytestmark = pytest.mark.skipif(
    not REAL, reason="FABSCOPE_REAL_H5 is not set (./tests/run sets it to result files "
                     "written by the real fabscope binary)")

ROOT_ATTRS = {"format": str, "format_version": int, "tool_version": str, "run_id": str,
              "started_utc": str, "finished_utc": str, "complete": int, "exit_code": int,
              "command_line": str, "scenario_name": str, "scenario_file": str,
              "scenario_text": str, "overrides": str, "nranks": int, "nhosts": int,
              "hdf5_mode": str, "epoch_offset_ns": int, "seed": int, "launch_preset": str}
TEST_ATTRS = {"index": int, "name": str, "kind": str, "case": str, "condition": str,
              "transport": str, "memory": str, "pattern": str, "pass": str, "bytes": int,
              "window": int, "iterations": int, "warmup": int, "timeout_s": float,
              "metric": str, "sample_divisor": int, "status": str, "error": str,
              "t_start_ns": int, "t_end_ns": int, "retest_of": int, "p50_ns": float,
              "p99_ns": float, "p999_ns": float, "max_ns": float, "mean_ns": float}
BANDWIDTH_ATTRS = {"gbps_p50": float, "gbps_p99": float, "gbps_mean": float}
STATUSES = {"passed", "failed", "timeout", "error", "skipped"}


def _params():
    return [pytest.param(p, id=os.path.basename(p)) for p in REAL] or [None]


@pytest.mark.parametrize("path", _params())
def test_layout_follows_file_format(path):
    problems = []
    with open_result(path, warn_incomplete=False) as run:
        for key, kind in ROOT_ATTRS.items():
            if key not in run.attrs:
                problems.append(f"/ attribute {key} missing")
            elif not isinstance(run.attrs[key], kind):
                problems.append(f"/ attribute {key} is {type(run.attrs[key]).__name__}, "
                                f"expected {kind.__name__}")
        nranks = int(run.attrs["nranks"])
        ranks = run.ranks()
        if list(ranks.columns) != RANK_COLUMNS:
            problems.append(f"/ranks columns {list(ranks.columns)}, expected {RANK_COLUMNS}")
        if sorted(ranks["rank"]) != list(range(nranks)):
            problems.append(f"/ranks has ranks {sorted(ranks['rank'])}, nranks={nranks}")
        if ranks["host"].nunique() != int(run.attrs["nhosts"]):
            problems.append(f"/ranks has {ranks['host'].nunique()} hosts, nhosts="
                            f"{run.attrs['nhosts']}")
        for inst in run.instances():
            where = f"/tests/{inst.group_name}"
            expected = dict(TEST_ATTRS)
            if inst.get("metric") == "bandwidth":
                expected.update(BANDWIDTH_ATTRS)
            for key, kind in expected.items():
                value = inst.attrs.get(key)
                if value is None:
                    problems.append(f"{where} attribute {key} missing")
                elif kind is float and not isinstance(value, (float, int)):
                    problems.append(f"{where} {key} is {type(value).__name__}, expected float")
                elif kind is not float and not isinstance(value, kind):
                    problems.append(f"{where} {key} is {type(value).__name__}, "
                                    f"expected {kind.__name__}")
            if int(inst.group_name) != inst.index:
                problems.append(f"{where} index attribute is {inst.index}")
            if inst.get("metric") not in ("latency", "bandwidth"):
                problems.append(f"{where} metric {inst.get('metric')!r}")
            if inst.get("status") not in STATUSES:
                problems.append(f"{where} status {inst.get('status')!r}")
            if inst.get("condition") != "quiet":
                for key in ("impact_mean", "impact_p99", "quiet_index"):
                    if key not in inst.attrs:
                        problems.append(f"{where} (condition {inst.get('condition')}) lacks "
                                        f"{key}")
            s = inst.samples()
            if list(s.columns) != SAMPLE_COLUMNS:
                problems.append(f"{where}/samples columns {list(s.columns)}")
                continue
            if len(s):
                if (s.t_done_ns < s.t_post_ns).any():
                    problems.append(f"{where}/samples has t_done_ns < t_post_ns")
                if not s["rank"].between(0, nranks - 1).all():
                    problems.append(f"{where}/samples rank outside 0..{nranks - 1}")
                if not s["peer"].between(-1, nranks - 1).all():
                    problems.append(f"{where}/samples peer outside -1..{nranks - 1}")
                # docs/file-format.md: rows with any of flag bits 8-15 (incast aggregate,
                # probe, a retest's control pair) are not part of the headline.
                headline_rows = (s["flags"].to_numpy().astype(np.int64) & 0xFF00) == 0
                lat = ((s.t_done_ns - s.t_post_ns).to_numpy(np.float64)[headline_rows]
                       / inst.sample_divisor)
                scopes = inst.scope_table()
                if len(scopes) > 1:
                    # Several site scopes: no headline over all of them, each scope its own.
                    if not math.isnan(inst.get("p50_ns")):
                        problems.append(f"{where} p50_ns over {len(scopes)} site scopes")
                    if int(scopes["samples"].sum()) != len(lat):
                        problems.append(f"{where}/scopes counts {int(scopes['samples'].sum())} "
                                        f"samples, the table has {len(lat)} headline rows")
                headline = () if len(scopes) > 1 or not len(lat) else (
                    ("p50_ns", np.percentile(lat, 50)), ("p99_ns", np.percentile(lat, 99)),
                    ("max_ns", lat.max()))
                for key, value in headline:
                    if not math.isclose(inst.get(key), value, rel_tol=1e-6, abs_tol=1.0):
                        problems.append(f"{where} {key}={inst.get(key)} but the samples give "
                                        f"{value}")
            summary = inst.summary()
            if list(summary.columns) != SUMMARY_COLUMNS:
                problems.append(f"{where}/summary columns {list(summary.columns)}")
            elif len(s) and int(summary["samples"].sum()) != len(lat):
                problems.append(f"{where}/summary counts {int(summary['samples'].sum())} "
                                f"samples, the table has {len(lat)} headline rows")
            if inst.has("events") and list(inst.events().columns) != EVENT_COLUMNS:
                problems.append(f"{where}/events columns {list(inst.events().columns)}")
            if inst.has("counters"):
                ct = inst.counters()
                if list(ct.columns) != COUNTER_COLUMNS:
                    problems.append(f"{where}/counters columns {list(ct.columns)}")
                elif not (ct["delta"] == ct["after"] - ct["before"]).all():
                    problems.append(f"{where}/counters delta != after - before")
            m = inst.pair_matrix()
            if m is not None and m.shape != (nranks, nranks):
                problems.append(f"{where}/pair_matrix shape {m.shape}")
    assert not problems, f"{path} does not follow docs/file-format.md:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", _params())
def test_commands_on_real_file(path, tmp_path):
    out = run_cli("summary", path)
    assert out.returncode == 0, out.stderr
    assert "==" in out.stdout or "no test instances" in out.stdout
    html = tmp_path / "report.html"
    out = run_cli("report", path, "-o", html)
    assert out.returncode == 0, out.stderr
    if chromium_binary():
        shot = screenshot(html, tmp_path / "report.png")
        assert shot.returncode == 0, shot.stderr[-2000:]
    out = run_cli("accept", path, "--criteria", SHIPPED, "--junit", tmp_path / "accept.xml")
    assert out.returncode in (0, 1), out.stdout + out.stderr
    assert (tmp_path / "accept.xml").exists()
    # The exit code is the verdict: 1 for FAIL (the JUnit file records a failure)
    # and for CANNOT TELL (a rule of the criteria could not tell, nothing failed).
    suites = ET.parse(tmp_path / "accept.xml").getroot()
    failures = sum(len(case.findall("failure")) for case in suites.iter("testcase"))
    verdict = re.search(r"^verdict: (PASS|FAIL|CANNOT TELL)\b", out.stdout, re.M)
    assert verdict, out.stdout[-2000:]
    assert (out.returncode == 1) == (verdict[1] != "PASS"), (out.returncode, verdict[1], out.stdout[-2000:])
    assert (verdict[1] == "FAIL") == (failures > 0), (verdict[1], failures, out.stdout[-2000:])
    out = run_cli("compare", path, path, "--resamples", "50")
    assert out.returncode == 0, out.stderr
    # A file against itself: no row's verdict may claim a difference.
    assert not re.search(r"(worse|better)$", out.stdout, re.M), out.stdout
    assert "0 worse, 0 better" in out.stdout, out.stdout
    metrics = tmp_path / "fabscope.prom"
    out = run_cli("export", "--openmetrics", metrics, path)
    assert out.returncode == 0, out.stderr
    assert metrics.read_text().endswith("# EOF\n")
    if shutil.which("promtool"):   # test_export.py skips visibly without it
        check = subprocess.run(["promtool", "check", "metrics"], input=metrics.read_text(),
                               text=True, capture_output=True, timeout=60)
        assert check.returncode == 0 and not check.stdout.strip(), check.stdout + check.stderr


@pytest.mark.parametrize("path", _params())
def test_accept_verdicts_on_real_samples(path, tmp_path):
    """accept's verdicts on a real file: limits set from the file's own samples just
    above and just below one instance's p50 must pass and fail, naming the instance.
    Validity findings are allowed here: tests/run runs 4 ranks on CI's 2 CPUs, and the
    oversubscription finding (tested in test_accept.py and tests/mpi/validity.sh) is not what this test checks."""
    with open_result(path, warn_incomplete=False) as run:
        chosen = next((i for i in run.instances()
                       if i.get("metric") == "latency" and i.get("status") == "passed"
                       and len(i.samples()) and len(i.scope_table()) <= 1), None)
        if chosen is None:
            pytest.skip(f"{os.path.basename(path)} has no passed latency instance")
        s = chosen.samples()
        s = s[(s["flags"].to_numpy().astype(np.int64) & 0xFF00) == 0]  # the headline rows
        p50_us = float(np.percentile((s.t_done_ns - s.t_post_ns).to_numpy(np.float64)
                                     / chosen.sample_divisor, 50)) / 1e3
        name, nbytes, condition = chosen.get("name"), int(chosen.get("bytes")), chosen.get("condition")
        index = chosen.index
    verdicts = {}
    for label, limit in (("loose", p50_us * 1.5), ("tight", p50_us * 0.5)):
        criteria = tmp_path / f"{label}.yaml"
        criteria.write_text(textwrap.dedent(f"""\
            fabscope_criteria: 1
            require_complete: false
            allowed_status: null
            allow_validity: true
            rules:
              - name: {label} p50
                match: {{name: "{name}", condition: {condition}, bytes: {{min: {nbytes}, max: {nbytes}}}}}
                limits: {{p50_us: {{max: {limit!r}}}}}
            """))
        junit = tmp_path / f"{label}.xml"
        out = run_cli("accept", path, "--criteria", criteria, "--junit", junit)
        cases = list(ET.parse(junit).getroot().iter("testcase"))
        failed = sorted(c.get("name") for c in cases if c.findall("failure"))
        verdicts[label] = (out.returncode, failed)
        assert cases, (label, out.stdout[-2000:])
    # Only the rule decides: loose passes everything, tight fails the chosen instance alone.
    assert verdicts["loose"] == (0, []), verdicts
    assert verdicts["tight"][0] == 1 and len(verdicts["tight"][1]) == 1, verdicts
    assert verdicts["tight"][1][0].startswith(f"test {index:04d} {name} "), verdicts
