"""Congestion impact factor per serving class and neighbour condition (congested / quiet
at p50, p99, p99.9), read only from enough values, and its rule in the SLO verdict."""

import io

import numpy as np
import pytest

from serving_files import serving_file
from test_mix import write_mix_file

from fabscope_analysis import models, open_result
from fabscope_analysis.serving.impact import Deployment, compute_impact
from fabscope_analysis.serving.impact_text import headline_lines, print_impact
from fabscope_analysis.serving.cif import cif_check, cif_rows
from fabscope_analysis.serving.measured import measure

LLAMA70 = models.preset("llama3-70b")


def rows_of(path, limit=2.0):
    with open_result(path) as result:
        measured = measure(result, Deployment(LLAMA70, 8))
    return measured, cif_rows(measured, limit)


def test_cif_is_the_ratio_of_percentiles_per_class_and_condition(tmp_path):
    """TP all-reduce 3x slower under incast, 1.1x under alltoall; KV 1.2x under incast."""
    path = serving_file(tmp_path / "c.h5", tp_loaded=(("incast", 3.0), ("alltoall", 1.1)),
                        iterations=1200)
    measured, rows = rows_of(path)
    tp = measured.classes["tp"].by_condition
    incast = next(r for r in rows if r.cls == "tp" and r.condition == "incast")
    for label, q in (("p50", 50), ("p99", 99), ("p99.9", 99.9)):
        assert incast.cif[label] == pytest.approx(np.percentile(tp["incast"], q) /
                                                  np.percentile(tp["quiet"], q))
    assert incast.cif["p50"] == pytest.approx(3.0, rel=0.05) and incast.status == "FAIL"
    calm = next(r for r in rows if r.cls == "tp" and r.condition == "alltoall")
    assert calm.status == "PASS" and calm.p99_interval[1] <= 2
    kv = next(r for r in rows if r.cls == "kv")
    assert kv.condition == "incast" and kv.cif["p99.9"] is None     # 200 requests: no p99.9
    check = cif_check(rows, measured, 2.0)
    assert check.status == "FAIL" and "TP all-reduce [incast] x3" in check.text
    assert cif_check([r for r in rows if r is not incast], measured, 2.0).status == "PASS"


def test_too_few_values_and_quiet_only_cannot_tell(tmp_path):
    measured, rows = rows_of(serving_file(tmp_path / "q.h5", tp_loaded=(), kv_loaded=()))
    assert rows == []
    check = cif_check(rows, measured, 2.0)
    assert check.status == "CANNOT TELL" and "no serving class was measured under a neighbour" \
        in check.text
    assert check.missing == ["TP all-reduce: measured quiet only", "KV push: measured quiet only"]


def test_serving_mix_classes_together_over_isolated(tmp_path):
    """The mix's classes (50 operations per phase): p50 factors x2, x1.5, x1; a p99 needs
    100 values, so each says so rather than judging."""
    measured, rows = rows_of(write_mix_file(tmp_path / "mix.h5"))
    by_class = {r.cls: r for r in rows}
    assert set(by_class) == {"mix/allreduce", "mix/kvpush", "mix/api"}
    assert by_class["mix/allreduce"].cif["p50"] == pytest.approx(2.0, rel=0.01)
    assert by_class["mix/kvpush"].cif["p50"] == pytest.approx(1.5, rel=0.01)
    assert by_class["mix/api"].cif["p50"] == pytest.approx(1.0, rel=0.01)
    assert all(r.condition == "mix together" and r.cif["p99"] is None and
               r.status == "CANNOT TELL" and "a p99 needs 100" in r.why for r in rows)


def test_kv_push_cif_in_impact_and_fit(tmp_path):
    """KV push 3x slower per request under incast, 1.1x under bidirectional: `impact` and
    `fit` read the same factors (queue + transfer per request), the p99 rule fails the
    incast row and passes the other; 200 requests give no p99.9."""
    path = serving_file(tmp_path / "kv.h5", tp_loaded=(), requests=200,
                        kv_loaded=(("incast", 3.0), ("bidirectional", 1.1)))
    with open_result(path) as result:
        impact = compute_impact(result, Deployment(LLAMA70, 8))
    by_condition = {r["condition"]: r for r in impact.kv_rows}
    assert "cif" not in by_condition["quiet"]
    incast = by_condition["incast"]["cif"]
    assert incast["p50"] == pytest.approx(3.0, rel=0.05) and incast["p99.9"] is None
    assert by_condition["bidirectional"]["cif"]["p99"] == pytest.approx(1.1, rel=0.1)
    measured, rows = rows_of(path)
    fit_rows = {r.condition: r for r in rows if r.cls == "kv"}
    assert set(fit_rows) == {"incast", "bidirectional"}
    for condition, row in fit_rows.items():
        for label in ("p50", "p99"):
            assert row.cif[label] == pytest.approx(by_condition[condition]["cif"][label])
    assert fit_rows["incast"].status == "FAIL" and fit_rows["bidirectional"].status == "PASS"
    check = cif_check(rows, measured, 2.0)
    assert check.status == "FAIL" and "KV push [incast] x2.9" in check.text
    assert check.condition == "incast"
    text = io.StringIO()
    print_impact(impact, text)
    assert "CIF p50/p99/p99.9" in text.getvalue()
    incast_line = next(line for line in headline_lines(impact) if "KV transfer [incast]" in line)
    assert "congestion impact factor x2.9" in incast_line and "- p99.9 vs quiet" in incast_line
    assert not any("quiet only" in m for m in impact.missing)


def test_kv_push_measured_quiet_only_is_named_not_judged(tmp_path):
    path = serving_file(tmp_path / "kvq.h5", kv_loaded=())
    with open_result(path) as result:
        impact = compute_impact(result, Deployment(LLAMA70, 8))
    assert any("the kvpush tests ran quiet only (give them conditions" in m for m in impact.missing)
    assert not any("not implemented" in m for m in impact.missing)
    measured, rows = rows_of(path)
    assert "KV push: measured quiet only" in cif_check(rows, measured, 2.0).missing


def test_each_row_names_its_canaries(tmp_path, capsys):
    """A row says which ranks measured its congested side (count, share, placement) and how
    many congested, from the instance's canaries / congestors / placement; fit prints it."""
    import h5py
    from fabscope_analysis.cli import main
    path = serving_file(tmp_path / "g.h5")
    with h5py.File(path, "a") as f:
        for group in f["tests"].values():
            if group.attrs.get("condition") == "incast" and group.attrs.get("kind") == "allreduce":
                group.attrs["canaries"] = ",".join(str(r) for r in range(12))
                group.attrs["congestors"] = ",".join(str(r) for r in range(12, 64))
                group.attrs["placement"] = "random"
    _, rows = rows_of(path)
    tp = next(r for r in rows if r.cls == "tp" and r.condition == "incast")
    assert tp.canaries == "12 canaries of 64 ranks (19 %, random), 52 congesting"
    assert tp.to_json()["canaries"] == tp.canaries
    kv = next(r for r in rows if r.cls == "kv")
    assert kv.canaries == ""      # the instance does not say: nothing is made up
    main(["fit", path, "--slo", "itl_p99=50ms", "--no-diagnose"])
    assert "[incast]" in (out := capsys.readouterr().out) and \
        "canaries: 12 canaries of 64 ranks (19 %, random), 52 congesting" in out


def test_gpcnets_canary_tests_are_shown_beside_the_classes_not_judged(tmp_path):
    """The plan's gpcnet-* tests: their factors (ring latency per message, the 8 B all-reduce
    per iteration) are rows named for GPCNeT and their canaries, not judged by the rule, and
    the 8 B all-reduce is never taken for the deployment's TP all-reduce."""
    from serving_files import add_collective
    from synthetic import SyntheticRun
    from test_impact import allreduce_samples
    from fabscope_analysis.serving.fit import compose_verdict
    from fabscope_analysis.serving.slo import parse_slo_text
    rng = np.random.default_rng(5)
    run = SyntheticRun(tmp_path / "g.h5", nranks=4)
    run.file.attrs["scenario_text"] = "name: s\nmodel: llama3-70b\nparallel: {tp: 8}\n"
    ar = models.allreduce_bytes(LLAMA70, 32)
    add_collective(run, "allreduce", 20e3 * rng.lognormal(0, 0.1, 400), ar, "quiet")
    roles = {"canaries": "0,3", "congestors": "1,2,4,5,6,7,8,9", "placement": "random"}
    q = add_collective(run, "allreduce", 5e3 * rng.lognormal(0, 0.1, 400), 8, "quiet",
                       name="gpcnet-allreduce", extra=roles)
    add_collective(run, "allreduce", 2.5 * 5e3 * rng.lognormal(0, 0.1, 400), 8, "incast", q,
                   name="gpcnet-allreduce", extra=roles)
    ring = {"pattern": "ring", "canaries": "0,1", "congestors": "2,3,4,5,6,7,8,9",
            "placement": "packed"}
    q_ring = None
    for condition, factor in (("quiet", 1.0), ("incast", 4.0)):
        s = allreduce_samples(factor * 3e3 * rng.lognormal(0, 0.1, 300), (0,),
                              start=run.start_ns())
        s["bytes"] = 8
        idx = run.add_test("gpcnet-ring-latency", "latency", s, nbytes=8, condition=condition,
                           case="gpcnet-ring-latency/8", quiet_index=q_ring, extra_attrs=ring)
        q_ring = idx if q_ring is None else q_ring
    run.close()
    measured, rows = rows_of(str(tmp_path / "g.h5"))
    assert rows == []          # no serving class was congested
    assert not any("gpcnet" in m for m in measured.missing)
    assert measured.classes["tp"].bytes == ar and len(measured.classes["tp"].others) == 0
    # an all-reduce's figure is its slowest rank per iteration (400 iterations of 2 ranks),
    # the ring latency's each message's time (300 messages of one rank)
    series = {c.cls: c for c in measured.gpcnet}
    assert len(series["gpcnet/allreduce"].by_condition["quiet"]) == 400
    assert len(series["gpcnet/ring-latency"].by_condition["incast"]) == 300
    verdict = compose_verdict(measured, parse_slo_text("itl_p99=50ms"), Deployment(LLAMA70, 8))
    shown = {r.cls: r for r in verdict.cif}
    allreduce, latency = shown["gpcnet/allreduce"], shown["gpcnet/ring-latency"]
    assert allreduce.title() == "GPCNeT canaries: allreduce" and allreduce.status == "not judged"
    assert allreduce.cif["p50"] == pytest.approx(2.5, rel=0.05)
    assert allreduce.canaries == "2 canaries of 10 ranks (20 %, random), 8 congesting"
    assert latency.cif["p50"] == pytest.approx(4.0, rel=0.05)
    assert latency.canaries == "2 canaries of 10 ranks (20 %, packed), 8 congesting"
    assert check_status(verdict) == "CANNOT TELL"   # the rule sees no serving class congested


def check_status(verdict):
    return next(c for c in verdict.checks if c.name == "cif_p99").status


def test_a_cif_quantile_needs_enough_values_on_both_sides():
    """loaded / quiet at each percentile, exactly; None (not a ratio to a made-up base) where
    a side holds fewer values than the percentile needs."""
    from fabscope_analysis.serving import resample
    from fabscope_analysis.serving.cif import cif_quantiles
    enough = resample.min_values(99.0)
    quiet = np.linspace(10.0, 20.0, enough)
    loaded = 3.0 * quiet
    cif = cif_quantiles(loaded, quiet)
    assert cif["p50"] == pytest.approx(3.0) and cif["p99"] == pytest.approx(3.0), cif
    assert resample.min_values(99.9) > enough and cif["p99.9"] is None, cif
    # one value short of the p99's need on the quiet side: no p99 either
    short = cif_quantiles(loaded, quiet[:-1])
    assert short["p99"] is None and short["p50"] == pytest.approx(3.0, rel=0.01), short
    # figures below 1 in their unit (a sub-millisecond time) are figures like any other
    small = cif_quantiles(0.002 * loaded, 0.001 * quiet)
    assert small["p50"] == pytest.approx(6.0) and small["p99"] == pytest.approx(6.0), small


def test_the_rule_names_six_rows_at_most_and_counts_the_rest():
    """The cif_p99 line names up to 6 rows of the worst status, then `and N more`."""
    from types import SimpleNamespace
    from fabscope_analysis.serving.cif import CifRow
    rows = [CifRow("tp", f"tp-{i}", "incast", 1000, 1000, {"p99": 1.5}, (1.25, 1.75), "PASS")
            for i in range(8)]
    nothing_quiet_only = SimpleNamespace(classes={})
    text = cif_check(rows, nothing_quiet_only, 2.0).text
    assert text.count("[incast] x1.5, 90 % interval 1.25-1.75") == 6, text
    assert text.endswith(" and 2 more)"), text
    six = cif_check(rows[:6], nothing_quiet_only, 2.0).text
    assert six.count("[incast] x1.5") == 6 and six.endswith("1.25-1.75)"), six


def test_a_percentile_of_the_cif_needs_its_count_of_values_on_the_smaller_side():
    """resample.MIN_VALUES: a p99.9 needs 1,000 values on each side (fewer is their
    maximum), a p99 100, a p50 10. Loaded exactly twice quiet: 2.0 wherever there are
    enough; 999 values on the smaller side leave the p99.9 out, 1,000 give it."""
    from fabscope_analysis.serving.cif import cif_quantiles
    for n, p999 in ((999, None), (1000, 2.0)):
        quiet = np.random.default_rng(n).lognormal(0.0, 0.3, n)
        got = cif_quantiles(2.0 * quiet, quiet)
        assert got["p50"] == pytest.approx(2.0) and got["p99"] == pytest.approx(2.0)
        assert got["p99.9"] == (p999 if p999 is None else pytest.approx(p999)), n
        # the smaller side counts: 1,000 loaded against `n` quiet
        against = cif_quantiles(np.full(1000, 2.0), quiet)["p99.9"]
        assert against == (None if n < 1000 else pytest.approx(2.0 / np.percentile(quiet, 99.9)))
    few = cif_quantiles(np.full(99, 2.0), np.ones(99))
    assert few == {"p50": 2.0, "p99": None, "p99.9": None}
    assert cif_quantiles(np.full(9, 2.0), np.ones(9))["p50"] is None
