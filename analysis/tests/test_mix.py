"""The serving mix (kind mix) in the analysis: each traffic class's isolated and together
phases from the raw samples, paired as conditions are (the isolated phase is the baseline),
inflation = together / isolated (mean and p99) in impact (text and --json) and summary; on a
synthetic file with known times, where the answer is known."""

import io
import json

import numpy as np
import pytest

from helpers import run_cli
from synthetic import SAMPLE_DTYPE, SyntheticRun

from fabscope_analysis import open_result
from fabscope_analysis.cli import main
from fabscope_analysis.serving.impact import Deployment, compute_impact
from fabscope_analysis.serving.impact_rows import mix_rows
from fabscope_analysis.serving.impact_text import headline_lines
from fabscope_analysis import models
from fabscope_analysis.reader import (FLAG_CHUNK_GAP, FLAG_MIX_CLASS_SHIFT, FLAG_MIX_TOGETHER,
                                      MIX_CLASS_COLUMNS, MIX_CLASSES)

MIX_DTYPE = np.dtype([("class", "S16"), ("phase", "S16"), ("ranks", "<i4"), ("samples", "<i8"),
                      ("bytes", "<i8"), ("mean_ns", "<f8"), ("p50_ns", "<f8"), ("p99_ns", "<f8"),
                      ("max_ns", "<f8"), ("span_ns", "<i8"), ("inflation_mean", "<f8"),
                      ("inflation_p99", "<f8"), ("verified", "<i8"), ("failed", "<i8")])

# Known per-class times (ns): isolated, together. allreduce doubles, kvpush x1.5, api
# unchanged; alltoall absent (a dense model).
TIMES = {"allreduce": (100_000, 200_000), "kvpush": (2_000_000, 3_000_000),
         "api": (40_000_000, 40_000_000)}


def write_mix_file(path, stored_inflation=None, times=None):
    times = times or TIMES
    run = SyntheticRun(path, nranks=8)
    run.file.attrs["scenario_text"] = "name: s\nmodel: llama3-70b\n"
    rows = []
    t = run.start_ns()
    for name, (iso, tog) in times.items():
        k = MIX_CLASSES.index(name) + 1
        for together, base in ((False, iso), (True, tog)):
            flags = (k << FLAG_MIX_CLASS_SHIFT) | (FLAG_MIX_TOGETHER if together else 0)
            for i in range(50):
                d = base * (1.0 + 0.01 * (i % 10))  # a spread, same shape in both phases
                rows.append((i % 4, i, -1, 1024, t, t + int(d), flags, 0))
                t += int(d) + 1000
            if name == "api":  # first-byte/gap rows: auxiliary, never a class's headline
                rows.append((6, 0, -1, 512, t, t + 10**9, flags | FLAG_CHUNK_GAP, 0))
    samples = np.array(rows, dtype=SAMPLE_DTYPE)
    idx = run.add_test("serving-mix", "mix", samples, nbytes=512, case="serving-mix/512",
                       pattern="serving-mix")
    table = np.zeros(2 * len(times), dtype=MIX_DTYPE)
    for j, (name, (iso, tog)) in enumerate(times.items()):
        for p, phase in enumerate(("isolated", "together")):
            inf = (stored_inflation or {}).get(name, tog / iso) if phase == "together" else np.nan
            table[2 * j + p] = (name.encode(), phase.encode(), 4, 50, 1024, 0, 0, 0, 0, 0, inf, inf,
                                50 if phase == "together" else 0, 0)
    run.file["tests"][f"{idx:04d}"].create_dataset("mix_classes", data=table)
    run.close()
    return str(path)


def test_the_table_is_read_with_its_declared_columns(tmp_path):
    path = write_mix_file(tmp_path / "mix.h5")
    t = open_result(path).test(0).mix_classes()
    assert list(t.columns) == MIX_CLASS_COLUMNS
    assert sorted(set(t["class"])) == ["allreduce", "api", "kvpush"]


def test_inflation_per_class_pairs_together_with_isolated(tmp_path):
    path = write_mix_file(tmp_path / "mix.h5")
    rows = mix_rows(open_result(path))
    together = {r["class"]: r for r in rows if r["condition"] == "together"}
    isolated = {r["class"]: r for r in rows if r["condition"] == "isolated"}
    assert set(together) == set(isolated) == set(TIMES)
    assert all(r["samples"] == 50 for r in rows), "the auxiliary api rows were counted"
    for name, (iso, tog) in TIMES.items():
        r = together[name]
        assert r["series"] == f"serving-mix/{name}"
        assert abs(r["inflation_mean"] - tog / iso) < 1e-3, (name, r)
        assert abs(r["inflation_p99"] - tog / iso) < 1e-3, (name, r)
        assert abs(r["stored_inflation_p99"] - tog / iso) < 1e-9
        assert "inflation_p99" not in isolated[name]
    assert abs(isolated["kvpush"]["p50_ms"] - 2.0 * 1.045) < 0.02


def test_impact_and_summary_print_and_store_it(tmp_path, capsys):
    path = write_mix_file(tmp_path / "mix.h5")
    out_json = tmp_path / "impact.json"
    assert main(["impact", path, "--json", str(out_json)]) == 0
    text = capsys.readouterr().out
    assert "Serving mix: each traffic class alone (isolated), then with all the others" in text
    rows = [line.split() for line in text.splitlines() if line.strip().startswith("serving-mix")]
    assert ["serving-mix", "allreduce", "together", "50", "0.209", "0.209", "0.218", "2", "/",
            "2"] in rows, text
    assert ["serving-mix", "kvpush", "together", "50", "3.13", "3.13", "3.27", "1.5", "/",
            "1.5"] in rows, text
    doc = json.loads(out_json.read_text())
    by = {(r["class"], r["condition"]): r for r in doc["serving_mix"]}
    assert abs(by[("kvpush", "together")]["inflation_mean"] - 1.5) < 1e-3
    assert main(["summary", path]) == 0
    text = capsys.readouterr().out
    assert "mix allreduce: isolated p50/p99" in text and "inflation (together/isolated) mean x2" in text, text
    assert "mix api:" in text and "mix alltoall" not in text


def test_headline_names_each_class_inflation(tmp_path):
    path = write_mix_file(tmp_path / "mix.h5")
    impact = compute_impact(open_result(path), Deployment(models.preset("llama3-70b"), tp=8))
    lines = headline_lines(impact)
    assert any(l.startswith("serving mix serving-mix/kvpush: together x1.5 mean, x1.5 p99 vs "
                            "isolated") for l in lines), lines


def test_report_and_compare_carry_it(tmp_path):
    from fabscope_analysis.compare import run_compare
    from fabscope_analysis.report import build_report
    a = write_mix_file(tmp_path / "a.h5")
    b = write_mix_file(tmp_path / "b.h5", times={**TIMES, "kvpush": (2_000_000, 6_000_000)})
    page = build_report(open_result(a))
    assert "serving mix serving-mix/allreduce: together x2 mean, x2 p99 vs isolated" in page
    out = io.StringIO()
    run_compare([open_result(a), open_result(b)], None, stream=out)
    text = out.getvalue()
    assert ("serving mix serving-mix/kvpush: inflation (together/isolated) mean x1.5 -> x3, "
            "p99 x1.5 -> x3") in text, text


def test_accept_does_not_count_class_marks_as_flagged_samples(tmp_path):
    # every mix sample carries its class and phase in `flags`; only bit 0 (a failed data
    # check) makes a sample flagged
    path = write_mix_file(tmp_path / "mix.h5")
    text = run_cli("accept", path).stdout
    assert "PASS  no flagged samples" in text, text


API_REQUEST_DTYPE = np.dtype([("status", "S16"), ("connect_ns", "<i8"), ("ttfb_ns", "<i8")])


def test_api_rows_take_the_servers_own_time_off_and_report_milliseconds(tmp_path):
    """The front end's share of a request (api kind): connect, first byte beyond the
    server's service time (never below 0), chunk gaps beyond the chunk interval, each in
    ms from the ns of /api_requests and the gap rows; failed requests left out."""
    from fabscope_analysis.serving.impact_rows import api_request_rows
    path = str(tmp_path / "api.h5")
    run = SyntheticRun(path, nranks=2, ranks_per_host=1)
    start = run.start_ns()
    # two chunk gaps of 3 and 5 ms against a 2 ms interval: p99 of the gaps 4.98 ms, 2.98 ms added
    gaps = np.zeros(2, dtype=SAMPLE_DTYPE)
    for i, ms in enumerate((3, 5)):
        gaps[i] = (0, i, 1, 512, start + 10**9 * i, start + 10**9 * i + ms * 10**6, FLAG_CHUNK_GAP, 0)
    index = run.add_test("front", "api", gaps, nbytes=512,
                         extra_attrs={"service_time_s": 0.010, "chunk_interval_s": 0.002})
    requests = np.array([(b"ok", 1_000_000, 12_000_000), (b"ok", 3_000_000, 16_000_000),
                         (b"ok", 2_000_000, 5_000_000), (b"refused", 90_000_000, 0)],
                        dtype=API_REQUEST_DTYPE)
    run.file[f"tests/{index:04d}"].create_dataset("api_requests", data=requests)
    run.close()
    missing = []
    with open_result(path, warn_incomplete=False) as result:
        rows = api_request_rows(result, missing)
    assert missing == [] and len(rows) == 1
    row = rows[0]
    assert (row["series"], row["condition"], row["requests"]) == ("front", "quiet", 3)
    assert row["connect_p50_ms"] == pytest.approx(2.0)
    assert row["connect_p99_ms"] == pytest.approx(np.percentile([1, 3, 2], 99))
    # first byte beyond 10 ms of service: 2, 6 and 0 (5 ms is below it) ms
    assert row["ttft_added_p50_ms"] == pytest.approx(2.0)
    assert row["ttft_added_p99_ms"] == pytest.approx(np.percentile([2, 6, 0], 99))
    assert row["per_token_added_p99_ms"] == pytest.approx(np.percentile([3, 5], 99) - 2)
