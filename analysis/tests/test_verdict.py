"""One verdict everywhere, one figure everywhere, exit codes, the launcher ignore list."""

import io
import re

import numpy as np

from fabscope_analysis import open_result
from fabscope_analysis.inventory import is_launcher_fact, is_launcher_variable
from fabscope_analysis.report import build_report
from fabscope_analysis.run_analysis import RunAnalysis
from fabscope_analysis.stats import figure_value, side_units, pooled
from fabscope_analysis.verdict import compute_verdict
from helpers import run_cli

RACK = "analysis/criteria/rack-acceptance.yaml"


def _rack(path):
    import os
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "criteria", "rack-acceptance.yaml")


def test_verdict_agrees_across_surfaces_failing_and_passing(files, tmp_path):
    for name, expect in (("standard", 1), ("clean", 0)):
        path, crit = files[name], _rack(files[name])
        verdict = run_cli("verdict", path, "--criteria", crit, "--brief")
        accept = run_cli("accept", path, "--criteria", crit)
        summary = run_cli("summary", path, "--criteria", crit)
        html = tmp_path / f"{name}.html"
        report = run_cli("report", path, "--criteria", crit, "-o", html)
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
    assert two.returncode == 0 and "replicates per side: 2 vs 1" in two.stdout
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
