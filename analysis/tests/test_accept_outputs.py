"""accept's whole output (verdict line, every check, exit code, JUnit) on fixed runs and
criteria, held against the recorded expectation (expected_outputs.py: a change detector,
not a promise; the promises are test_accept*.py's)."""

import re
import textwrap
import xml.etree.ElementTree as ET

import pytest

from expected_outputs import check_expected, text_lines
from fabscope_analysis.synth import Cluster, generate
from helpers import ANALYSIS_DIR, run_main
from synthetic import write_matrix_run

SHIPPED = f"{ANALYSIS_DIR}/criteria/rack-acceptance.yaml"

# Limits near, above and below the standard run's figures (CANNOT TELL, PASS, FAIL), every
# statistic and bound kind, impacts, both outlier rules, a rule that matches nothing.
LIMITS = """\
    fabscope_criteria: 1
    require_complete: true
    allowed_status: [passed]
    rules:
      - name: latency near
        match: {kind: latency, condition: quiet}
        limits: {p50_us: {max: 2.0}, p99_us: {max: 12}, p999_us: {max: 40}, mean_us: {max: 3}, samples: {min: 100}}
      - name: latency far
        match: {name: pingpong}
        limits: {p50_us: {max: 100, min: 0.1}, max_us: {max: 1000}}
      - name: bandwidth
        match: {metric: bandwidth}
        limits: {p50_gbps: {min: 9.0}, p99_gbps: {min: 8}, mean_gbps: {min: 5}}
      - name: impact
        match: {condition: congested}
        limits: {impact_mean: {max: 1.2}, impact_p99: {max: 1.9}}
      - name: outliers
        match: {kind: "*"}
        outliers: {rank_p99_max_ratio_to_median: 1.5, false_discovery_rate: 0.1}
      - name: pairs
        match: {pattern: all-pairs}
        outliers: {pair_min_fraction_of_median: 0.95}
      - name: nothing
        match: {name: no-such-test}
        limits: {p50_us: {max: 1}}
        optional: true
      - name: nothing required
        match: {name: no-such-test}
        limits: {p50_us: {max: 1}}
    """

BASELINE = """\
    fabscope_criteria: 1
    allowed_status: null
    rules:
      - name: no regression
        match: {kind: latency}
        baseline: {p50_us: {max_ratio: 1.1}, p99_us: {max_ratio: 1.5}}
      - name: bandwidth kept
        match: {metric: bandwidth}
        baseline: {p50_gbps: {min_ratio: 0.9}}
    """

TOLERANCE = """\
    fabscope_criteria: 1
    allowed_status: null
    rules:
      - name: no regression
        match: {kind: latency, condition: quiet}
        tolerance: {p50_us: {coverage: 0.95, confidence: 0.9}, p99_us: {coverage: 0.9, confidence: 0.8}}
      - name: bandwidth
        match: {metric: bandwidth}
        tolerance: {p50_gbps: {coverage: 0.95, confidence: 0.9}}
    """


@pytest.fixture(scope="module")
def fabric_runs(tmp_path_factory):
    """Two 8 x 4 runs of synth (4 leaves): healthy with realistic noise, and one NIC slow
    on its send side, as rack acceptance sees them (diagnose on)."""
    d = tmp_path_factory.mktemp("accept-outputs")
    cluster = Cluster(hosts=8, gpus=4, leaves=4)
    runs = {"healthy": d / "healthy.h5", "slow-nic": d / "slow-nic.h5"}
    generate(runs["healthy"], cluster, noise="realistic", seed=21, controls=10, iterations=12)
    generate(runs["slow-nic"], cluster, noise="realistic", faults=["slow-send:host3/2:1.6"], seed=22,
             controls=10, iterations=12)
    return {k: str(v) for k, v in runs.items()}


@pytest.fixture(scope="module")
def matrix_runs(tmp_path_factory):
    """Hand-built all-pairs runs of 12 ranks on 6 hosts: one whose numbers are doubtful
    (/validity: a busy host, ranks sharing CPUs), one with a lossy rank and a pair the
    serial retest confirmed slow beside one it cleared."""
    d = tmp_path_factory.mktemp("accept-matrix")
    runs = {"doubtful": d / "doubtful.h5", "retested": d / "retested.h5"}
    write_matrix_run(runs["doubtful"], nranks=12, ranks_per_host=2, seed=3, pair_noise=0.04,
                     validity=[("fh1", "busy_host", 2.0, 0.5, "other work held the CPUs"),
                               ("*", "oversubscribed", 6, 2, "ranks share CPUs")])
    write_matrix_run(runs["retested"], nranks=12, ranks_per_host=2, seed=4, pair_noise=0.04,
                     lossy={7: 0.05}, link={(2, 9): 0.5, (4, 11): 0.6},
                     retest=[(2, 9), (4, 11)], controls=[(0, 3), (1, 5), (6, 8)],
                     retest_factor={(4, 11): 1.0})
    return {k: str(v) for k, v in runs.items()}


def _criteria(tmp_path, text):
    path = tmp_path / "criteria.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def _junit(path, replace):
    """The JUnit file with its run-specific attributes (times, paths) blanked."""
    root = ET.parse(path).getroot()
    for element in root.iter():
        for key in ("time", "timestamp", "hostname"):
            element.attrib.pop(key, None)
    text = ET.tostring(root, encoding="unicode")
    return text_lines(text.replace("><", ">\n<"), replace)


def _accept(case, files_by_name, tmp_path, *args, junit=False):
    replace = {str(p): f"<{name}>" for name, p in files_by_name.items()}
    replace.update({str(tmp_path): "<dir>", ANALYSIS_DIR: "<analysis>"})
    extra = ["--junit", str(tmp_path / "accept.xml")] if junit else []
    out = run_main("accept", *args, *extra)
    value = {"exit": out.returncode, "stdout": text_lines(out.stdout, replace),
             "stderr": text_lines(re.sub(r"/tmp/\S+", "<path>", out.stderr), replace)}
    if junit:
        value["junit"] = _junit(tmp_path / "accept.xml", replace)
    check_expected("accept", case, value)


@pytest.mark.parametrize("name", ["standard", "clean", "slower", "small", "same", "incomplete"])
def test_accept_in_force(files, tmp_path, name):
    _accept(f"in-force-{name}", files, tmp_path, files[name], junit=name in ("standard", "clean"))


@pytest.mark.parametrize("name", ["standard", "clean", "small"])
def test_accept_limits_near_and_far(files, tmp_path, name):
    _accept(f"limits-{name}", files, tmp_path, files[name], "--criteria", _criteria(tmp_path, LIMITS),
            junit=name == "standard")


@pytest.mark.parametrize("run,baseline", [("slower", "standard"), ("same", "standard"),
                                          ("standard", "clean")])
def test_accept_against_a_baseline(files, tmp_path, run, baseline):
    _accept(f"baseline-{run}-vs-{baseline}", files, tmp_path, files[run], "--criteria",
            _criteria(tmp_path, BASELINE), "--baseline", files[baseline])


@pytest.mark.parametrize("run", ["same", "slower"])
def test_accept_tolerance_from_known_good_runs(files, tmp_path, run):
    _accept(f"tolerance-{run}", files, tmp_path, files[run], "--criteria", _criteria(tmp_path, TOLERANCE),
            "--baseline", files["standard"], files["clean"])


@pytest.mark.parametrize("name", ["healthy", "slow-nic"])
def test_accept_rack_criteria_on_a_fabric(fabric_runs, tmp_path, name):
    _accept(f"rack-{name}", fabric_runs, tmp_path, fabric_runs[name], "--criteria", SHIPPED,
            junit=True)


@pytest.mark.parametrize("name", ["doubtful", "retested"])
def test_accept_on_hand_built_matrices(matrix_runs, tmp_path, name):
    _accept(f"matrix-{name}", matrix_runs, tmp_path, matrix_runs[name], "--criteria", SHIPPED,
            junit=name == "doubtful")
