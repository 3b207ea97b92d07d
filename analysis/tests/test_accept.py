import io
import math
import os
import textwrap
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import h5py
import numpy as np
import pytest

from fabscope_analysis import CriteriaError, open_result
from fabscope_analysis.accept import evaluate
from fabscope_analysis.accept_limits import Figures
from fabscope_analysis.accept_outliers import family_test
from fabscope_analysis.accept_result import CheckResult
from fabscope_analysis.accept_text import print_checks, write_junit
from fabscope_analysis.criteria import load_criteria, parse_criteria_text
from fabscope_analysis.stats import with_derived
from fabscope_analysis.verdict import Reason, Verdict
from helpers import ANALYSIS_DIR, run_cli
from contracts import outcome_contract

SHIPPED = os.path.join(ANALYSIS_DIR, "criteria", "rack-acceptance.yaml")

OUTLIERS = textwrap.dedent("""\
    fabscope_criteria: 1
    allowed_status: null
    rules:
      - name: uniform pairs
        match: {pattern: all-pairs}
        outliers: {pair_min_fraction_of_median: 0.9}
      - name: no straggler
        match: {kind: latency}
        outliers: {rank_p99_max_ratio_to_median: 2.0}
    """)


def _write(tmp_path, text, name="criteria.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _failures(path, criteria_text, baseline=None):
    criteria = parse_criteria_text(textwrap.dedent(criteria_text))
    with open_result(path, warn_incomplete=False) as run:
        base = open_result(baseline) if baseline else None
        try:
            return [c for c in evaluate(run, criteria, base) if not c.passed]
        finally:
            if base:
                base.close()


def test_planted_slow_pair_and_rank_named(files, tmp_path):
    junit = tmp_path / "out.xml"
    out = run_cli("accept", files["standard"], "--criteria", _write(tmp_path, OUTLIERS),
                  "--junit", junit)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "pair rank 2 (fh1) -> rank 5 (fh2)" in out.stdout
    assert "pair rank 5 (fh2) -> rank 2 (fh1)" in out.stdout
    assert "40% of the median pair" in out.stdout
    assert "rank 3 (fh1): p99" in out.stdout and "5.0x the median" in out.stdout
    # no other pair or rank is blamed
    assert out.stdout.count("\nFAIL  ") == 3 and "rank 4" not in out.stdout
    tree = ET.parse(junit).getroot()
    suite = tree.find("testsuite")
    assert suite.get("failures") == "3" and int(suite.get("tests")) == 4
    failed = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert {c.get("classname") for c in failed} == {"fabscope.accept.uniform pairs",
                                                    "fabscope.accept.no straggler"}
    assert "rank 2 (fh1) -> rank 5 (fh2)" in "".join(c.find("failure").text for c in failed)


def test_clean_run_accepted_with_shipped_criteria(files, tmp_path):
    junit = tmp_path / "ok.xml"
    out = run_cli("accept", files["clean"], "--criteria", SHIPPED, "--junit", junit)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "-> PASS" in out.stdout and "FAIL " not in out.stdout
    assert ET.parse(junit).getroot().find("testsuite").get("failures") == "0"


def test_shipped_criteria_fail_planted_defects(files):
    out = run_cli("accept", files["standard"], "--criteria", SHIPPED)
    assert out.returncode == 1
    for expected in ("status error", "rank 3 (fh1)", "pair rank 2 (fh1) -> rank 5 (fh2)",
                     "rank 7 (fh3)", "samples = 0, required >= 100"):
        assert expected in out.stdout, expected


def test_absolute_limit_names_ranks(files):
    fails = _failures(files["standard"], """\
        fabscope_criteria: 1
        allowed_status: null
        rules:
          - name: tight
            match: {kind: latency, condition: quiet, name: pingpong}
            limits: {p99_us: {max: 5}}
        """)
    assert len(fails) == 1
    msg = fails[0].messages[0]
    assert "p99_us = 10.67 us [95% interval 10.5" in msg and "required <= 5 us" in msg
    assert "ranks beyond the limit: rank 3 (fh1)" in msg and "rank 2 " not in msg


def test_bandwidth_limit_names_pairs(files):
    fails = _failures(files["standard"], """\
        fabscope_criteria: 1
        allowed_status: null
        rules:
          - name: bw
            match: {kind: bandwidth}
            limits: {p99_gbps: {min: 8}}
        """)
    msg = fails[0].messages[0]
    assert "required >= 8 GB/s" in msg
    assert "pairs beyond the limit: rank 5 (fh2) -> rank 2 (fh1)" in msg or \
        "pairs beyond the limit: rank 2 (fh1) -> rank 5 (fh2)" in msg


def test_impact_limit_names_most_affected(files):
    fails = _failures(files["standard"], """\
        fabscope_criteria: 1
        allowed_status: null
        rules:
          - name: impact
            match: {condition: congested}
            limits: {impact_mean: {max: 1.2}}
        """)
    assert len(fails) == 1 and "impact_mean = 1.8" in fails[0].messages[0]
    assert "most affected: rank" in fails[0].messages[0]


def test_impact_p99_limit_is_judged_on_the_p99_ratio(files):
    """impact_p99 is congested p99 / quiet p99 of the same samples (the standard run's
    incast round trips, 25 % jitter against 5 %): recomputed from /samples, it is not the
    mean's impact (1.8)."""
    import re
    import h5py
    fails = _failures(files["standard"], """\
        fabscope_criteria: 1
        allowed_status: null
        rules:
          - name: impact
            match: {condition: congested}
            limits: {impact_p99: {max: 1.2}}
        """)
    assert len(fails) == 1
    with h5py.File(files["standard"], "r") as f:
        p99 = [np.percentile((f[f"tests/{i:04d}/samples"]["t_done_ns"]
                              - f[f"tests/{i:04d}/samples"]["t_post_ns"]) / 2, 99) for i in (0, 1)]
    printed = re.search(r"impact_p99 = ([\d.]+) \[95% interval ([\d.]+), ([\d.]+)\]",
                        fails[0].messages[0])
    assert printed, fails[0].messages
    value, low, high = (float(g) for g in printed.groups())
    assert value == pytest.approx(p99[1] / p99[0], rel=0.02)
    assert abs(value - 1.8) > 0.5
    # the bootstrap interval of the ratio lies around it, on both sides
    assert low < value < high, printed.group(0)


def test_baseline_rules(files, tmp_path):
    text = """\
        fabscope_criteria: 1
        allowed_status: null
        rules:
          - name: no regression
            match: {kind: latency, name: pingpong}
            baseline: {p50_us: {max_ratio: 1.1}}
        """
    fails = _failures(files["slower"], text, baseline=files["standard"])
    assert len(fails) == 2
    assert "1.3" in fails[0].messages[0] and "x the baseline" in fails[0].messages[0]
    assert "ranks beyond it: rank" in fails[0].messages[0]
    assert _failures(files["same"], text, baseline=files["standard"]) == []
    # baseline rules without --baseline: bad usage, exit 2 naming the rule's line
    out = run_cli("accept", files["slower"], "--criteria", _write(tmp_path, textwrap.dedent(text)))
    assert out.returncode == 2 and "criteria.yaml:4" in out.stderr and "--baseline" in out.stderr
    out = run_cli("accept", files["slower"], "--criteria", _write(tmp_path, textwrap.dedent(text)),
                  "--baseline", files["standard"])
    assert out.returncode == 1


def test_a_counted_figure_against_one_baseline_is_their_exact_ratio(files):
    """max_us is a counted figure (the worst sample): against one baseline run its ratio is
    this run's max over the baseline's, exactly, with no bootstrap interval around it."""
    text = """\
        fabscope_criteria: 1
        allowed_status: null
        rules:
          - name: no worse worst case
            match: {kind: latency, name: pingpong}
            baseline: {max_us: {max_ratio: 100}}
        """
    criteria = parse_criteria_text(textwrap.dedent(text))
    with open_result(files["slower"], warn_incomplete=False) as run, \
            open_result(files["standard"]) as base:
        checks = [c for c in evaluate(run, criteria, base) if c.instance is not None]
        worst = [{i.index: float(with_derived(i.samples(), i.sample_divisor)["latency_ns"].max())
                  for i in r.instances() if i.get("name") == "pingpong"} for r in (run, base)]
    # the quiet and the incast pingpong: each against the baseline's own
    assert [(c.instance, c.label) for c in checks] == [(0, "PASS"), (1, "PASS")]
    for check in checks:
        ratio = worst[0][check.instance] / worst[1][check.instance]
        assert check.details == [f"max_us ratio to baseline = {ratio:.3f} [95% interval {ratio:.3f}, "
                                 f"{ratio:.3f}] (counted figures)"]


def test_incomplete_run_fails(files):
    fails = _failures(files["incomplete"], """\
        fabscope_criteria: 1
        rules:
          - name: any
            match: {kind: latency}
            limits: {samples: {min: 1}}
        """)
    assert fails[0].rule == "run complete"


def test_rule_matching_nothing_fails_unless_optional(files):
    text = """\
        fabscope_criteria: 1
        allowed_status: null
        rules:
          - name: allreduce
            match: {kind: allreduce}
            limits: {p99_us: {max: 100}}
        """
    fails = _failures(files["clean"], text)
    assert len(fails) == 1 and "no test instance matches" in fails[0].messages[0]
    assert _failures(files["clean"], textwrap.dedent(text) + "    optional: true\n") == []


@pytest.mark.parametrize("text,line,message", [
    ("fabscope_criteria: 1\nrules:\n  - name: a\n    limits: {p99_us: {max: 1}\n",
     5, "not valid YAML"),
    ("fabscope_criteria: 1\nrules:\n  - name: a\n    limits:\n      p99: {max: 1}\n",
     5, "unknown key 'p99' in limits"),
    ("fabscope_criteria: 1\nrules:\n  - name: a\n    limits:\n      p99_us: {max: fast}\n",
     5, "limits.p99_us.max must be a number"),
    ("fabscope_criteria: 1\nrules:\n  - name: a\n    match: {kind: latency}\n"
     "    match: {kind: bandwidth}\n    limits: {p99_us: {max: 1}}\n", 5, "duplicate key 'match'"),
    ("fabscope_criteria: 2\nrules: []\n", 1, "fabscope_criteria must be 1"),
    ("fabscope_criteria: 1\nrules:\n  - name: a\n    match: {kind: latency}\n", 3,
     "checks nothing"),
    ("fabscope_criteria: 1\nrules:\n  - name: a\n    outliers:\n"
     "      pair_min_fraction_of_median: 90\n", 5, "must be in (0, 1]"),
])
def test_bad_criteria_give_file_and_line(tmp_path, files, text, line, message):
    path = _write(tmp_path, text)
    with pytest.raises(CriteriaError) as err:
        load_criteria(path)
    assert err.value.line == line, str(err.value)
    assert message in str(err.value)
    out = run_cli("accept", files["clean"], "--criteria", path)
    assert out.returncode == 2 and f"{path}:{line}:" in out.stderr


@outcome_contract("accept", 2, "—")
def test_missing_criteria_file_exit_2(files, tmp_path):
    out = run_cli("accept", files["clean"], "--criteria", tmp_path / "nope.yaml")
    assert out.returncode == 2 and "cannot read criteria file" in out.stderr


def test_bad_result_or_baseline_file_exit_2(files, tmp_path):
    out = run_cli("accept", tmp_path / "missing.h5", "--criteria", SHIPPED)
    assert out.returncode == 2 and "missing.h5: no such file" in out.stderr
    out = run_cli("accept", files["clean"], "--criteria", SHIPPED, "--baseline",
                  tmp_path / "base.h5")
    assert out.returncode == 2 and "base.h5: no such file" in out.stderr


# -- validity and serial retests with controls ------------------------------

PAIRS_ONLY = textwrap.dedent("""\
    fabscope_criteria: 1
    allowed_status: null
    rules:
      - name: uniform pairs
        match: {pattern: all-pairs, metric: bandwidth}
        outliers: {pair_min_fraction_of_median: 0.8}
    """)


def _checks(path, text, tmp_path):
    criteria = load_criteria(_write(tmp_path, text, "pairs.yaml"))
    with open_result(str(path), warn_incomplete=False) as result:
        return evaluate(result, criteria)


def test_validity_makes_accept_cannot_tell_unless_the_criteria_allow_it(tmp_path):
    from synthetic import write_matrix_run
    path = tmp_path / "v.h5"
    write_matrix_run(path, validity=[("*", "oversubscribed", 6, 2, "ranks share CPUs"),
                                     ("fh1", "busy_host", 4.5, 2, "busy")])

    def doubtful(text):
        return [c for c in _checks(path, text, tmp_path) if c.rule == "validity" and c.label != "PASS"]

    found = doubtful(PAIRS_ONLY)
    assert {c.subject for c in found} == {"oversubscribed on every host", "busy_host on fh1"}
    # Doubtful numbers are not evidence against the fabric: cannot tell, never FAIL.
    assert {c.label for c in found} == {"CANNOT TELL"}
    assert all("cannot judge the fabric" in c.cannot_tell for c in found)
    allowed = PAIRS_ONLY.replace("allowed_status: null", "allowed_status: null\n"
                                 "allow_validity: [oversubscribed]")
    assert [c.subject for c in doubtful(allowed)] == ["busy_host on fh1"]
    all_allowed = PAIRS_ONLY.replace("allowed_status: null", "allowed_status: null\n"
                                     "allow_validity: true")
    assert not doubtful(all_allowed)
    with pytest.raises(CriteriaError, match="allow_validity must be"):
        load_criteria(_write(tmp_path, all_allowed.replace("true", "[slow]"), "bad.yaml"))


def test_a_pair_failure_names_the_five_slowest_pairs_slowest_first_and_counts_the_rest(tmp_path):
    """Seven slow links, planted out of their order of slowness: the message names five,
    the slowest first (not in rank order), and counts the other two."""
    from synthetic import write_matrix_run
    path = tmp_path / "seven.h5"
    write_matrix_run(path, nranks=8, seed=5, link={(0, 1): 0.5, (1, 2): 0.3, (2, 3): 0.6, (3, 4): 0.2,
                                                   (4, 5): 0.4, (5, 6): 0.55, (6, 7): 0.35})
    check, = [c for c in _checks(path, PAIRS_ONLY, tmp_path) if c.rule == "uniform pairs"]
    assert check.label == "FAIL", check
    assert [m.split(":")[0] for m in check.messages] == [
        f"pair rank {s} (fh{s}) -> rank {r} (fh{r})" for s, r in ((3, 4), (1, 2), (6, 7), (4, 5), (0, 1))
    ] + ["... and 2 more slow pairs"], check.messages
    assert check.messages[0].startswith("pair rank 3 (fh3) -> rank 4 (fh4): 20% of the median pair's")


def test_a_pair_cleared_alone_is_load_only_and_a_confirmed_one_fails(tmp_path):
    from synthetic import write_matrix_run
    path = tmp_path / "r.h5"
    # 0 -> 3 at 40 % in the parallel pass but healthy alone; 4 -> 5 slow both times.
    write_matrix_run(path, nranks=8, link={(0, 3): 0.4, (4, 5): 0.4}, seed=5,
                     retest=[(0, 3), (4, 5)], controls=[(1, 6), (2, 7), (6, 1)],
                     retest_factor={(0, 3): 1.0})
    checks = [c for c in _checks(path, PAIRS_ONLY, tmp_path) if c.rule == "uniform pairs"]
    parallel, retest = checks
    text = "\n".join(parallel.messages)
    assert "rank 4 (fh4) -> rank 5 (fh5)" in text and "rank 0 (fh0) -> rank 3" not in text
    assert any("rank 0 (fh0) -> rank 3 (fh3)" in d and "slow under load only, not failed" in d
               for d in parallel.details), parallel.details
    assert not retest.passed
    assert "rank 4 (fh4) -> rank 5 (fh5)" in "\n".join(retest.messages)
    assert "against the control pairs'" in "\n".join(retest.messages)
    # judged by the serial-retest rule alone, not again as a parallel pass of two pairs
    assert retest.failed == ["pair_min_fraction_of_median"] and len(retest.messages) == 1, retest
    assert any("rank 0 (fh0) -> rank 3 (fh3)" in d and "cleared" in d for d in retest.details)


# -- intervals, false-discovery control, tolerance limits ------------------------------

FAMILY = textwrap.dedent("""\
    fabscope_criteria: 1
    allowed_status: null
    rules:
      - name: uniform pair bandwidth
        match: {metric: bandwidth, pattern: all-pairs}
        outliers: {pair_min_fraction_of_median: 0.9}
      - name: no straggler rank
        match: {kind: "*"}
        outliers: {rank_p99_max_ratio_to_median: 2.0}
    """)
AA_RUNS = 10


def _synth_verdicts(tmp_path, faults=(), seeds=range(AA_RUNS), noise="realistic", retest=3):
    from fabscope_analysis.synth import Cluster, generate
    from fabscope_analysis.verdict import compute_verdict
    criteria = parse_criteria_text(FAMILY)
    out = []
    for seed in seeds:
        path = tmp_path / f"s{seed}.h5"
        generate(path, Cluster(8, 8, 2), noise=noise, faults=list(faults), iterations=12,
                 seed=500 + seed, fabric_seed=41, retest_worst=retest)
        with open_result(str(path)) as result:
            out.append(compute_verdict(result, criteria))
        path.unlink()
    return out


def test_aa_same_verdict_on_healthy_64_rank_runs(tmp_path):
    """A/A: 10 healthy runs of one 64-rank fabric (8 hosts x 8 GPUs, realistic noise: 5 %
    host, pair and sample spread, hiccups, ECMP collisions under load): none FAILs, and every
    one gives the same verdict. The fixed 90 %-of-median fraction applied to its 4,032 pairs
    failed such runs every time; as a BH family with a practical margin no healthy pair
    fails. Under load the ECMP-collided pairs spread so far that the rule cannot see a
    pair at 90 %: it says so, and so does the run (CANNOT TELL, never PASS)."""
    verdicts = _synth_verdicts(tmp_path)
    assert not any(v.failed for v in verdicts), [v.line() for v in verdicts if v.failed]
    assert {v.status for v in verdicts} == {"CANNOT TELL"}, [v.line() for v in verdicts]
    assert all([c.rule for c in v.undecided()] == ["uniform pair bandwidth"] for v in verdicts), \
        [v.line() for v in verdicts]
    for v in verdicts:
        pairs = next(c for c in v.checks if c.rule == "uniform pair bandwidth"
                     and "(serial-retest)" not in c.subject)
        assert any("Benjamini-Hochberg" in d for d in pairs.details), pairs.details


def test_healthy_pairs_without_a_retest_are_not_failed(tmp_path):
    """No serial retest to clear anything: the family test alone. 5 % host and pair
    spread puts ~2 % of 4,032 healthy pairs under 90 % of the median; none is a
    discovery at q = 0.05 (a per-pair 5 % test would fail ~80 of them)."""
    for v in _synth_verdicts(tmp_path, seeds=[0, 1], noise="realistic-quiet", retest=0):
        pairs = [c for c in v.checks if c.rule == "uniform pair bandwidth"]
        assert pairs and all(c.passed for c in pairs), [c.messages[:2] for c in pairs]


def test_planted_bad_pair_fails_among_4032(tmp_path):
    """One GPU pair 3x slow among 64 ranks' 4,032 pairs: found, confirmed alone by the
    serial retest, named; no other pair fails (the ECMP-collided ones, no slower than a
    pair the retest cleared alone, are 'cannot tell'); the straggler rule may name only
    the pair's two ranks (its samples are the tail of their p99)."""
    verdicts = _synth_verdicts(tmp_path, faults=["bad-pair:host2/1-host5/6"], seeds=[0, 1])
    named = {"rank 17 (host2) -> rank 46 (host5)", "rank 46 (host5) -> rank 17 (host2)"}
    for v in verdicts:
        assert not v.passed, v.line()
        failed = [c for c in v.checks if not c.passed]
        pairs = [m for c in failed if c.rule == "uniform pair bandwidth" for m in c.messages]
        assert pairs and all(any(n in m for n in named) for m in pairs), pairs
        assert any("confirmed slow alone" in m for m in pairs), pairs
        ranks = [m for c in failed if c.rule == "no straggler rank" for m in c.messages]
        assert all(m.startswith(("rank 17 ", "rank 46 ")) for m in ranks), ranks


def test_limit_inside_the_interval_cannot_tell(files):
    """A p50 limit at the measured figure: the interval holds it: CANNOT TELL, not a
    failure; far above: PASS; far below: FAIL."""
    criteria = parse_criteria_text(textwrap.dedent("""\
        fabscope_criteria: 1
        allowed_status: null
        rules:
          - {name: near, match: {name: pingpong, condition: quiet}, limits: {p50_us: {max: 2.0}}}
          - {name: far, match: {name: pingpong, condition: quiet}, limits: {p50_us: {max: 4}}}
          - {name: below, match: {name: pingpong, condition: quiet}, limits: {p50_us: {max: 1}}}
        """))
    with open_result(files["standard"], warn_incomplete=False) as run:
        checks = {c.rule: c for c in evaluate(run, criteria) if c.rule in ("near", "far", "below")}
    value = float(checks["far"].details[0].split("=")[1].split()[0])
    near = parse_criteria_text(textwrap.dedent(f"""\
        fabscope_criteria: 1
        allowed_status: null
        rules:
          - {{name: near, match: {{name: pingpong, condition: quiet}},
              limits: {{p50_us: {{max: {value}}}}}}}
        """))
    with open_result(files["standard"], warn_incomplete=False) as run:
        at_value = [c for c in evaluate(run, near) if c.rule == "near"][0]
    assert at_value.label == "CANNOT TELL" and "interval holds the limit" in at_value.cannot_tell
    assert checks["far"].label == "PASS" and checks["below"].label == "FAIL"


TOLERANCE = """\
    fabscope_criteria: 1
    allowed_status: null
    rules:
      - name: no regression
        match: {kind: latency, name: pingpong, condition: quiet}
        tolerance: {p50_us: {coverage: 0.95, confidence: 0.9}}
    """


def test_tolerance_limit_from_known_good_runs(files, tmp_path):
    """The limit comes from 3 known-good runs (normal tolerance limit of their log p50):
    another run of the same fabric passes, a 30 % slower one fails; 2 runs still give a
    limit; one baseline is a usage error naming the rule's line."""
    from synthetic import write_standard_run
    good = []
    for seed, level in ((31, 0.97), (32, 1.0), (33, 1.03)):  # runs differ by a few %
        good.append(str(tmp_path / f"good{seed}.h5"))
        write_standard_run(good[-1], seed=seed, latency_scale=level)
    criteria = parse_criteria_text(textwrap.dedent(TOLERANCE))
    bases = [open_result(p) for p in good]
    try:
        for name, label in (("same", "PASS"), ("slower", "FAIL")):
            with open_result(files[name], warn_incomplete=False) as run:
                check = [c for c in evaluate(run, criteria, bases) if c.rule == "no regression"][0]
            assert check.label == label, (name, check)
            assert "normal tolerance limit on log figures of 3 baseline runs" in \
                "\n".join(check.details + check.messages)
        # two baseline runs are the fewest the rule takes: they give a limit too
        with open_result(files["same"], warn_incomplete=False) as run:
            check = [c for c in evaluate(run, criteria, bases[:2]) if c.rule == "no regression"][0]
        assert "normal tolerance limit on log figures of 2 baseline runs" in \
            "\n".join(check.details + check.messages), check
    finally:
        for b in bases:
            b.close()
    out = run_cli("accept", files["same"], "--criteria",
                  _write(tmp_path, textwrap.dedent(TOLERANCE)), "--baseline", good[0])
    assert out.returncode == 2 and "criteria.yaml:4" in out.stderr and "2 or more" in out.stderr


def test_a_baseline_run_without_a_positive_figure_gives_no_tolerance_limit(tmp_path):
    """Three baseline runs, one whose pingpong took no time (p50 0): the limit is not made
    from the other two plus a log of 0, the check fails saying why."""
    from synthetic import write_standard_run
    paths = [str(tmp_path / f"base{seed}.h5") for seed in (31, 32, 33)]
    for seed, path in zip((31, 32, 33), paths):
        write_standard_run(path, seed=seed)
    with h5py.File(paths[2], "r+") as f:
        samples = f["tests/0000/samples"][...]
        samples["t_done_ns"] = samples["t_post_ns"]
        f["tests/0000/samples"][...] = samples
    bases = [open_result(p, warn_incomplete=False) for p in paths]
    try:
        with open_result(paths[0], warn_incomplete=False) as run:
            check = [c for c in evaluate(run, parse_criteria_text(textwrap.dedent(TOLERANCE)), bases)
                     if c.rule == "no regression"][0]
    finally:
        for b in bases:
            b.close()
    assert check.label == "FAIL" and check.details == [], check
    assert check.messages == ["p50_us: a tolerance limit needs 2 or more baseline runs with a positive "
                              "figure, got 3"], check.messages


def test_benjamini_hochberg_and_tolerance_factor():
    from fabscope_analysis.inference import benjamini_hochberg, normal_tolerance_factor
    # step-up: the 3rd smallest (0.012 <= 0.05 * 3 / 6) carries the 2 below it
    assert list(benjamini_hochberg([0.001, 0.04, 0.012, 0.3, 0.011, 0.9], 0.05)[0]) == \
        [True, False, True, False, True, False]
    assert benjamini_hochberg([0.02] * 100, 0.05)[0].all()   # all equal and under q: all
    assert not benjamini_hochberg(np.full(4032, 0.001), 0.0005)[0].any()
    # Krishnamoorthy & Mathew (2009) table B1: one-sided, n = 10, 95 % / 95 %: 2.911
    assert abs(normal_tolerance_factor(10, 0.95, 0.95) - 2.911) < 0.002
    assert abs(normal_tolerance_factor(3, 0.95, 0.95) - 7.656) < 0.002


def test_a_units_spread_adds_its_own_error_to_the_familys():
    """A unit's sd under the family's noise model is sqrt(tau^2 + se^2): units within their
    own error of the median are no discoveries, and one far beyond it is."""
    from fabscope_analysis.accept_outliers import family_test
    rng = np.random.default_rng(1)
    se = np.full(12, 0.05)
    log_time = rng.normal(0.0, 0.01, 12)
    test = family_test([(i,) for i in range(12)], log_time, se, 0.05)
    assert np.allclose(test.sd, np.sqrt(test.tau ** 2 + se ** 2))
    assert not test.discovered.any()
    log_time[3] += 1.0
    assert list(np.flatnonzero(family_test([(i,) for i in range(12)], log_time, se, 0.05).discovered)) == [3]


def test_a_unit_at_the_familys_median_is_no_discovery_even_without_noise():
    """Three units (too few for a spread: tau 0), two measured without noise (se 0): the one
    at the median is not slower than the median, so it is no discovery and lends
    Benjamini-Hochberg no step; the slow unit's z of 2 (p 0.023) is above the first step
    (0.05 / 3) and is not one either."""
    test = family_test([(0,), (1,), (2,)], np.array([0.0, -0.1, 0.2]), np.array([0.0, 0.0, 0.1]),
                       0.05)
    assert test.tau == 0.0 and list(test.sd) == [0.0, 0.0, pytest.approx(0.1)]
    assert list(test.discovered) == [False, False, False]


def test_the_families_spread_is_its_robust_sigma_less_the_typical_units_own_error():
    """tau^2 = robust_sigma(log times)^2 - median(se^2): with every se 0.1 and log times
    spread well beyond it, tau and the detectable ratio follow exactly."""
    from fabscope_analysis.accept_outliers import family_test
    from fabscope_analysis.inference import first_step_z, robust_sigma
    log_time = np.linspace(-0.4, 0.4, 12)
    test = family_test([(i,) for i in range(12)], log_time, np.full(12, 0.1), 0.05)
    tau = math.sqrt(robust_sigma(log_time) ** 2 - 0.01)
    assert test.tau == pytest.approx(tau, rel=1e-12) and tau == pytest.approx(0.30763, abs=1e-5)
    assert test.detectable == pytest.approx(math.exp(first_step_z(12, 0.05) * math.sqrt(tau ** 2 + 0.01)),
                                            rel=1e-12)


def test_a_limit_at_an_end_of_the_interval():
    """A limit equal to the interval's bound on the bad side is met (PASS); one equal to the
    bound on the good side lies inside the interval (CANNOT TELL), for a max and a min."""
    from fabscope_analysis.accept_limits import judge
    from fabscope_analysis.criteria import Bound
    assert judge((7.0, 4.0, 10.0), Bound(max=10.0)) == "pass"
    assert judge((7.0, 4.0, 10.0), Bound(min=4.0)) == "pass"
    assert judge((7.0, 4.0, 10.0), Bound(max=4.0)) == "cannot tell"
    assert judge((7.0, 4.0, 10.0), Bound(min=10.0)) == "cannot tell"
    assert judge((7.0, 4.0, 10.0), Bound(max=3.9)) == "fail" and judge((7.0, 4.0, 10.0), Bound(min=10.1)) == "fail"


def test_junit_marks_a_check_that_cannot_tell_skipped_with_its_reason(tmp_path):
    """The third outcome in JUnit: a check that cannot tell (or was skipped) is a <skipped>
    element whose message is its reason, and the suite counts it as skipped."""
    from fabscope_analysis.accept_result import CheckResult
    from fabscope_analysis.accept_text import write_junit
    unsure = CheckResult(rule="latency", subject="test 0001",
                         cannot_tell="p99_us: the limit 20 lies inside the interval [18, 23]")
    skipped = CheckResult(rule="latency", subject="test 0002", skipped="no samples in this instance")
    path = tmp_path / "j.xml"
    write_junit([unsure, skipped], str(path), "fabscope")
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite.get("skipped") == "2" and suite.get("failures") == "0"
    assert [case.find("skipped").get("message") for case in suite.iter("testcase")] == \
        ["p99_us: the limit 20 lies inside the interval [18, 23]", "no samples in this instance"]
    # beside a check that passed and one that failed: each counted once, in its own class
    passed = CheckResult(rule="latency", subject="test 0003")
    failed = CheckResult(rule="latency", subject="test 0004", messages=["p99_us = 30 us"])
    write_junit([passed, unsure, failed, skipped], str(path), "fabscope")
    suite = ET.parse(path).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "1", "2")
    assert [[child.tag for child in case] for case in suite.iter("testcase")] == \
        [[], ["skipped"], ["failure"], ["skipped"]]
    # a long reason is cut to its first 500 characters in the attribute
    long_reason = CheckResult(rule="latency", subject="test 0005", cannot_tell="".join(
        f"{i % 10}" for i in range(600)))
    write_junit([long_reason], str(path), "fabscope")
    message = ET.parse(path).getroot().find("testsuite/testcase/skipped").get("message")
    assert message == long_reason.cannot_tell[:500] and len(message) == 500, len(message)
    # and so is a long failure message (its whole text stays in the element's body)
    long_failure = CheckResult(rule="latency", subject="test 0006", messages=[long_reason.cannot_tell])
    write_junit([long_failure], str(path), "fabscope")
    failure = ET.parse(path).getroot().find("testsuite/testcase/failure")
    assert failure.get("message") == long_reason.cannot_tell[:500] and failure.text == long_reason.cannot_tell


def test_the_count_line_tells_passed_failed_cannot_tell_and_skipped_apart_as_junit_does(tmp_path):
    """A check that cannot tell, or was skipped, did not pass: accept's count line counts
    each outcome apart, the same numbers as the JUnit suite's tests, failures and skipped."""
    checks = [CheckResult(rule="latency", subject="test 0003"),
              CheckResult(rule="latency", subject="test 0001", cannot_tell="p99_us: inside"),
              CheckResult(rule="latency", subject="test 0004", messages=["p99_us = 30 us"]),
              CheckResult(rule="status", subject="test 0002", instance=2, skipped="no tool")]
    criteria = SimpleNamespace(path="c.yaml", rules=[SimpleNamespace(name="latency")])
    for shown, line in ((checks, "accept: 1 of 4 checks passed, 1 failed, 1 cannot tell, 1 skipped "
                                 "(c.yaml on x.h5) -> FAIL"),
                        ([checks[0], checks[1]], "accept: 1 of 2 checks passed, 1 cannot tell "
                                                 "(c.yaml on x.h5) -> CANNOT TELL"),
                        ([checks[0]], "accept: 1 of 1 checks passed (c.yaml on x.h5) -> PASS")):
        reasons = [Reason("check", "latency: test 0004: p99_us = 30 us", rule="latency")
                   for c in shown if c.messages]
        out = io.StringIO()
        print_checks(Verdict(criteria, "given", "x.h5", shown, reasons), "x.h5", out)
        assert line in out.getvalue().splitlines(), out.getvalue()
        write_junit(shown, str(tmp_path / "j.xml"), "fabscope")
        tests, failures, skipped = (int(ET.parse(tmp_path / "j.xml").getroot().find("testsuite").get(key))
                                    for key in ("tests", "failures", "skipped"))
        assert line.startswith(f"accept: {tests - failures - skipped} of {tests} checks passed")


def test_the_ranks_spread_is_not_widened_by_a_group_one_fault_slowed():
    """Qn: 2.2219 x the k-th smallest distance between two units (k = h(h-1)/2, h = n//2 + 1)
    x the small-n factor (0.872 at n = 9). Five healthy ranks 0.01 apart and four that one
    slow NIC moved together: the 10th smallest distance is 0.02 however far the four moved;
    the MAD about the median widens when the median rank sits between the groups."""
    from fabscope_analysis.accept_outliers import pairwise_sigma
    from fabscope_analysis.inference import robust_sigma
    healthy = [0.0, 0.01, 0.02, 0.03, 0.04]
    for moved in (0.7, 1.4):
        values = np.array(healthy + [moved + d for d in (0.0, 0.01, 0.02, 0.03)])
        assert pairwise_sigma(values) == pytest.approx(2.2219 * 0.872 * 0.02, rel=1e-6)
    # the MAD about the median when the median rank is itself half-slowed (as in the 4x ladder)
    between = np.array([0.0, 0.01, 0.02, 0.03, 0.25, 0.7, 0.71, 0.72, 0.73])
    assert robust_sigma(between) > 0.3 and pairwise_sigma(between) < 0.05
    # large n: the asymptotic factor n / (n + 1.4) (odd) and n / (n + 3.8) (even); normal
    # data: about 1
    rng = np.random.default_rng(7)
    assert pairwise_sigma(rng.normal(0.0, 0.1, 2001)) == pytest.approx(0.1, rel=0.05)
    assert pairwise_sigma(np.array([1.0])) == 0.0
    # the small-n factors, where the k-th distance is known: n = 4 (k = 3), n = 2 (k = 1)
    assert pairwise_sigma(np.array([0.0, 0.01, 0.02, 0.03])) == pytest.approx(2.2219 * 0.512 * 0.01)
    assert pairwise_sigma(np.array([0.0, 0.05])) == pytest.approx(2.2219 * 0.399 * 0.05)
    # above 9: n / (n + 3.8) even, n / (n + 1.4) odd; 0.01 steps: the 15th distance is 0.02
    steps = 0.01 * np.arange(11)
    assert pairwise_sigma(steps[:10]) == pytest.approx(2.2219 * 10 / 13.8 * 0.02)
    assert pairwise_sigma(steps) == pytest.approx(2.2219 * 11 / 12.4 * 0.02)
    # every small-n factor of Croux & Rousseeuw's table, the k-th distance found by brute force
    published = {2: 0.399, 3: 0.994, 4: 0.512, 5: 0.844, 6: 0.611, 7: 0.857, 8: 0.669, 9: 0.872}
    for n, factor in published.items():
        values = np.random.default_rng(n).normal(0.0, 1.0, n)
        h = n // 2 + 1
        kth = sorted(abs(a - b) for i, a in enumerate(values) for b in values[i + 1:])[h * (h - 1) // 2 - 1]
        assert pairwise_sigma(values) == pytest.approx(2.2219 * factor * kth), n


def test_a_flagged_samples_failure_names_the_ranks_whose_samples_failed_their_check(files, tmp_path):
    """flagged_samples: {max: 0} fails and names who: the rank with samples whose data check
    failed (flags bit 0), with their count, not the ranks whose samples are fine."""
    import h5py
    from fabscope_analysis.reader import FLAG_DATA_CHECK_FAILED
    path = tmp_path / "flagged.h5"
    path.write_bytes(open(files["clean"], "rb").read())
    with h5py.File(path, "r+") as f:
        samples = f["tests/0000/samples"][...]
        ranks = sorted(set(samples["rank"].tolist()))
        bad = ranks[-1]
        which = np.flatnonzero(samples["rank"] == bad)[:3]
        samples["flags"][which] |= FLAG_DATA_CHECK_FAILED
        f["tests/0000/samples"][...] = samples
    rules = ("fabscope_criteria: 1\nallowed_status: null\nrules:\n  - name: clean data\n"
             "    match: {kind: \"*\"}\n    limits:\n      flagged_samples: {max: 0}\n")
    failed = [c for c in _checks(path, rules, tmp_path) if not c.passed]
    assert [c.instance for c in failed] == [0], [(c.instance, c.messages) for c in failed]
    text = " ".join(failed[0].messages)
    assert f"flagged on rank {bad} (" in text and ") 3 samples" in text, text
    assert all(f"rank {r} (" not in text.split("flagged on", 1)[1] for r in ranks if r != bad), text


def test_a_straggler_is_printed_with_its_p99_and_the_medians_in_microseconds(files, tmp_path):
    """The straggler line's figures agree with each other: the rank's p99 over the median
    rank's p99 is the ratio printed (to the 3 figures shown), both in microseconds."""
    import re
    out = run_cli("accept", files["standard"], "--criteria", _write(tmp_path, OUTLIERS))
    line = re.search(r"rank 3 \(fh1\): p99 ([\d.,]+) us takes ([\d.]+)x the median rank's p99 time "
                     r"\(median rank p99 ([\d.,]+) us\), required <= 2x", out.stdout)
    assert line, out.stdout
    p99, ratio, median = (float(g.replace(",", "")) for g in line.groups())
    assert p99 / median == pytest.approx(ratio, rel=0.02), line.group(0)


class _Names:
    """How accept names ranks and pairs, without a file (no serial retest)."""
    retest_of: dict = {}

    def rank(self, rank):
        return f"rank {rank}"

    def pair(self, rank, peer):
        return f"rank {rank} -> rank {peer}"


_LATENCY_TEST = SimpleNamespace(metric="latency", index=0, get=lambda key, default=None: default)


def test_a_slow_ranks_p99_and_the_median_ranks_are_printed_in_microseconds():
    """Nine ranks of 100 latencies, each 1.000 to 1.009 times its own base: 10 us for eight
    of them, 50 us for rank 8; a p99 is 1.009 x the base: 50.45 us against 10.09 us."""
    import pandas as pd
    from fabscope_analysis.accept_outliers import check_ranks
    from fabscope_analysis.accept_result import CheckResult
    s = pd.DataFrame([{"rank": r, "peer": -1, "latency_ns": (50e3 if r == 8 else 10e3) * (1 + 0.001 * (i % 10))}
                      for r in range(9) for i in range(100)])
    result = CheckResult("no straggler", "test 0000")
    check_ranks(_Names(), _LATENCY_TEST, s, 2.0, 0.05, result)
    assert result.messages == ["rank 8: p99 50.45 us takes 5.0x the median rank's p99 time (median rank "
                               "p99 10.09 us), required <= 2x"]


def _pairs_family(log_time, se):
    import pandas as pd
    n = len(log_time)
    return pd.DataFrame({"rank": range(n), "peer": [(r + 1) % n for r in range(n)],
                         "log_time": np.asarray(log_time, dtype=np.float64), "se": se})


def test_five_slow_pairs_are_all_named_and_no_more_are_counted():
    """Fifteen pairs about the median and five at 20 to 40 % of it: MAX_NAMED is five, so
    the five are named, slowest first, and no '... and 0 more' follows."""
    from fabscope_analysis.accept_outliers import check_pairs
    from fabscope_analysis.accept_result import CheckResult
    slow = {16: 0.2, 18: 0.25, 15: 0.3, 17: 0.35, 19: 0.4}
    family = _pairs_family([math.log(1 / slow[r]) if r in slow else 0.001 * r for r in range(20)], 0.01)
    result = CheckResult("uniform pairs", "test 0000")
    check_pairs(_Names(), _LATENCY_TEST, family, 0.5, 0.05, result)
    assert [m.split(":")[0] for m in result.messages] == [f"pair rank {r} -> rank {(r + 1) % 20}"
                                                        for r in (16, 18, 15, 17, 19)]


def test_a_pairs_family_too_noisy_to_see_half_the_median_cannot_tell():
    """Eight pairs spread 0.2 x (-2, -1, -1, 0, 0, 1, 1, 2) in log time, no error of their
    own: sigma 1.4826 x MAD 0.2; BH's first step at q/8 needs z = 2.50, a slowdown of
    exp(2.50 x 0.297) = 2.10x, beyond the 2x (50 %) the rule asks: cannot tell, not a pass."""
    from scipy.stats import norm
    from fabscope_analysis.accept_outliers import check_pairs
    from fabscope_analysis.accept_result import CheckResult
    family = _pairs_family(0.2 * np.array([-2, -1, -1, 0, 0, 1, 1, 2]), 0.0)
    result = CheckResult("uniform pairs", "test 0000")
    check_pairs(_Names(), _LATENCY_TEST, family, 0.5, 0.05, result)
    sigma = 1.4826 * 0.2
    detectable = math.exp(norm.isf(0.05 / 8) * sigma)
    assert 2.0 < detectable < 2.2
    assert (result.label, result.messages) == ("CANNOT TELL", [])
    assert result.cannot_tell == (
        f"pair_min_fraction_of_median: pairs vary {100 * sigma:.0f}% among themselves; among 8 pairs "
        f"only one below {100 / detectable:.0f}% of the median pair can be told from that noise, the "
        f"rule asks 50%")


def test_pair_medians_and_their_errors_are_each_pairs_own():
    """pair_log_medians against numpy, pair by pair: odd and even sample counts (the
    midpoint rule), the MAD-based standard error 1.2533 x 1.4826 x MAD / sqrt(n), and no
    error from fewer than 3 samples."""
    import pandas as pd
    from fabscope_analysis.accept_outliers import pair_log_medians
    rng = np.random.default_rng(11)
    rows = []
    for (rank, peer), n in {(0, 1): 5, (1, 0): 6, (2, 0): 2, (0, 2): 9}.items():
        for t in rng.lognormal(8.0, 0.3, n):
            rows.append({"rank": rank, "peer": peer, "latency_ns": float(t)})
    s = pd.DataFrame(rows)
    got = pair_log_medians(s, "latency").set_index(["rank", "peer"])
    for (rank, peer), group in s.groupby(["rank", "peer"]):
        logs = np.log(group["latency_ns"].to_numpy())
        row = got.loc[(rank, peer)]
        assert row["samples"] == len(logs)
        assert row["log_time"] == pytest.approx(np.median(logs), abs=1e-12)
        mad = np.median(np.abs(logs - np.median(logs)))
        se = 1.2533 * 1.4826 * mad / np.sqrt(len(logs)) if len(logs) >= 3 else np.inf
        assert row["se"] == pytest.approx(se, rel=1e-3), (rank, peer)
    # a sample with no valid time (0 ns) is left out, its pair's others kept
    zero = pd.DataFrame([{"rank": 0, "peer": 1, "latency_ns": 0.0}] +
                        [{"rank": 0, "peer": 1, "latency_ns": t} for t in (100.0, 300.0, 200.0)])
    got = pair_log_medians(zero, "latency")
    assert list(got["samples"]) == [3] and got["log_time"].iloc[0] == pytest.approx(math.log(200.0))


@pytest.mark.parametrize("pairs, slow_rank", [(((0, 1), (0, 2), (3, 1)), 0),
                                               (((1, 0), (1, 2), (3, 0)), 1)])
def test_a_limit_names_the_pair_when_any_rank_measured_more_than_one_peer(tmp_path, pairs,
                                                                          slow_rank):
    """A limit's failure lists pairs as well as ranks when a rank measured several peers
    (the rank alone would not say which of its pairs), even if another rank measured one:
    rank 0 measures peers 1 and 2 (2 slow, 10 us), rank 3 measures peer 1 only; and peer 0
    is a peer like the others (rank 1 measures peers 0 and 2, rank 3 peer 0 only)."""
    from synthetic import SyntheticRun, make_samples
    run = SyntheticRun(tmp_path / "peers.h5", nranks=4, ranks_per_host=1, seed=3)
    entries = [(rank, it, peer, 8, 2 * (10_000 if peer == 2 else 2_000))
               for rank, peer in pairs for it in range(100)]
    run.add_test("lat", "latency", make_samples(entries, run.start_ns()), nbytes=8, divisor=2)
    run.close()
    fails = _failures(tmp_path / "peers.h5", """\
        fabscope_criteria: 1
        allowed_status: null
        rules:
          - name: tight
            match: {kind: latency}
            limits: {p99_us: {max: 5}}
        """)
    assert len(fails) == 1
    msg = fails[0].messages[0]
    assert f"ranks beyond the limit: rank {slow_rank} (fh{slow_rank}) 10 us" in msg, msg
    assert f"pairs beyond the limit: rank {slow_rank} (fh{slow_rank}) -> rank 2 (fh2) 10 us" in msg, msg


def test_accepts_diagnosis_compares_with_the_first_baseline(tmp_path):
    """`diagnose: true` with --baseline: diagnose compares the run with the first
    known-good run given (a fabric uniformly slower than it is `(all hosts)`), with one
    baseline or several."""
    from synthetic import write_matrix_run
    base, slow = tmp_path / "base.h5", tmp_path / "slow.h5"
    write_matrix_run(base, seed=1)
    write_matrix_run(slow, seed=2, send={r: 0.5 for r in range(6)})
    criteria = """\
        fabscope_criteria: 1
        allowed_status: null
        diagnose: true
        rules:
          - name: measured
            match: {kind: "*"}
            limits: {samples: {min: 1}}
        """
    rules = parse_criteria_text(textwrap.dedent(criteria))

    def failed(*baselines):
        opened = [open_result(b, warn_incomplete=False) for b in baselines]
        try:
            with open_result(slow, warn_incomplete=False) as run:
                return [f"{c.rule}: {c.messages[0]}" for c in evaluate(run, rules, opened)
                        if not c.passed]
        finally:
            for b in opened:
                b.close()
    expected = [f"diagnose: (all hosts): the whole fabric: median pair "
                f"2.00x the baseline's time [{test}] | evidence: baseline {base}, same case"
                for test in ("0000 ap-lat", "0001 ap-bw")]
    for found in (failed(base), failed(base, slow)):
        assert [f.split(" | confidence")[0] for f in found] == expected, found
    assert failed(slow, base) == []


def test_an_impact_without_a_quiet_partner_is_its_own_figure_with_no_interval():
    """Figures: an impact figure that has no quiet instance to resample against (or no
    finite value) is the point value three times: (value, low, high) all alike."""
    analysis = SimpleNamespace(impacts=lambda inst, scope: (1.5, 2.0), quiet_partner=lambda inst: None,
                               samples=lambda inst, scope: [],
                               quiet_scope=lambda inst, scope: None)
    figures = Figures(analysis)
    inst, scope = SimpleNamespace(index=3), SimpleNamespace(name="all")
    assert figures.interval(inst, scope, "impact_mean") == (1.5, 1.5, 1.5)
    assert figures.interval(inst, scope, "impact_p99") == (2.0, 2.0, 2.0)


def test_a_unit_above_the_median_without_any_noise_is_a_discovery_however_small():
    """Three units (tau 0), all measured without noise (se 0): the one 1.28x slower than the
    median (log excess 0.25, below 1) has an infinite z, p 0, and is a discovery; the
    others are not slower than the median."""
    test = family_test([(0,), (1,), (2,)], np.array([0.0, -0.1, 0.25]), np.zeros(3), 0.05)
    assert list(test.sd) == [0.0, 0.0, 0.0]
    assert list(test.discovered) == [False, False, True]


def test_named_list_counts_the_rest_only_beyond_the_five_it_names():
    from fabscope_analysis.accept_result import MAX_NAMED, named_list
    assert MAX_NAMED == 5
    five = [(f"rank {r}", 10.0 * r) for r in range(1, 6)]
    assert named_list(five, " us") == "rank 1 10 us, rank 2 20 us, rank 3 30 us, rank 4 40 us, rank 5 50 us"
    assert named_list(five + [("rank 6", 60.0)], " us").endswith("rank 5 50 us and 1 more")


def test_a_ratio_against_two_baseline_runs_is_the_t_interval_on_their_log_figures():
    """docs/analysis.md: with 2+ baseline runs the ratio is this run against the baselines'
    geometric mean, their spread the run-to-run variation. Baselines 100 and 400, the run
    200: centre exactly 1, and with one degree of freedom (2 + 1 - 2) the t quantile at
    97.5 % is tan(0.475 pi) (Cauchy), the standard error ln 2 sqrt(2 (1/2 + 1))."""
    from fabscope_analysis.accept_limits import ratio_interval

    def figures(value):
        return SimpleNamespace(interval=lambda inst, scope, key: (value, value, value))
    ev = SimpleNamespace(figures=figures(200.0))
    bases = [(figures(100.0), None, None), (figures(400.0), None, None)]
    (centre, low, high), method = ratio_interval(ev, None, None, "samples", bases)
    half = math.tan(0.475 * math.pi) * math.log(2) * math.sqrt(3)
    assert centre == pytest.approx(1.0, rel=1e-12)
    assert (math.log(low), math.log(high)) == (pytest.approx(-half, rel=1e-9), pytest.approx(half, rel=1e-9))
    assert method == "t interval on log figures against 2 baseline runs (1 df)"
    # one baseline: a counted figure is the exact ratio
    assert ratio_interval(ev, None, None, "samples", bases[:1]) == ((2.0, 2.0, 2.0), "counted figures")


def _diagnose_check(path, value, diagnosis):
    criteria = parse_criteria_text(textwrap.dedent(f"""\
        fabscope_criteria: 1
        allowed_status: null
        diagnose: {value}
        rules:
          - name: measured
            match: {{kind: "*"}}
            limits: {{samples: {{min: 1}}}}
        """))
    with open_result(path, warn_incomplete=False) as run:
        found = [c for c in evaluate(run, criteria, diagnosis=diagnosis) if c.rule == "diagnose"]
    assert len(found) == 1, found
    return found[0]


def test_a_diagnosis_that_cannot_tell_fails_accept_only_when_diagnose_is_strict(files):
    """docs/analysis.md: `diagnose: true` fails on a culprit host, `strict` also when it
    cannot tell; without strict the check passes and says why it was allowed."""
    doubt = SimpleNamespace(culprits=[], verdict="cannot tell", notes=["a note"],
                            first_line=lambda: "cannot tell: too few samples")
    allowed = _diagnose_check(files["clean"], "true", doubt)
    assert allowed.label == "PASS" and allowed.details == [
        "cannot tell: too few samples (allowed: diagnose is not 'strict')", "a note"]
    strict = _diagnose_check(files["clean"], "strict", doubt)
    assert strict.label == "FAIL" and strict.messages == ["cannot tell: too few samples"]


def test_the_outlier_rules_default_false_discovery_rate_is_5_percent(files, tmp_path):
    """docs/analysis.md: Benjamini-Hochberg at `false_discovery_rate: q`, default 0.05."""
    checks = _checks(files["clean"], OUTLIERS, tmp_path)
    methods = [d for c in checks for d in c.details if "Benjamini-Hochberg" in d]
    assert methods and all("Benjamini-Hochberg at q = 0.05 under" in d for d in methods), methods
    given = _checks(files["clean"], OUTLIERS.replace(
        "pair_min_fraction_of_median: 0.9", "pair_min_fraction_of_median: 0.9, false_discovery_rate: 0.01"), tmp_path)
    assert any("q = 0.01 under" in d for c in given for d in c.details)
