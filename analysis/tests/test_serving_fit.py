"""`fit`: SLO objectives, the PASS / FAIL / CANNOT TELL verdict composed from the measured
distributions, its interval rule under an A/A pair, missing figures named, exit codes."""

import json

import h5py
import numpy as np
import pandas as pd
import pytest

from serving_files import add_kv, serving_file
from synthetic import SyntheticRun

from fabscope_analysis import models, open_result
from fabscope_analysis.cli import main
from fabscope_analysis.errors import CriteriaError
from fabscope_analysis.serving.impact import Deployment
from fabscope_analysis.serving.compose import compose_step
from fabscope_analysis.serving.fit import compose_verdict
from fabscope_analysis.serving.measured import _hosts_of_ranks, measure
from fabscope_analysis.serving.resample import REPLICATES, block_resample, judge, summed_quantile
from fabscope_analysis.serving.slo import SloError, format_ms, load_slo_file, parse_slo_text

LLAMA70 = models.preset("llama3-70b")


def verdict_of(path, slo_text, model=LLAMA70):
    with open_result(path) as result:
        return compose_verdict(measure(result, Deployment(model, 8)), parse_slo_text(slo_text),
                               Deployment(model, 8))


def check(verdict, name):
    return next(c for c in verdict.checks if c.name == name)


def test_slo_command_line_form_units_and_defaults():
    slo = parse_slo_text("itl_p99=50ms, ttft_p99=2s,itl_p50=800us,ttft_share=25%,cif_p99=1.5")
    assert slo.targets_ms == {"itl_p99": 50.0, "ttft_p99": 2000.0, "itl_p50": 0.8}
    assert slo.itl_share == 0.10 and slo.ttft_share == 0.25 and slo.cif_p99 == 1.5
    assert slo.fabric_budget_ms("itl_p99") == pytest.approx(5.0)
    assert slo.fabric_budget_ms("ttft_p99") == pytest.approx(500.0)
    assert slo.defaulted == ["itl_share"]
    # described in the form it was given, which reads back as the same objectives
    assert slo.describe() == ("itl_p99=50ms,ttft_p99=2s,itl_p50=800us,itl_share=10%,"
                              "ttft_share=25%,cif_p99=1.5 (defaults: itl_share)")
    assert parse_slo_text(slo.describe().split(" (")[0]).targets_ms == slo.targets_ms
    assert parse_slo_text("ttft_p99=1500ms").describe().startswith("ttft_p99=1500ms,")
    # a share may be the whole target; a time below 1 ms reads in us, from 1 ms in ms
    whole = parse_slo_text("itl_p99=50ms,itl_share=100%,ttft_p99=2s,ttft_share=1")
    assert (whole.itl_share, whole.ttft_share) == (1.0, 1.0)
    assert [format_ms(ms) for ms in (0.8, 1.0, 999.0, 1000.0, 1500.0)] == \
        ["800us", "1ms", "999ms", "1s", "1500ms"]
    for bad, why in (("itl_p99=50", "with its unit"), ("itl_p99=50ms,itl_share=120%", "at most"),
                     ("latency=5ms", "unknown objective"), ("itl_p99", "key=value"),
                     ("itl_p99=50ms,cif_p99=0.5", "below 1")):
        with pytest.raises(SloError, match=why):
            parse_slo_text(bad)


def test_slo_criteria_section_and_errors_name_the_line(tmp_path):
    good = tmp_path / "slo.yaml"
    good.write_text("fabscope_criteria: 1\nslo:\n  itl_p99: 50ms\n  itl_share: 0.05\n")
    slo = load_slo_file(str(good))
    assert slo.targets_ms == {"itl_p99": 50.0} and slo.itl_share == 0.05
    assert parse_slo_text("ttft_p99=2s", slo).targets_ms == {"itl_p99": 50.0, "ttft_p99": 2000.0}
    bad = tmp_path / "bad.yaml"
    bad.write_text("slo:\n  itl_p99: 50ms\n  ttft_p99: soon\n")
    with pytest.raises(CriteriaError, match=r"bad\.yaml:3: slo\.ttft_p99: expected a time"):
        load_slo_file(str(bad))
    none = tmp_path / "none.yaml"
    none.write_text("rules: []\n")
    with pytest.raises(CriteriaError, match="none.yaml:1: expected a top-level 'slo:'"):
        load_slo_file(str(none))
    # a YAML error names its own line (1-based): the second colon on line 3
    broken = tmp_path / "broken.yaml"
    broken.write_text("slo:\n  itl_p99: 50ms\n  ttft_p99: 2s: 3\n")
    with pytest.raises(CriteriaError, match=r"broken\.yaml:3: not valid YAML: mapping values"):
        load_slo_file(str(broken))


def test_pass_and_fail_follow_the_composed_step(tmp_path):
    """160 all-reduces of ~20 us: ~3.2 ms per token (6.4 % of 50 ms, within 10 %): PASS;
    the same at ~40 us under incast: ~6.4 ms, beyond the 5 ms budget: FAIL, and the
    figure is the p99 of the composed step, not a sum of p99s."""
    good = verdict_of(serving_file(tmp_path / "good.h5"), "itl_p99=50ms,ttft_p99=2s")
    assert good.status == "PASS", good.line()
    itl = check(good, "itl_p99")
    assert itl.condition == "incast" and 3.4 < itl.figures["point_ms"] < 5.0
    assert "PASS" in itl.text and "% of the 50ms ITL target" in itl.text
    assert check(good, "ttft_p99").status == "PASS"
    assert check(good, "cif_p99").status == "PASS"
    path = serving_file(tmp_path / "slow.h5", tp_loaded=(("incast", 2.0),))
    slow = verdict_of(path, "itl_p99=50ms,ttft_p99=2s,cif_p99=3")
    itl = check(slow, "itl_p99")
    assert slow.status == "FAIL" and itl.status == "FAIL" and itl.condition == "incast"
    with open_result(path) as result:
        times = measure(result, Deployment(LLAMA70, 8)).classes["tp"].by_condition["incast"]
    expect = np.percentile(compose_step([(times, 160)]), 99) / 1e6
    assert itl.figures["point_ms"] == pytest.approx(expect)
    assert itl.figures["point_ms"] < 160 * np.percentile(times, 99) / 1e6


def test_a_budget_at_the_measured_figure_cannot_tell_and_aa_never_contradicts(tmp_path):
    """Two runs of one fabric (other seeds): at a budget equal to the first run's p99 the
    interval straddles it (CANNOT TELL); at no budget do the two give PASS and FAIL."""
    a = serving_file(tmp_path / "a.h5", seed=3)
    b = serving_file(tmp_path / "b.h5", seed=4)
    figures = [check(verdict_of(p, "itl_p99=1s"), "itl_p99").figures for p in (a, b)]
    p99 = figures[0]["point_ms"]
    assert check(verdict_of(a, f"itl_p99={p99 * 10:.6f}ms"), "itl_p99").status == "CANNOT TELL"
    for factor in (0.9, 0.97, 1.0, 1.03, 1.1):
        pair = {judge(f["low_ms"], f["high_ms"], p99 * factor) for f in figures}
        assert pair != {"PASS", "FAIL"}, (factor, pair)
    assert {judge(f["low_ms"], f["high_ms"], p99 * 2) for f in figures} == {"PASS"}
    assert {judge(f["low_ms"], f["high_ms"], p99 / 2) for f in figures} == {"FAIL"}


def test_an_interval_ending_at_the_limit():
    """At or below the limit passes, wholly above fails: an interval whose low end is the
    limit itself is not above it (CANNOT TELL); one whose high end is the limit passes."""
    assert judge(1.0, 2.0, 2.0) == "PASS"
    assert judge(2.0, 3.0, 2.0) == "CANNOT TELL"
    assert judge(2.0 + 1e-9, 3.0, 2.0) == "FAIL"
    assert judge(1.9, 2.0 + 1e-9, 2.0) == "CANNOT TELL"


def test_a_kv_ttft_that_passes_where_measured_but_lacks_a_conditions_requests_says_cannot_tell(tmp_path):
    """KV pushes quiet (300 requests, well within the budget) and under incast (40, too few
    for a p99): the quiet figure alone would PASS, but the incast one could be what fails,
    so the check is CANNOT TELL, and its text says so where it would have said PASS."""
    rng = np.random.default_rng(1)
    run = SyntheticRun(tmp_path / "kv.h5", nranks=4)
    run.file.attrs["scenario_text"] = "name: s\nmodel: llama3-70b\nparallel: {tp: 8}\n"
    kv_bytes = models.kv_request_bytes(LLAMA70, 8, 16, 8192)
    quiet = add_kv(run, 40e6 * rng.lognormal(0, 0.05, 300), np.full(300, 1e5), nbytes=kv_bytes)
    add_kv(run, 48e6 * rng.lognormal(0, 0.05, 40), np.full(40, 1e5), "incast", nbytes=kv_bytes,
           quiet_index=quiet)
    run.close()
    ttft = check(verdict_of(str(tmp_path / "kv.h5"), "ttft_p99=2s"), "ttft_p99")
    assert ttft.status == "CANNOT TELL", ttft.text
    assert ttft.text.endswith("): CANNOT TELL [not measured: incast: 40 requests measured, a "
                              "p99 needs at least 100]") and "PASS" not in ttft.text, ttft.text


def test_missing_figures_are_named_not_guessed(tmp_path):
    """DeepSeek-V3 without an alltoall test: per-token communication CANNOT TELL, naming
    the MoE rounds; too few KV requests for a p99: CANNOT TELL, naming the count; a run
    quiet only: the congestion rule cannot tell."""
    path = serving_file(tmp_path / "ds.h5", model="deepseek-v3", tp_loaded=(), kv_loaded=(),
                        requests=40)
    ds = models.preset("deepseek-v3")
    verdict = verdict_of(path, "itl_p99=50ms,ttft_p99=2s,ttft_p50=1s", model=ds)
    assert verdict.status == "CANNOT TELL"
    itl = check(verdict, "itl_p99")
    assert itl.status == "CANNOT TELL" and "MoE dispatch + combine" in itl.text
    ttft = check(verdict, "ttft_p99")
    assert ttft.status == "CANNOT TELL" and "40 requests measured, a p99 needs at least 100" \
        in ttft.text
    assert check(verdict, "ttft_p50").status == "PASS"
    assert check(verdict, "cif_p99").status == "CANNOT TELL"
    with_moe = verdict_of(serving_file(tmp_path / "ds2.h5", model="deepseek-v3", moe_us=100),
                          "itl_p99=200ms", model=ds)
    itl = check(with_moe, "itl_p99")
    # DeepSeek-V3: 61 attention + 3 dense-MLP all-reduces, 58 MoE layers (3 of 61 are dense)
    assert "64 x TP all-reduce + 58 x MoE dispatch + combine" in itl.text
    assert itl.status == "PASS", itl.text


def test_cli_exit_codes_and_json(tmp_path, capsys):
    good = serving_file(tmp_path / "good.h5")
    out = tmp_path / "fit.json"
    assert main(["fit", good, "--slo", "itl_p99=50ms,ttft_p99=2s", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["verdict"] == "PASS" and {c["name"] for c in data["checks"]} == \
        {"itl_p99", "ttft_p99", "cif_p99"}
    assert main(["fit", good, "--slo", "itl_p99=4ms", "--no-diagnose"]) == 1
    assert "FAIL" in capsys.readouterr().out
    assert main(["fit", good]) == 2
    assert "no latency target" in capsys.readouterr().err
    assert main(["fit", good, "--slo", "itl_p99=fast"]) == 2
    assert main(["fit", str(tmp_path / "absent.h5"), "--slo", "itl_p99=5ms"]) == 2


def test_a_deployment_fit_cannot_size_exits_2_naming_what_to_give(tmp_path, capsys):
    """design.md's exit 2 for bad usage: a deployment the model cannot take (TP 0) and a file
    whose scenario names no model while no --model is given, each with its one error line."""
    good = serving_file(tmp_path / "good.h5")
    assert main(["fit", good, "--slo", "itl_p99=50ms", "--tp", "0"]) == 2
    assert capsys.readouterr().err == ("error: tp, decode batch, prefill chunk, prompt and block "
                                       "tokens must be at least 1\n")
    with h5py.File(good, "r+") as f:
        f.attrs["scenario_text"] = "name: s\nparallel: {tp: 8}\n"
    assert main(["fit", good, "--slo", "itl_p99=50ms"]) == 2
    assert capsys.readouterr().err == (f"error: {good}: the scenario names no model; give --model "
                                       "(llama3-8b, llama3-70b, llama3-405b, deepseek-v3)\n")


def test_on_fail_the_diagnosis_names_the_component_to_fix(tmp_path, capsys):
    """All-pairs tests with fh3 receiving at 10 % and a TP all-reduce too slow for the ITL
    budget: FAIL, and the fix line names host fh3's receive side."""
    from serving_files import add_collective, reopened
    from synthetic import write_matrix_run
    run = reopened(write_matrix_run(tmp_path / "m.h5", nranks=6, receive={3: 0.1}))
    run.file.attrs["scenario_text"] = "name: s\nmodel: llama3-70b\nparallel: {tp: 8}\n"
    rng = np.random.default_rng(1)
    add_collective(run, "allreduce", 40e3 * rng.lognormal(0, 0.1, 300), 32 * 8192 * 2, "quiet")
    run.close()
    assert main(["fit", run.path, "--slo", "itl_p99=50ms"]) == 1
    out = capsys.readouterr().out
    assert "itl_p99: the fabric (160 x TP all-reduce) per generated token adds" in out
    assert "fix: host fh3 (receive): " in out and "bandwidth 10% of the typical" in out
    assert main(["fit", run.path, "--slo", "itl_p99=50ms", "--no-diagnose"]) == 1
    assert "fix:" not in capsys.readouterr().out


def real_serving_files():
    import os
    return [p for p in os.environ.get("FABSCOPE_REAL_H5", "").split(":")
            if p and os.path.exists(p) and "serving" in os.path.basename(p)]


@pytest.mark.parametrize("source", ["synthetic", "real"])
def test_the_verdicts_figures_are_impacts(tmp_path, source):
    """fit composes a step exactly as impact does: its quiet ITL p99 is impact's composed
    p99 (same draws), on a synthetic file and on the real 4-rank serving run
    (FABSCOPE_REAL_H5, as ./tests/run sets it)."""
    from fabscope_analysis.serving.impact import compute_impact
    if source == "real":
        files = real_serving_files()
        if not files:
            pytest.skip("FABSCOPE_REAL_H5 names no serving run (./tests/run sets it)")
        path = files[0]
    else:
        path = serving_file(tmp_path / "s.h5")
    deployment = Deployment(LLAMA70, 8)
    with open_result(path) as result:
        impact = compute_impact(result, deployment)
        verdict = compose_verdict(measure(result, deployment), parse_slo_text("itl_p99=50ms"),
                                  deployment)
    quiet = check(verdict, "itl_p99").figures["conditions"]["quiet"]
    assert quiet["point_ms"] == pytest.approx(impact.tp_row("quiet")["p99_ms"])
    assert quiet["low_ms"] <= quiet["point_ms"] <= quiet["high_ms"]
    assert verdict.status in ("PASS", "FAIL", "CANNOT TELL")


def test_ttft_counts_the_prefill_chunks_communication(tmp_path):
    """Given a prefill chunk, TTFT adds ceil(prompt / chunk) chunks of 2 x layers TP
    all-reduces and (DeepSeek-V3) one MoE normal round per layer at the chunk's tokens:
    8192 / 2048 = 4 chunks of 160 all-reduces of ~200 us = ~128 ms over the ~40 ms KV.
    Without a chunk it is named as not counted; a chunk not measured cannot tell."""
    prefill = {"chunk": 2048, "tp_us": 200.0}
    path = serving_file(tmp_path / "p.h5", prefill=prefill)
    slo = parse_slo_text("ttft_p99=2s")
    with open_result(path) as result:
        bare = measure(result, Deployment(LLAMA70, 8))
        chunked = measure(result, Deployment(LLAMA70, 8, prefill_chunk=2048))
        unmeasured = measure(result, Deployment(LLAMA70, 8, prefill_chunk=4096))
    without = compose_verdict(bare, slo, Deployment(LLAMA70, 8))
    assert any("no --prefill-chunk given: not counted in TTFT" in m for m in without.missing)
    kv_only = check(without, "ttft_p99").figures["conditions"]["quiet"]["point_ms"]
    assert 38 < kv_only < 50
    ttft = check(compose_verdict(chunked, slo, Deployment(LLAMA70, 8, prefill_chunk=2048)),
                 "ttft_p99")
    assert "4 prefill chunks of 2048 tokens (160 x TP all-reduce (prefill chunk) each)" \
        in ttft.text
    quiet = ttft.figures["conditions"]["quiet"]
    assert 128 + 38 < quiet["point_ms"] < 128 * 1.15 + 50, quiet
    assert quiet["low_ms"] <= quiet["point_ms"] <= quiet["high_ms"]
    # the KV alone is well within the 200 ms the fabric may take; with the prefill's
    # communication under incast it is beyond it
    assert check(without, "ttft_p99").status == "PASS"
    assert ttft.status == "FAIL", ttft.text
    # incast makes the all-reduces 1.3x and the KV 1.2x: the worst condition is incast
    assert ttft.condition == "incast" and ttft.figures["point_ms"] > quiet["point_ms"] * 1.2
    missing = check(compose_verdict(unmeasured, slo, Deployment(LLAMA70, 8, prefill_chunk=4096)),
                    "ttft_p99")
    assert missing.status == "CANNOT TELL" and "TP all-reduce (prefill chunk) at 4096 tokens " \
        "not measured" in missing.text


def test_ttft_counts_deepeps_normal_rounds_for_a_model_with_experts(tmp_path):
    ds = models.preset("deepseek-v3")
    path = serving_file(tmp_path / "ds.h5", model="deepseek-v3", moe_us=100,
                        prefill={"chunk": 4096, "tp_us": 300.0, "moe_us": 2000.0})
    d = Deployment(ds, 8, prefill_chunk=4096)
    with open_result(path) as result:
        measured = measure(result, d)
    ttft = check(compose_verdict(measured, parse_slo_text("ttft_p99=20s"), d), "ttft_p99")
    assert ("2 prefill chunks of 4096 tokens (64 x TP all-reduce (prefill chunk) + 58 x MoE "
            "dispatch + combine (DeepEP normal, prefill chunk) each)") in ttft.text
    # 2 x (64 x 0.3 + 58 x 2) ms = 270.4 ms of prefill communication
    assert 270.4 < ttft.figures["conditions"]["quiet"]["point_ms"] - 40 < 270.4 * 1.15
    # the decode step still reads the 32-token round, not the prefill's
    itl = check(compose_verdict(measured, parse_slo_text("itl_p99=200ms"), d), "itl_p99")
    assert itl.status == "PASS" and "(prefill chunk)" not in itl.text


def _stalled_allreduce_file(path, iterations, seed, stall_rate=1e-3, stall_ms=1.0):
    """Only the TP all-reduce, ~20 us, and a `stall_rate` chance per operation of a
    `stall_ms` stall (a PFC pause, a retransmission)."""
    from serving_files import add_collective
    from synthetic import SyntheticRun
    rng = np.random.default_rng(seed)
    run = SyntheticRun(path, nranks=4)
    run.file.attrs["scenario_text"] = "name: s\nmodel: llama3-70b\nparallel: {tp: 8}\n"
    times = 20e3 * rng.lognormal(0, 0.1, iterations)
    times[rng.random(iterations) < stall_rate] += stall_ms * 1e6
    add_collective(run, "allreduce", times, models.allreduce_bytes(LLAMA70, 32), "quiet")
    run.close()
    return str(path)


def test_rare_stalls_never_pass_on_too_few_operations(tmp_path):
    """160 all-reduces a token, 0.1 % of them stalling 1 ms: 15 % of tokens stall, so the
    per-token p99 is beyond the 4 ms the fabric may take. 200 operations measured mostly
    show no stall, and a composed step cannot hold one its sequence lacks: fit must not
    PASS (CANNOT TELL, naming the operations that would tell). Measured enough (48,000),
    the stalls are seen and the check FAILs; without stalls it PASSes."""
    slo = "itl_p99=40ms,cif_p99=off"
    statuses = [check(verdict_of(_stalled_allreduce_file(tmp_path / f"s{seed}.h5", 200, seed), slo),
                      "itl_p99") for seed in range(12)]
    assert not [c.status for c in statuses if c.status == "PASS"], [c.text for c in statuses]
    # the runs that saw no stall: an interval wholly within the budget, held back only by
    # what 200 operations cannot show
    unseen = [c for c in statuses if c.figures["high_ms"] <= c.figures["fabric_budget_ms"]]
    assert len(unseen) >= 6 and all(c.status == "CANNOT TELL" and "rule of three" in c.text
                                    and "47694 of each would tell" in c.text for c in unseen)
    many = check(verdict_of(_stalled_allreduce_file(tmp_path / "m.h5", 48_000, 1), slo), "itl_p99")
    assert many.status == "FAIL", many.text
    clean = check(verdict_of(_stalled_allreduce_file(tmp_path / "c.h5", 48_000, 1, stall_rate=0.0),
                             slo), "itl_p99")
    assert clean.status == "PASS", clean.text


def test_a_layer_stream_push_hides_its_compute_behind_the_transfer(tmp_path):
    """A layer-stream KV push overlaps all but its last layer with compute: fit's KV times and
    impact's exposed transfer are the transfer less (layers - 1) x compute_per_layer_s (read
    in seconds), never below 0 (fit adds the queue)."""
    from fabscope_analysis.serving.impact import compute_impact
    from test_impact import AR_512K, spiky, write_allreduce_file
    rng = np.random.default_rng(7)
    transfer, queue, compute = rng.normal(40e6, 1e6, 30), np.full(30, 10e6), 2e-4
    path = write_allreduce_file(tmp_path / "ls.h5", {(AR_512K, "quiet"): spiky(rng, 500)},
                                kv=[{"nbytes": 320 << 20, "transfer_ns": transfer, "queue_ns": queue,
                                     "strategy": "layer-stream", "compute_per_layer_s": compute}])
    shown = np.maximum(transfer.astype(np.int64) - (LLAMA70.layers - 1) * compute * 1e9, 0)
    with open_result(path) as result:
        kv = measure(result, Deployment(LLAMA70, 8)).classes["kv"]
        impact = compute_impact(result, Deployment(LLAMA70, 8, prefill_ms=950.0))
    np.testing.assert_allclose(np.sort(kv.by_condition["quiet"]), np.sort(shown + queue))
    row = impact.kv_rows[0]
    assert row["overlapped_with_prefill_ms"] == pytest.approx((LLAMA70.layers - 1) * compute * 1e3)
    assert row["exposed_p50_ms"] == pytest.approx(np.percentile(shown, 50) / 1e6)
    # the TTFT share: the exposed transfer plus the queue, against the prefill time
    total = shown + queue
    assert row["ttft_share_p50"] == pytest.approx(np.percentile(total / (total + 950e6), 50))


def test_the_front_ends_first_byte_beyond_its_service_time_adds_to_each_request(tmp_path):
    """700 requests whose front end answers its first byte 40 ms after the request, 10 ms of
    it the server's own service time: TTFT composes each KV transfer with 30 ms of front
    end, so its p99 moves by those 30 ms, and says so."""
    slo = parse_slo_text("ttft_p99=2s")
    d = Deployment(LLAMA70, 8)

    def ttft(**api):
        path = serving_file(tmp_path / f"api-{api}.h5", kv_loaded=(), requests=700,
                            iterations=2000, **api)
        with open_result(path) as result:
            verdict = compose_verdict(measure(result, d, None), slo, d)
        return next(c for c in verdict.checks if c.name == "ttft_p99")
    alone, with_api = ttft(), ttft(api_ms=30)
    assert (alone.status, with_api.status) == ("PASS", "PASS"), with_api.text
    # 30 ms on top of the KV's own p99, within that p99's 90 % interval (its resampling)
    assert alone.figures["low_ms"] <= with_api.figures["point_ms"] - 30 <= alone.figures["high_ms"]
    assert "+ the front end's first byte adds " in with_api.text
    assert "front end" not in alone.text


class _RanksOnly:
    """A result that answers ranks() only, with the table given."""
    def __init__(self, ranks):
        self._ranks = ranks

    def ranks(self):
        return self._ranks


def test_a_file_without_rank_hosts_maps_no_rank_to_a_host():
    """No /ranks table, an empty one, or one without hosts: an empty map (the groups and KV
    pairs then name ranks, "rank 3"), not None; with hosts, each rank's."""
    assert [_hosts_of_ranks(_RanksOnly(t)) for t in
            (None, pd.DataFrame({"rank": [], "host": []}), pd.DataFrame({"rank": [0, 1]}))] \
        == [{}, {}, {}]
    assert _hosts_of_ranks(_RanksOnly(pd.DataFrame({"rank": [0, 1], "host": ["a", "b"]}))) \
        == {0: "a", 1: "b"}


def test_summed_quantile_draws_every_value_and_gives_a_90_percent_interval():
    """Two independent parts: the maximum of their sum holds each part's largest value,
    even the first one measured (100 + 1). One part: the point is its percentile and the
    interval the 5th..95th percentiles of the block-bootstrap replicates' (recomputed here
    from the same seed)."""
    first_slow = np.array([100.0] + [0.0] * 9)
    assert summed_quantile([first_slow, np.ones(10)], 100.0, seed=5)[0] == 101.0
    values = np.random.default_rng(2).lognormal(0.0, 0.5, 400)
    point, low, high = summed_quantile([values], 99.0, seed=5)
    replicates = np.percentile(block_resample(values, np.random.default_rng(5), REPLICATES),
                               99.0, axis=1)
    assert (point, low, high) == (np.percentile(values, 99.0),
                                  *np.percentile(replicates, [5.0, 95.0]))
