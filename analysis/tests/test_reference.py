"""kind: reference side by side (reference.py): pairing, the summary's lines, accept's
reference_ratio_max, on synthetic files."""

import io

import numpy as np
import pytest

from fabscope_analysis.accept import evaluate
from fabscope_analysis.criteria import CriteriaError, parse_criteria_text
from fabscope_analysis.reader import open_result
from fabscope_analysis.kinds.reference import pair_line, reference_pairs
from fabscope_analysis.summary import print_summary

from synthetic import SyntheticRun, bandwidth_entries, latency_entries, make_samples

EMPTY = make_samples([], 0)


def reference_attrs(test, median_us, gbps, tls="shm,self"):
    return {"reference_tool": "ucx_perftest", "reference_program": "/usr/bin/ucx_perftest",
            "reference_test": test, "reference_tls": tls, "reference_version": "1.13.1",
            "reference_command": f"UCX_TLS={tls} /usr/bin/ucx_perftest 127.0.0.1 -p 4000 -t {test}",
            "reference_median_us": median_us, "reference_average_us": median_us * 1.1,
            "reference_bandwidth_mibps": gbps * 1e9 / 1048576, "reference_gbps": gbps}


@pytest.fixture
def run_file(tmp_path):
    path = tmp_path / "ref.h5"
    run = SyntheticRun(path, nranks=2, ranks_per_host=2)
    rng = np.random.default_rng(3)
    lat = make_samples(latency_entries([(0, 1)], 200, 2000.0, rng, jitter=0.0), run.start_ns())
    run.add_test("lat", "latency", lat, nbytes=8, divisor=2, transport="ucx")          # 0: 2 us
    bw = make_samples(bandwidth_entries([(0, 1)], 50, 1 << 20, 10.0, rng), run.start_ns())
    run.add_test("bw", "bandwidth", bw, nbytes=1 << 20, metric="bandwidth", transport="ucx")  # 1
    run.add_test("lat-mpi", "latency", lat, nbytes=8, divisor=2, transport="mpi")      # 2: not ucx
    run.add_test("ref-lat", "reference", EMPTY, nbytes=8,                               # 3
                 extra_attrs=reference_attrs("tag_lat", 0.5, 0.02))
    run.add_test("ref-bw", "reference", EMPTY, nbytes=1 << 20, metric="bandwidth",      # 4
                 extra_attrs=reference_attrs("tag_bw", 100.0, 8.0))
    run.add_test("ref-lat-64", "reference", EMPTY, nbytes=64,                           # 5: no fabscope 64 B
                 extra_attrs=reference_attrs("tag_lat", 0.6, 0.1))
    run.close()
    return path


def test_pairs_same_size_and_transport(run_file):
    with open_result(str(run_file)) as result:
        pairs = reference_pairs(result)
        assert [(p.fabscope_index, p.reference_index) for p in pairs] == [(0, 3), (1, 4)]
        lat, bw = pairs
        assert lat.fabscope_value == pytest.approx(2.0)
        assert lat.ratio == pytest.approx(4.0) and lat.disagreement == pytest.approx(4.0)
        assert bw.reference_value == 8.0 and bw.ratio == pytest.approx(bw.fabscope_value / 8.0)


def test_summary_prints_both_figures_and_the_ratio(run_file):
    with open_result(str(run_file)) as result:
        out = io.StringIO()
        print_summary(result, out)
    text = out.getvalue()
    assert "reference tools side by side (ratio = fabscope / reference):" in text
    assert ("  8 B p50 latency: fabscope 2 us (test 0000) vs ucx_perftest 1.13.1 tag_lat "
            "(shm,self) 0.5 us (test 0003): ratio fabscope/reference 4") in text, text
    assert "1 MiB mean bandwidth: fabscope" in text and "(test 0004): ratio" in text


def criteria(ratio, match="{kind: latency, transport: ucx}"):
    return parse_criteria_text("fabscope_criteria: 1\nrules:\n  - name: agrees\n"
                               f"    match: {match}\n    reference_ratio_max: {ratio}\n", "c.yaml")


def test_accept_bounds_the_ratio(run_file):
    with open_result(str(run_file)) as result:
        ok = [c for c in evaluate(result, criteria(5)) if c.rule == "agrees"]
        assert len(ok) == 1 and ok[0].passed and "reference ratio 4" in ok[0].details[0]
        bad = [c for c in evaluate(result, criteria(3)) if c.rule == "agrees"]
        assert len(bad) == 1 and not bad[0].passed
        assert "differ by a factor 4, allowed 3" in bad[0].messages[0], bad[0].messages
        # a rule matching no paired instance applies to nothing: that fails unless optional
        none = [c for c in evaluate(result, criteria(5, "{kind: latency, transport: mpi}"))
                if c.rule == "agrees"]
        assert len(none) == 1 and not none[0].passed and "none of its checks applies" in none[0].messages[0]
        # beside rules without the ratio (the pairs are read when any rule bounds it)
        both = parse_criteria_text("fabscope_criteria: 1\nrules:\n  - name: measured\n"
                                   "    match: {kind: latency}\n    limits: {samples: {min: 1}}\n"
                                   "  - name: agrees\n    match: {kind: latency, transport: ucx}\n"
                                   "    reference_ratio_max: 3\n", "c.yaml")
        bad = [c for c in evaluate(result, both) if c.rule == "agrees"]
        assert len(bad) == 1 and "differ by a factor 4, allowed 3" in bad[0].messages[0], bad


def test_bad_ratio_names_its_line():
    with pytest.raises(CriteriaError, match="c.yaml:5.*reference_ratio_max must be >= 1"):
        criteria(0.5)
    with pytest.raises(CriteriaError, match="reference_ratio_max must be a number"):
        criteria("'two'")


def test_sample_limits_do_not_apply_to_reference_instances(run_file):
    """The shipped criteria's "every test measured" (samples >= 1 on every kind) must not
    fail a reference instance: the tool measured it, fabscope holds no samples of it."""
    every = parse_criteria_text("fabscope_criteria: 1\nrules:\n  - name: measured\n"
                                "    match: {kind: '*'}\n    limits: {samples: {min: 1}}\n",
                                "c.yaml")
    with open_result(str(run_file)) as result:
        checks = [c for c in evaluate(result, every) if c.rule == "measured"]
    assert all(c.passed for c in checks), [c.messages for c in checks if not c.passed]
    assert sorted(c.instance for c in checks) == [0, 1, 2]


# -- a skipped instance (a reference tool not installed) in acceptance --------------------


@pytest.fixture
def skipped_file(tmp_path):
    """A run whose reference tool was not installed: fabscope's tests passed, the
    reference instance is `skipped` with the reason, as the kind writes it."""
    path = tmp_path / "skipped.h5"
    run = SyntheticRun(path, nranks=2, ranks_per_host=2)
    rng = np.random.default_rng(5)
    lat = make_samples(latency_entries([(0, 1)], 200, 2000.0, rng, jitter=0.0), run.start_ns())
    run.add_test("lat", "latency", lat, nbytes=8, divisor=2, transport="ucx")          # 0
    attrs = {k: v for k, v in reference_attrs("tag_lat", 0.5, 0.02).items()
             if k in ("reference_tool", "reference_program", "reference_test", "reference_tls")}
    run.add_test("ref-lat", "reference", EMPTY, nbytes=8, status="skipped",              # 1
                 error="ucx_perftest is not installed: rank 0 (h0): ucx_perftest not found on PATH",
                 extra_attrs=attrs)
    run.close()
    return path


def test_shipped_criteria_do_not_fail_a_skipped_reference(skipped_file):
    """The shipped local criteria (allowed_status [passed], every test measured) passed a run
    whose only blemish is a reference tool that is not installed: it is listed as skipped."""
    from fabscope_analysis.accept_text import run_accept
    from fabscope_analysis.verdict import compute_verdict
    with open_result(str(skipped_file)) as result:
        verdict = compute_verdict(result)
        assert verdict.passed, verdict.line()
        skipped = [c for c in verdict.checks if c.skipped]
        assert skipped and all(c.instance == 1 and c.passed for c in skipped), skipped
        assert "not found on PATH" in skipped[0].skipped
        assert "1 test instance skipped" in verdict.line(), verdict.line()
        out = io.StringIO()
        assert run_accept(result, stream=out)
    text = out.getvalue()
    assert "SKIP  status: " in text and "ucx_perftest not found on PATH" in text, text
    assert "-> PASS" in text, text


def test_a_rule_requiring_a_skipped_reference_cannot_tell(skipped_file):
    """reference_ratio_max on the fabscope test whose reference was skipped: 'cannot tell',
    listed, not a failure of the run (nor 'no applicable test instance'); the rule could not
    judge, so neither can the run: CANNOT TELL, not PASS."""
    from fabscope_analysis.verdict import compute_verdict
    with open_result(str(skipped_file)) as result:
        verdict = compute_verdict(result, criteria(5))
        assert not verdict.failed and verdict.status == "CANNOT TELL", verdict.line()
        agrees = [c for c in verdict.checks if c.rule == "agrees"]
        assert len(agrees) == 1 and agrees[0].cannot_tell and agrees[0].instance == 0, agrees
        assert "test 0001 skipped" in agrees[0].cannot_tell, agrees[0].cannot_tell
        assert "1 check cannot tell" in verdict.line(), verdict.line()
        # the same rule with the tool present still judges (no cannot-tell there)


# -- OSU, perftest, nccl-tests pairing ----------------------------------------------------

def tool_attrs(tool, command, **figures):
    nan = float("nan")
    attrs = {"reference_tool": tool, "reference_program": f"/opt/bin/{tool}", "reference_test": "",
             "reference_tls": "", "reference_version": "7.4", "reference_command": command,
             "reference_median_us": nan, "reference_average_us": nan,
             "reference_bandwidth_mibps": nan, "reference_gbps": nan, "reference_busbw_gbps": nan,
             "reference_time_meaning": "latency"}
    attrs.update(figures)
    return attrs


@pytest.fixture
def tools_file(tmp_path):
    path = tmp_path / "tools.h5"
    run = SyntheticRun(path, nranks=2, ranks_per_host=2)
    rng = np.random.default_rng(7)
    lat = make_samples(latency_entries([(0, 1)], 200, 2000.0, rng, jitter=0.0), run.start_ns())
    run.add_test("lat-mpi", "latency", lat, nbytes=8, divisor=2, transport="mpi")          # 0: 2 us
    run.add_test("lat-verbs", "latency", lat, nbytes=8, divisor=2, transport="verbs")      # 1
    run.add_test("osu", "reference", EMPTY, nbytes=8,                                      # 2: average only
                 extra_attrs=tool_attrs("osu_latency", "mpirun -np 2 --host h0:2 osu_latency -m 8:8",
                                        reference_average_us=0.5))
    run.add_test("osu-z", "reference", EMPTY, nbytes=8,                                    # 3: -z P50
                 extra_attrs=tool_attrs("osu_latency", "mpirun ... osu_latency -z",
                                        reference_average_us=0.5, reference_median_us=0.25))
    run.add_test("read", "reference", EMPTY, nbytes=8,                                     # 4
                 extra_attrs=tool_attrs("ib_read_lat", "ib_read_lat -p 1 -s 8 -n 1000 -F h1",
                                        reference_median_us=4.0, reference_average_us=4.1,
                                        reference_time_meaning="round trip"))
    run.add_test("a2a", "reference", EMPTY, nbytes=8, metric="bandwidth",                  # 5
                 extra_attrs=tool_attrs("alltoall_perf", "mpirun ... alltoall_perf",
                                        reference_gbps=1.0, reference_busbw_gbps=0.5,
                                        reference_average_us=7.0,
                                        reference_time_meaning="collective"))
    run.close()
    return path


def test_each_tool_pairs_with_its_transport_and_statistic(tools_file):
    with open_result(str(tools_file)) as result:
        pairs = {p.reference_index: p for p in reference_pairs(result)}
        assert sorted((p.fabscope_index, i) for i, p in pairs.items()) == [(0, 2), (0, 3), (1, 4)]
        # OSU without -z prints an average: fabscope's mean beside it, not its p50
        assert pairs[2].label == "mean latency" and pairs[2].ratio == pytest.approx(4.0)
        assert pairs[3].label == "p50 latency" and pairs[3].ratio == pytest.approx(8.0)
        assert pairs[4].reference_value == 4.0 and "(a whole round trip)" in pair_line(pairs[4])
        out = io.StringIO()
        print_summary(result, out)
    text = out.getvalue()
    assert "8 B mean latency: fabscope 2 us (test 0000) vs osu_latency 7.4 0.5 us (test 0002)" in text, text
    # alltoall_perf: no like-for-like fabscope figure, so its own line only, not a pair
    assert "(test 0005): ratio" not in text
    assert "alltoall_perf 7.4: busbw 0.5 GB/s, average 7 us, 1 GB/s: mpirun ... alltoall_perf" in text, text


def test_all_reduce_perf_pairs_with_fabscope_allreduce_over_nccl_by_busbw(tmp_path):
    path = tmp_path / "nccl.h5"
    run = SyntheticRun(path, nranks=2, ranks_per_host=2)
    rng = np.random.default_rng(9)
    lat = make_samples(latency_entries([(0, 1)], 50, 20000.0, rng, jitter=0.0), run.start_ns())
    run.add_test("ar", "allreduce", lat, nbytes=1 << 26, transport="nccl", memory="cuda",     # 0
                 extra_attrs={"busbw_gbps": 300.0, "pipelined_busbw_gbps": 360.0})
    run.add_test("ar-host", "allreduce", lat, nbytes=1 << 26, transport="mpi",               # 1: not nccl
                 extra_attrs={"busbw_gbps": 10.0, "pipelined_busbw_gbps": 12.0})
    run.add_test("ref", "reference", EMPTY, nbytes=1 << 26, metric="bandwidth",              # 2
                 extra_attrs=tool_attrs("all_reduce_perf", "mpirun -np 2 --host h0:2 all_reduce_perf",
                                        reference_version="2.19.6 (NCCL 22803)", reference_gbps=240.0,
                                        reference_busbw_gbps=400.0, reference_average_us=280.0,
                                        reference_time_meaning="collective"))
    run.close()
    with open_result(str(path)) as result:
        pairs = reference_pairs(result)
    assert [(p.fabscope_index, p.reference_index) for p in pairs] == [(0, 2)]
    assert pairs[0].label == "busbw" and pairs[0].ratio == pytest.approx(0.9)
    assert "64 MiB busbw: fabscope 360 GB/s (test 0000) vs all_reduce_perf 2.19.6 (NCCL 22803) 400 GB/s" \
        in pair_line(pairs[0]), pair_line(pairs[0])
