"""Contract tests of the analysis commands: one test per row of docs/analysis.md's "Exit codes"
table (tests/structure/check_outcome_contracts.py holds each row to one test), each asserting
the exact exit code and the exact verdict word or line, the third outcome (CANNOT TELL, cannot
tell, SKIP, exit 2) included. Rows an older test already pins exactly are claimed there
instead (`@outcome_contract` in test_verdict, test_summary, test_accept, test_impact,
test_export, test_diagnose, test_serving_plan, test_serving_fit_attribution;
`check_outcome_contracts.py --list` prints which test holds each row).

Files: the session's synthetic runs (conftest `files`: clean passes the shipped criteria,
standard fails them) and a serving run (serving_files). The commands run in this process
(helpers.run_main: main()'s return is the process's exit code, __main__ is sys.exit(main()));
test_the_process_exits_with_mains_code checks that once through a real process.
"""

import re
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import pytest

from contracts import outcome_contract
from helpers import run_cli, run_main
from serving_files import serving_file
from synthetic import VALIDITY_DTYPE

SLO = "itl_p99=50ms,ttft_p99=2s"
# fit's first line: "fit DEPLOYMENT at SLO: STATUS[: CHECKS]", then the placement it assumed
PLACEMENT = r"( \[placement: [^]]*\])?( \[paths: [^]]*\])?"   # where it ran, over what path


@pytest.fixture(scope="module")
def serving(tmp_path_factory):
    """A serving run (TP all-reduce and KV push, quiet and under incast) that meets SLO."""
    return serving_file(tmp_path_factory.mktemp("contract") / "serving.h5")


def _criteria(tmp_path, rules: str, name="criteria.yaml") -> str:
    path = tmp_path / name
    path.write_text("fabscope_criteria: 1\nrequire_complete: true\nallowed_status: [passed]\n"
                    "rules:\n" + rules)
    return str(path)


def _first_line(proc) -> str:
    return proc.stdout.splitlines()[0] if proc.stdout else ""


def _last_line(proc) -> str:
    return proc.stdout.rstrip("\n").splitlines()[-1] if proc.stdout.strip() else ""


# --- report (summary, impact and the rest: claimed by older tests) ----------------------------

@outcome_contract("report", 2, "—")
def test_report_of_a_non_fabscope_file_exits_2_writing_nothing(tmp_path):
    other, html = tmp_path / "other.h5", tmp_path / "r.html"
    with h5py.File(other, "w") as f:
        f.attrs["format"] = "something else"
    p = run_main("report", other, "-o", html)
    assert p.returncode == 2 and "other.h5" in p.stderr, p.stderr
    assert not html.exists()


# --- diagnose: the third answer (fit and not fit: test_diagnose) -------------------------------

@outcome_contract("diagnose", 1, "cannot tell")
def test_diagnose_without_a_pair_test_cannot_tell_and_exits_1(serving):
    p = run_main("diagnose", serving)
    assert p.returncode == 1, p.stderr
    assert _first_line(p) == ("cannot tell: no quiet pair test in the file relates ranks to several "
                              "peers (add a test with pattern: all-pairs, rails, cross-rail, ring, "
                              "bisection or hierarchical)"), p.stdout


# --- fit ---------------------------------------------------------------------------------------

@outcome_contract("fit", 0, "PASS")
def test_fit_within_the_slo_passes_and_exits_0(serving):
    p = run_main("fit", serving, "--slo", SLO)
    assert p.returncode == 0, p.stdout + p.stderr
    assert re.fullmatch(r"fit llama3-70b TP8 .*\): PASS" + PLACEMENT, _first_line(p)), _first_line(p)


@outcome_contract("fit", 1, "FAIL")
def test_fit_over_the_slo_fails_and_exits_1(serving):
    p = run_main("fit", serving, "--slo", "itl_p99=1us")
    assert p.returncode == 1, p.stdout + p.stderr
    assert re.fullmatch(r"fit llama3-70b TP8 .*\): FAIL: itl_p99" + PLACEMENT, _first_line(p)), _first_line(p)
    assert "  itl_p99: " in p.stdout and p.stdout.splitlines()[1].endswith("FAIL]")


@outcome_contract("fit", 2, "—")
def test_fit_without_an_objective_exits_2(serving):
    p = run_main("fit", serving)
    assert p.returncode == 2
    assert not p.stdout and "--slo" in p.stderr, p.stderr


# --- accept (text) -----------------------------------------------------------------------------

def _cannot_tell_criteria(files, tmp_path) -> str:
    """A p99 limit strictly inside the clean run's interval of pingpong (quiet): the file's
    own interval, read from accept's details, so the limit is where the data cannot tell."""
    probe = _criteria(tmp_path, "  - name: quiet p99\n    match: {kind: latency, condition: quiet}\n"
                                "    limits:\n      p99_us: {max: 1000}\n", "probe.yaml")
    details = run_main("accept", files["clean"], "--criteria", probe, "--junit", tmp_path / "p.xml")
    assert details.returncode == 0, details.stdout
    text = (tmp_path / "p.xml").read_text()
    low, high = (float(x) for x in text.split("p99_us = ")[1].split("[95% interval ")[1]
                 .split("]")[0].split(", "))
    assert low < high, text
    return _criteria(tmp_path, "  - name: quiet p99\n    match: {kind: latency, condition: quiet}\n"
                               f"    limits:\n      p99_us: {{max: {(low + high) / 2!r}}}\n")


@outcome_contract("accept", 1, "verdict: CANNOT TELL")
@outcome_contract("verdict", 1, "verdict: CANNOT TELL")
@outcome_contract("summary", 0, "verdict: CANNOT TELL")
def test_a_rule_that_cannot_tell_makes_the_run_cannot_tell_and_exits_1(files, tmp_path):
    """No check failed, but the one rule cannot tell: the run is not shown fit, so it is not
    PASS. accept and verdict exit 1 (as diagnose and fit for their third answer); summary
    exits 0 with the same first line."""
    criteria = _cannot_tell_criteria(files, tmp_path)
    p = run_main("accept", files["clean"], "--criteria", criteria)
    assert p.returncode == 1, p.stdout
    assert "CANNOT TELL  quiet p99: test 0000 pingpong [latency, 8 B, condition quiet]" in p.stdout
    line = _last_line(p)
    assert line.startswith("verdict: CANNOT TELL (6 of 7 checks passed; 1 check cannot tell "
                           "(quiet p99); criteria "), line
    assert "-> CANNOT TELL" in p.stdout, p.stdout
    v = run_main("verdict", files["clean"], "--criteria", criteria, "--brief")
    assert v.returncode == 1 and v.stdout.strip() == line, v.stdout
    summary = run_main("summary", files["clean"], "--criteria", criteria)
    assert summary.returncode == 0 and _first_line(summary) == line, summary.stdout


def _with_validity(files, tmp_path) -> str:
    """The clean run with a /validity finding (its ranks shared the CPUs), as the runner writes it."""
    path = tmp_path / "shared.h5"
    path.write_bytes(open(files["clean"], "rb").read())
    with h5py.File(path, "r+") as f:
        if "validity" in f:
            del f["validity"]
        f.create_dataset("validity", data=np.array(
            [(b"*", b"oversubscribed", 6.0, 2.0, b"ranks share CPUs")], dtype=VALIDITY_DTYPE))
        f.attrs["validity_findings"] = np.int64(1)
    return str(path)


@outcome_contract("accept", 0, "CANNOT TELL")
def test_a_validity_finding_cannot_tell_but_leaves_the_verdict_to_the_rules(files, tmp_path):
    """Doubtful numbers (ranks sharing CPUs) only make figures worse: the validity check says
    CANNOT TELL and is counted; the run passes on rules that all pass."""
    criteria = _criteria(tmp_path, "  - name: quiet p99\n    match: {kind: latency, condition: quiet}\n"
                                   "    limits:\n      p99_us: {max: 1000000}\n")
    p = run_main("accept", _with_validity(files, tmp_path), "--criteria", criteria)
    assert p.returncode == 0, p.stdout
    assert "CANNOT TELL  validity: oversubscribed on every host" in p.stdout, p.stdout
    assert _last_line(p).startswith("verdict: PASS (7 of 8 checks passed; 1 check cannot tell "
                                    "(validity); criteria "), _last_line(p)


def _with_a_skipped_instance(files, tmp_path) -> str:
    """The clean run with its incast instance (0003) recorded as skipped (a reference tool
    not installed: status `skipped`, its reason in `error`)."""
    path = tmp_path / "skipped.h5"
    path.write_bytes(open(files["clean"], "rb").read())
    with h5py.File(path, "r+") as f:
        f["tests/0003"].attrs["status"] = "skipped"
        f["tests/0003"].attrs["error"] = "osu_bw is not installed"
    return str(path)


@outcome_contract("accept", 0, "SKIP")
def test_accept_of_a_skipped_instance_says_skip_and_exits_0(files, tmp_path):
    p = run_main("accept", _with_a_skipped_instance(files, tmp_path))
    assert p.returncode == 0, p.stdout
    assert "SKIP  status: test 0003 incast-7to1 [incast, 262144 B, condition quiet]" in p.stdout
    assert _last_line(p).startswith("verdict: PASS (") and "; 1 test instance skipped (0003); " \
        in _last_line(p), _last_line(p)


# --- accept --junit --------------------------------------------------------------------------

def _cases(path):
    suite = ET.parse(path).getroot().find("testsuite")
    return suite, {(c.get("classname"), c.get("name")): c for c in suite.findall("testcase")}


@outcome_contract("accept --junit", 0, "<testcase>")
def test_junit_of_a_passing_run_is_bare_testcases(files, tmp_path):
    xml = tmp_path / "a.xml"
    p = run_main("accept", files["clean"], "--junit", xml)
    assert p.returncode == 0, p.stdout
    suite, cases = _cases(xml)
    assert len(cases) == 21 and suite.get("failures") == "0" and suite.get("skipped") == "0"
    assert suite.get("errors") == "0"
    for case in cases.values():
        assert [child.tag for child in case if child.tag != "system-out"] == [], ET.tostring(case)
    assert ("fabscope.accept.run complete", files["clean"]) in cases


@outcome_contract("accept --junit", 1, "<skipped>")
def test_junit_of_a_rule_that_cannot_tell_is_skipped_and_exits_1(files, tmp_path):
    xml = tmp_path / "ct.xml"
    p = run_main("accept", files["clean"], "--criteria", _cannot_tell_criteria(files, tmp_path),
                 "--junit", xml)
    assert p.returncode == 1, p.stdout
    suite, cases = _cases(xml)
    case = cases[("fabscope.accept.quiet p99", "test 0000 pingpong [latency, 8 B, condition quiet]")]
    assert [c.tag for c in case if c.tag != "system-out"] == ["skipped"], ET.tostring(case)
    assert "the interval holds the limit" in case.find("skipped").get("message")
    assert suite.get("skipped") == "1" and suite.get("failures") == "0"


@outcome_contract("accept --junit", 0, "<skipped>")
def test_junit_of_a_skipped_instance_is_skipped_and_exits_0(files, tmp_path):
    xml = tmp_path / "skip.xml"
    p = run_main("accept", _with_a_skipped_instance(files, tmp_path), "--junit", xml)
    assert p.returncode == 0, p.stdout
    suite, cases = _cases(xml)
    case = cases[("fabscope.accept.status", "test 0003 incast-7to1 [incast, 262144 B, condition quiet]")]
    assert [c.tag for c in case if c.tag != "system-out"] == ["skipped"], ET.tostring(case)
    assert "osu_bw is not installed" in case.find("skipped").get("message")
    assert suite.get("failures") == "0"


@outcome_contract("accept --junit", 1, "<failure>")
def test_junit_of_a_failed_check_is_a_failure(files, tmp_path):
    xml = tmp_path / "f.xml"
    p = run_main("accept", files["standard"], "--junit", xml)
    assert p.returncode == 1
    suite, cases = _cases(xml)
    failed = [c for c in cases.values() if c.find("failure") is not None]
    assert suite.get("failures") == str(len(failed)) and failed and suite.get("errors") == "0"
    case = cases[("fabscope.accept.status", "test 0005 pingpong-empty [latency, 64 B, condition quiet]")]
    assert [c.tag for c in case if c.tag != "system-out"] == ["failure"], ET.tostring(case)
    assert case.find("failure").get("message").startswith("status error (allowed: passed)")
    assert all(c.find("error") is None for c in cases.values())


@outcome_contract("accept --junit", 2, "—")
def test_junit_is_not_written_when_accept_exits_2(files, tmp_path):
    xml = tmp_path / "none.xml"
    p = run_main("accept", files["clean"], "--criteria", tmp_path / "no-such-criteria.yaml",
                 "--junit", xml)
    assert p.returncode == 2 and "no-such-criteria.yaml" in p.stderr, p.stderr
    assert not xml.exists()


# --- verdict -----------------------------------------------------------------------------------

@outcome_contract("verdict", 2, "—")
def test_verdict_of_a_run_naming_missing_criteria_exits_2(files, tmp_path):
    p = run_main("verdict", files["clean"], "--criteria", tmp_path / "gone.yaml")
    assert p.returncode == 2 and not p.stdout and "gone.yaml" in p.stderr, p.stderr


# --- export ------------------------------------------------------------------------------------

@outcome_contract("export", 0, "—")
def test_export_of_a_failing_run_exits_0_and_writes_it(files, tmp_path):
    out = tmp_path / "m.prom"
    p = run_main("export", files["standard"], "--openmetrics", out)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"wrote {out} (") and out.read_text().rstrip().endswith("# EOF")


# --- the process ---------------------------------------------------------------------------------

def test_the_process_exits_with_mains_code(files):
    """run_main's codes are the process's: python3 -m fabscope_analysis exits with main()'s
    return, as the contract tests above assume (one process: each costs an interpreter)."""
    p = run_cli("verdict", files["standard"], "--brief")
    assert p.returncode == 1 and p.stdout.startswith("verdict: FAIL ("), p.stdout + p.stderr
