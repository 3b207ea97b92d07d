"""One verdict everywhere, one figure everywhere, exit codes, the launcher ignore list."""

import io
import re

import numpy as np

from fabscope_analysis import open_result
from fabscope_analysis.inventory import is_launcher_fact, is_launcher_variable
from fabscope_analysis.report import build_report
from fabscope_analysis.run_analysis import RunAnalysis
from fabscope_analysis.resampling import pooled, side_units
from fabscope_analysis.stats import figure_value
from fabscope_analysis.verdict import compute_verdict
from helpers import run_cli, run_main
from synthetic import write_matrix_run
from contracts import outcome_contract

RACK = "analysis/criteria/rack-acceptance.yaml"


def _rack(path):
    import os
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "criteria", "rack-acceptance.yaml")


@outcome_contract("summary", 0, "verdict: PASS")
@outcome_contract("summary", 0, "verdict: FAIL")
@outcome_contract("report", 0, "—")
@outcome_contract("accept", 0, "verdict: PASS")
@outcome_contract("accept", 1, "verdict: FAIL")
@outcome_contract("verdict", 0, "verdict: PASS")
@outcome_contract("verdict", 1, "verdict: FAIL")
def test_verdict_agrees_across_surfaces_failing_and_passing(files, tmp_path):
    """(In this process: the real processes' exit codes are test_compare_exit_codes'.)"""
    for name, expect in (("standard", 1), ("clean", 0)):
        path, crit = files[name], _rack(files[name])
        verdict = run_main("verdict", path, "--criteria", crit, "--brief")
        accept = run_main("accept", path, "--criteria", crit)
        summary = run_main("summary", path, "--criteria", crit)
        html = tmp_path / f"{name}.html"
        report = run_main("report", path, "--criteria", crit, "-o", html)
        assert verdict.returncode == accept.returncode == expect, verdict.stdout + accept.stdout
        assert summary.returncode == report.returncode == 0
        line = verdict.stdout.strip()
        assert line.startswith("verdict: " + ("FAIL" if expect else "PASS"))
        assert accept.stdout.strip().splitlines()[-1] == line
        assert summary.stdout.splitlines()[0] == line
        text = html.read_text()
        # the page opens with the verdict, before any table
        assert text.index('id="verdict"') < text.index("<table")
        assert line.replace("'", "&#x27;").replace("&", "&amp;").split(" (")[0] in text


DIAGNOSE_CRITERIA = """fabscope_criteria: 1
allowed_status: [passed]
diagnose: {diagnose}
rules:
  - {{name: samples, match: {{kind: "*"}}, limits: {{samples: {{min: 1}}}}}}
"""


def _surfaces(path, criteria, tmp_path):
    """verdict, verdict --brief, accept, summary and report on one file: (exit codes,
    the verdict line each shows, the reasons each lists, the report's verdict block)."""
    import html as htmllib
    full = run_main("verdict", path, "--criteria", criteria)
    brief = run_main("verdict", path, "--criteria", criteria, "--brief")
    accept = run_main("accept", path, "--criteria", criteria)
    summary = run_main("summary", path, "--criteria", criteria)
    page = tmp_path / "page.html"
    report = run_main("report", path, "--criteria", criteria, "-o", page)
    assert summary.returncode == report.returncode == 0, summary.stderr + report.stderr
    text = page.read_text()
    assert text.count('id="verdict"') == 1, "one verdict block, not two"
    block = text[text.index('id="verdict"'):text.index("run id")]
    shown = htmllib.unescape(re.search(r"<b>(verdict: [^<]*)</b>", block).group(1))
    lines = {"verdict": full.stdout.splitlines()[0], "brief": brief.stdout.strip(),
             "accept": accept.stdout.strip().splitlines()[-1],
             "summary": summary.stdout.splitlines()[0], "report": shown}
    reasons = {"verdict": [l[4:] for l in full.stdout.splitlines()[1:]],
               "summary": [l[4:] for l in summary.stdout.splitlines()[1:]
                           if l.startswith("  - ")],
               "report": [htmllib.unescape(x) for x in re.findall(r"<li>([^<]*)</li>", block)]}
    return (full.returncode, brief.returncode, accept.returncode), lines, reasons, block, accept


def test_one_verdict_with_culprits_on_every_surface(tmp_path):
    """diagnose's culprits are reasons of the one verdict: verdict, summary, the top of
    the report and accept show the same line, the same culprits and the same exit code,
    on a file with a culprit (fails), a clean file (passes) and, with diagnose off in
    the criteria, the culprit file again (passes: no second, contradicting verdict)."""
    culprit, clean = tmp_path / "culprit.h5", tmp_path / "clean.h5"
    write_matrix_run(culprit, receive={2: 0.3})
    write_matrix_run(clean, seed=4)
    on, off = tmp_path / "on.yaml", tmp_path / "off.yaml"
    on.write_text(DIAGNOSE_CRITERIA.format(diagnose="true"))
    off.write_text(DIAGNOSE_CRITERIA.format(diagnose="false"))
    for path, criteria, expect in ((culprit, on, 1), (clean, on, 0), (culprit, off, 0)):
        codes, lines, reasons, block, accept = _surfaces(path, criteria, tmp_path)
        assert codes == (expect,) * 3, (path, criteria, codes, lines)
        assert len(set(lines.values())) == 1, lines
        line = lines["brief"]
        assert line.startswith("verdict: " + ("FAIL" if expect else "PASS")), line
        assert reasons["verdict"] == reasons["summary"] == reasons["report"], reasons
        if expect:  # the culprit, named the same way everywhere
            assert "culprits fh2" in line
            assert len(reasons["verdict"]) == 1 and reasons["verdict"][0].startswith(
                "culprit fh2 (rank 2")
            assert "FAIL  diagnose: fh2" in accept.stdout
            assert '<td class="l">fh2</td>' in block and "receive" in block
        else:
            assert reasons["verdict"] == [] and "fh2" not in line
        if criteria == off:  # no diagnose verdict of its own on the page
            assert "not fit" not in block and '<td class="l">fh2</td>' not in block
            assert "do not use diagnose" in block
        elif not expect:
            assert "diagnose: fit" in block


def test_report_highlights_exactly_the_failed_figures(files):
    with open_result(files["standard"]) as result:
        verdict = compute_verdict(result, _rack(files["standard"]))
        text = build_report(result, verdict=verdict)
    marks = verdict.highlights()
    assert marks, "the standard file fails rack criteria on some figure"
    # every red cell of the summary table is a failed figure, and their count matches
    summary = text[text.index('id="summary"'):text.index("</table>", text.index('id="summary"'))]
    red = len(re.findall(r'class="[^"]*bad', summary))
    assert red == sum(len(cols) for cols in marks.values())


def test_default_criteria_for_a_local_run_is_not_rack(files):
    with open_result(files["clean"]) as result:
        result.attrs["nhosts"] = 1
        v = compute_verdict(result)
        assert v.criteria.path.endswith("local.yaml") and "one host" in v.source
        result.attrs["nhosts"] = 4
        assert compute_verdict(result).criteria.path.endswith("rack-acceptance.yaml")


def test_verdict_takes_extra_reasons(files):
    from fabscope_analysis.verdict import Reason
    with open_result(files["clean"]) as result:
        v = compute_verdict(result, _rack(files["clean"]))
        assert v.passed
        v.add_reason(Reason("culprit", "culprit: rank 3 (h1) sender", instance=None))
        assert not v.passed and "culprit: rank 3" in v.line()


def test_one_figure_definition_everywhere(files):
    """summary, accept and compare show the same p50/p99/p99.9 for one file."""
    from fabscope_analysis.compare import run_compare
    with open_result(files["standard"]) as a, open_result(files["standard"]) as b:
        frame = run_compare([a, b], None, resamples=20, stream=io.StringIO())
        analysis = RunAnalysis(a)
        summary = analysis.summary_frame()
        for _, row in frame.iterrows():
            s = summary[(summary["case"] == row["case"]) & (summary["label"] == row["label"])]
            assert len(s) == 1, row["case"]
            assert np.isclose(s.iloc[0][row["stat"]], row["ref_value"], equal_nan=True)
        inst = analysis.instances[0]
        st = analysis.stats(inst)
        times, nbytes = pooled(side_units([analysis.samples(inst)], inst.metric))
        assert np.isclose(figure_value(inst.metric, "p99", times, nbytes), st.p99)


def test_serial_retest_label_same_everywhere(files, tmp_path):
    html = tmp_path / "c.html"
    out = run_cli("compare", files["standard"], files["same"], "--resamples", "20", "-o", html)
    summary = run_cli("summary", files["standard"])
    if "serial-retest" in summary.stdout:
        assert "(serial-retest)" in out.stdout and "(serial-retest)" in html.read_text()


@outcome_contract("compare", 0, "—")
@outcome_contract("compare", 2, "—")
def test_compare_exit_codes(files, tmp_path):
    from synthetic import write_standard_run
    other = tmp_path / "other.h5"
    write_standard_run(other, seed=5)
    import h5py
    with h5py.File(other, "r+") as f:          # no case in common with the standard file
        for name in f["tests"]:
            f["tests"][name].attrs["case"] = "renamed/" + name
    out = run_cli("compare", files["standard"], other, "--resamples", "10")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "no case is on both sides" in out.stderr
    assert "standard.h5 has:" in out.stderr and "other.h5 has: renamed/" in out.stderr
    ok = run_cli("compare", files["standard"], files["same"], "--resamples", "10")
    assert ok.returncode == 0
    two = run_cli("compare", files["standard"], files["same"], "--", files["slower"],
                  "--resamples", "10")
    assert two.returncode == 0 and "runs per side: 2 vs 1" in two.stdout
    assert run_cli("compare", files["standard"], "--", files["same"], "--resamples", "10"
                   ).returncode == 0
    assert run_cli("compare", "--", files["same"], files["standard"]).returncode == 2
    assert run_cli("verdict", tmp_path / "missing.h5").returncode == 2


def test_launcher_variables_ignored_real_settings_kept():
    for name in ("OMPI_COMM_WORLD_RANK", "OMPI_MCA_orte_hnp_uri", "OMPI_ARGV", "PMIX_RANK",
                 "SLURM_JOB_ID", "SLURM_PROCID", "OMPI_FILE_LOCATION"):
        assert is_launcher_variable(name), name
    for name in ("OMPI_MCA_btl", "UCX_TLS", "NCCL_IB_HCA", "OMPI_MCA_pml",
                 "OMPI_MCA_rmaps_base_oversubscribe", "CUDA_VISIBLE_DEVICES"):
        assert not is_launcher_variable(name), name
    assert is_launcher_fact("env/OMPI_MCA_ess_base_jobid") and not is_launcher_fact("mtu")
