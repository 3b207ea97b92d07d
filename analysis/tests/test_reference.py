"""kind: reference side by side (reference.py): pairing, the summary's lines, accept's
reference_ratio_max, on synthetic files."""

import io

import numpy as np
import pytest

from fabscope_analysis.accept import evaluate
from fabscope_analysis.criteria import CriteriaError, parse_criteria_text
from fabscope_analysis.reader import open_result
from fabscope_analysis.reference import reference_pairs
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
        assert [(p.fabscope.index, p.reference.index) for p in pairs] == [(0, 3), (1, 4)]
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
