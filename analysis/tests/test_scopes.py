"""Site scopes: samples inside a site and between sites are never mixed.

Ranks 0,1 sit in site A and 2,3 in site B (one rank per host). Inside a site a round
trip takes ~2 us, between the sites ~80 us (a WAN path). Every command must keep the
three scopes apart; a run without site labels must give exactly the old numbers.
"""

import math

import numpy as np
import pytest

from fabscope_analysis import open_result
from fabscope_analysis.accept import evaluate
from fabscope_analysis.compare import comparison_frame
from fabscope_analysis.compare_stats import ONE_RUN
from fabscope_analysis.criteria import CriteriaError, parse_criteria_text
from fabscope_analysis.report import build_report
from fabscope_analysis.run_analysis import RunAnalysis
from fabscope_analysis.scopes import SiteScopes
from helpers import run_cli
from synthetic import SAMPLE_DTYPE, SyntheticRun, make_samples

SITES = {0: "A", 1: "A", 2: "B", 3: "B"}
PAIRS = [(r, p) for r in range(4) for p in range(4) if r < p]
INTRA_NS, WAN_NS = 2_000, 80_000


def _latency(rng, intra=INTRA_NS, wan=WAN_NS, slow_site_a=1.0, iterations=200):
    entries = []
    for rank, peer in PAIRS:
        base = intra if SITES[rank] == SITES[peer] else wan
        if SITES[rank] == SITES[peer] == "A":
            base *= slow_site_a
        noise = rng.lognormal(0.0, 0.05, iterations)
        entries += [(rank, it, peer, 8, 2 * base * noise[it]) for it in range(iterations)]
    return entries


def _write(path, sites=SITES, seed=3, wan=WAN_NS, slow_site_a=1.0, congested=False,
           iterations=200):
    run = SyntheticRun(path, nranks=4, ranks_per_host=1, seed=seed, sites=sites)
    rng = run.rng
    quiet = run.add_test("lat", "latency", make_samples(_latency(rng, wan=wan,
                                                                 slow_site_a=slow_site_a,
                                                                 iterations=iterations),
                                                        run.start_ns()),
                         nbytes=8, divisor=2, pattern="all-pairs", case="lat/8",
                         extra_attrs={"canaries": "0,1,2,3"})
    if congested:
        run.add_test("lat", "latency", make_samples(_latency(rng, wan=wan, slow_site_a=3.0),
                                                    run.start_ns()),
                     nbytes=8, divisor=2, pattern="all-pairs", case="lat/8", condition="incast",
                     quiet_index=quiet, extra_attrs={"canaries": "0,1,2,3"})
    # A TP all-reduce across both sites: collective samples (peer -1).
    coll = [(r, it, -1, 16384, 30_000 * (1 + 0.01 * it)) for r in range(4) for it in range(50)]
    run.add_test("tp-allreduce", "allreduce", make_samples(coll, run.start_ns()), nbytes=16384,
                 pattern="collective", extra_attrs={"canaries": "0,1,2,3",
                                                    "spans_sites": "A,B"})
    run.close()
    return str(path)


@pytest.fixture(scope="module")
def scoped(tmp_path_factory):
    d = tmp_path_factory.mktemp("scopes")
    return {"labelled": _write(d / "labelled.h5"),
            "unlabelled": _write(d / "unlabelled.h5", sites=None),
            "wan-slower": _write(d / "wan-slower.h5", seed=3, wan=2 * WAN_NS),  # same noise
            "congested": _write(d / "congested.h5", seed=5, congested=True),
            # 400 iterations: 1,600 inter-site samples, 16 beyond the p99 (not a thin tail).
            "long": _write(d / "long.h5", iterations=400),
            "long-wan-slower": _write(d / "long-wan-slower.h5", wan=2 * WAN_NS, iterations=400),
            "dir": d}


def _rows(frame, index):
    return frame[frame["index"] == index].reset_index(drop=True)


def test_scope_rules():
    scopes = SiteScopes({0: "A", 1: "A", 2: "B", 3: ""}, [0, 1, 2])
    assert scopes.scope_of(0, 1).name == "site=A"
    assert scopes.scope_of(2, 0).name == scopes.scope_of(0, 2).name == "inter-site A<->B"
    assert scopes.scope_of(3, 0).name == "inter-site ?<->A"  # unknown never joins a site
    assert scopes.scope_of(1, -1).name == "group across A,B"
    assert not SiteScopes({0: "", 1: ""}, [0, 1]).labelled
    assert SiteScopes({0: "", 1: ""}, [0, 1]).scope_of(0, 1).name == ""


def test_summary_splits_sites_and_wan(scoped):
    with open_result(scoped["labelled"]) as run:
        frame = RunAnalysis(run).summary_frame()
        s = run.test(0).samples()
    rows = _rows(frame, 0)
    assert list(rows["scope"]) == ["site=A", "site=B", "inter-site A<->B"]
    assert list(rows["crosses_sites"]) == [False, False, True]
    assert list(rows["samples"]) == [200, 200, 800]
    # No WAN sample leaks into a site's tail, and no site sample into the WAN's.
    assert rows.loc[0, "worst"] < 3 and rows.loc[1, "worst"] < 3
    assert rows.loc[2, "p50"] > 60
    wan = s[[(SITES[r] != SITES[p]) for r, p in zip(s["rank"], s["peer"])]]
    lat = (wan.t_done_ns - wan.t_post_ns) / 2 / 1e3
    assert math.isclose(rows.loc[2, "p99"], np.percentile(lat, 99), rel_tol=1e-9)
    coll = _rows(frame, 1)
    assert list(coll["scope"]) == ["group across A,B"] and coll.loc[0, "crosses_sites"]


def test_without_labels_numbers_are_unchanged(scoped):
    with open_result(scoped["unlabelled"]) as run:
        analysis = RunAnalysis(run)
        assert not analysis.labelled
        rows = _rows(analysis.summary_frame(), 0)
        s = run.test(0).samples()
    assert list(rows["scope"]) == [""] and rows.loc[0, "samples"] == len(s)
    lat = (s.t_done_ns - s.t_post_ns) / 2 / 1e3
    assert math.isclose(rows.loc[0, "p99"], np.percentile(lat, 99), rel_tol=1e-12)
    out = run_cli("summary", scoped["unlabelled"])
    assert out.returncode == 0, out.stderr
    assert " scope " not in out.stdout and "site=" not in out.stdout


def test_summary_command_shows_scopes_and_flags_the_group(scoped):
    out = run_cli("summary", scoped["labelled"])
    assert out.returncode == 0, out.stderr
    for needle in ("scope", "site=A", "site=B", "inter-site A<->B", "group across A,B",
                   "0001 the measuring group spans sites A,B"):
        assert needle in out.stdout, (needle, out.stdout)


def test_report_has_a_scope_column(scoped):
    with open_result(scoped["labelled"]) as run:
        html = build_report(run)
    assert "<th class=\"l\">scope</th>" in html
    assert "inter-site A&lt;-&gt;B" in html
    assert "spans sites A,B" in html


def test_impact_compares_the_same_scope(scoped):
    with open_result(scoped["congested"]) as run:
        rows = _rows(RunAnalysis(run).summary_frame(), 1)
    impact = dict(zip(rows["scope"], rows["impact_p99"]))
    assert impact["site=A"] > 2.5          # only site A was congested
    assert 0.8 < impact["site=B"] < 1.25
    assert 0.8 < impact["inter-site A<->B"] < 1.25


CRITERIA = """
fabscope_criteria: 1
rules:
{rules}
"""


def _checks(path, rules, baseline=None):
    criteria = parse_criteria_text(CRITERIA.format(rules=rules), "c.yaml")
    with open_result(path) as run:
        if baseline is None:
            return evaluate(run, criteria)
        with open_result(baseline) as base:
            return evaluate(run, criteria, base)


def test_accept_thresholds_apply_per_scope(scoped):
    checks = _checks(scoped["labelled"], """
  - name: small latency
    match: {kind: latency}
    limits: {p99_us: {max: 10}}""")
    rule = [c for c in checks if c.rule == "small latency"]
    verdict = {c.subject.rsplit("[", 1)[1].rstrip("]"): c.passed for c in rule}
    assert verdict == {"site=A": True, "site=B": True, "inter-site A<->B": False}, verdict
    failed = next(c for c in rule if not c.passed)
    assert "rank 0 (fh0)" in " ".join(failed.messages)  # names the ranks of the WAN scope

    # A site's limit and a WAN path's limit, each on its own scope.
    checks = _checks(scoped["labelled"], """
  - name: inside a site
    match: {kind: latency, scope: "site=*"}
    limits: {p99_us: {max: 10}}
  - name: between sites
    match: {kind: latency, scope: "inter-site *"}
    limits: {p99_us: {max: 200}}""")
    assert all(c.passed for c in checks), [(c.subject, c.messages) for c in checks]
    assert sum(1 for c in checks if c.rule == "inside a site") == 2
    assert sum(1 for c in checks if c.rule == "between sites") == 1


def test_accept_scope_rule_without_a_matching_scope(scoped):
    checks = _checks(scoped["unlabelled"], """
  - name: between sites
    match: {kind: latency, scope: "inter-site *"}
    limits: {p99_us: {max: 200}}""")
    failed = [c for c in checks if not c.passed]
    assert len(failed) == 1 and "none has a site scope matching" in failed[0].messages[0]


def test_accept_outliers_do_not_call_the_wan_a_straggler(scoped):
    checks = _checks(scoped["labelled"], """
  - name: no straggler
    match: {kind: latency}
    outliers: {rank_p99_max_ratio_to_median: 2.0, pair_min_fraction_of_median: 0.5}""")
    assert all(c.passed for c in checks), [(c.subject, c.messages) for c in checks]


def test_accept_baseline_per_scope(scoped):
    rules = """
  - name: regression
    match: {kind: latency}
    baseline: {p99_us: {max_ratio: 1.3}}"""
    checks = _checks(scoped["wan-slower"], rules, baseline=scoped["labelled"])
    verdict = {c.subject.rsplit("[", 1)[1].rstrip("]"): c.passed for c in checks
               if c.rule == "regression"}
    assert verdict == {"site=A": True, "site=B": True, "inter-site A<->B": False}, verdict
    # A labelled run against an unlabelled baseline: no scope in common, never mixed.
    checks = _checks(scoped["labelled"], rules, baseline=scoped["unlabelled"])
    failed = [c for c in checks if c.rule == "regression" and not c.passed]
    assert len(failed) == 3 and all("has no site scope" in c.messages[0] for c in failed)


def test_criteria_scope_key():
    parse_criteria_text(CRITERIA.format(rules="""
  - name: r
    match: {scope: ["site=*", "group site=*"]}
    limits: {samples: {min: 1}}"""), "c.yaml")
    with pytest.raises(CriteriaError):
        parse_criteria_text(CRITERIA.format(rules="""
  - name: r
    match: {site: A}
    limits: {samples: {min: 1}}"""), "c.yaml")


def _compare(scoped, a, b):
    runs = [open_result(scoped[a]), open_result(scoped[b])]
    try:
        return comparison_frame([RunAnalysis(r) for r in runs], ["A", "B"], 100, 1)
    finally:
        for r in runs:
            r.close()


def _rows_of(frame, stat):
    rows = frame[(frame["stat"] == stat) & (frame["name"] == "lat")]
    return {scope: row for scope, (_, row) in zip(rows["scope"], rows.iterrows())}


def test_compare_matches_scope_with_scope(scoped):
    """The WAN twice as slow: worse between the sites, nothing inside them."""
    frame, notes = _compare(scoped, "long", "long-wan-slower")
    assert not notes
    # B against the reference A only, never the reference against itself
    assert set(frame["reference"]) == {"A"} and set(frame["other"]) == {"B"}
    for stat in ("p50", "p99"):
        rows = _rows_of(frame, stat)
        # one run per side: a difference the run sees is "cannot tell", never "worse"
        assert rows["inter-site A<->B"]["verdict"] == ONE_RUN, (stat, rows)
        assert rows["site=A"]["verdict"] not in ("worse", ONE_RUN)
        assert rows["site=B"]["verdict"] not in ("worse", ONE_RUN)
    # 1,600 samples leave 1.6 beyond the p99.9: a thin tail is never called a difference.
    wan = _rows_of(frame, "p99.9")["inter-site A<->B"]
    assert wan["thin_tail"] and wan["verdict"] == "no clear difference"


def test_compare_thin_tail_is_not_a_verdict(scoped):
    """800 inter-site samples leave 8 beyond the p99 (< MIN_TAIL_SAMPLES): the interval
    excludes 0 by far, yet the p99 row is 'no clear difference' (thin tail); p50 is seen
    (one run per side: cannot tell)."""
    frame, notes = _compare(scoped, "labelled", "wan-slower")
    assert not notes
    assert _rows_of(frame, "p50")["inter-site A<->B"]["verdict"] == ONE_RUN
    wan = _rows_of(frame, "p99")["inter-site A<->B"]
    assert wan["ci_low"] > 0 and wan["thin_tail"]
    assert wan["verdict"] == "no clear difference"
    out = run_cli("compare", scoped["labelled"], scoped["wan-slower"], "--resamples", "50")
    assert out.returncode == 0, out.stderr
    assert "no clear difference (thin tail)" in out.stdout


def test_compare_labelled_with_unlabelled_mixes_nothing(scoped):
    """No scope in common: exit 2, and the message lists each side's cases."""
    out = run_cli("compare", scoped["labelled"], scoped["unlabelled"], "--resamples", "50")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "no case is on both sides" in out.stderr
    labelled, unlabelled = out.stderr.split("labelled.h5 has: ", 1)[1].split("; unlabelled.h5 has: ")
    assert "lat/8 [quiet] [site=A]" in labelled and "[inter-site A<->B]" in labelled
    assert "lat/8 [quiet]" in unlabelled and "site=" not in unlabelled
    assert out.stdout == ""


def test_auxiliary_rows_are_not_headline_samples(tmp_path):
    """An incast receiver's aggregate (flag bit 8) is not a sender's sample."""
    run = SyntheticRun(tmp_path / "incast.h5", nranks=3, ranks_per_host=1)
    rows = [(1, it, 0, 65536, 10_000.0) for it in range(20)] + \
        [(2, it, 0, 65536, 10_000.0) for it in range(20)]
    s = make_samples(rows, run.start_ns())
    aux = np.zeros(5, dtype=SAMPLE_DTYPE)
    for i in range(5):
        aux[i] = (0, i, -1, 131072, run.start_ns(), run.start_ns() + 900_000, 1 << 8, 0)
    run.add_test("incast", "incast", np.concatenate([s, aux]), nbytes=65536,
                 metric="bandwidth", pattern="incast")
    run.close()
    with open_result(tmp_path / "incast.h5") as result:
        row = RunAnalysis(result).summary_frame().iloc[0]
    assert row["samples"] == 40
    assert math.isclose(row["p50"], 65536 / 10_000, rel_tol=1e-6)
