"""Serving impact (fabscope_analysis.serving.impact, models): the arithmetic on synthetic files with
known distributions, the presets against src/model and `fabscope list --model`, the CLI,
report and compare blocks, and a real 4-rank run of scenarios/llama3-70b-serving.yaml
(FABSCOPE_REAL_H5, as ./tests/run sets it)."""

import io
import json
import os
import re
import subprocess

import numpy as np
import pytest

from synthetic import SAMPLE_DTYPE, SyntheticRun
from contracts import outcome_contract

from fabscope_analysis import models, open_result
from fabscope_analysis.cli import main
from fabscope_analysis.compare import run_compare
from fabscope_analysis.serving.impact import Deployment, compute_impact, ring_bus_factor
from fabscope_analysis.serving.compose import compose_step
from fabscope_analysis.serving.series import collective_times, interpolate_sequence
from fabscope_analysis.serving.impact_text import print_impact
from fabscope_analysis.report import build_report

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LLAMA70 = models.preset("llama3-70b")
AR_512K = 32 * 8192 * 2

REQUEST_DTYPE = np.dtype([("request_id", "<i8"), ("prefill_rank", "<i4"),
                          ("decode_rank", "<i4"), ("bytes", "<i8"), ("blocks", "<i8"),
                          ("messages", "<i8"), ("t_arrival_ns", "<i8"), ("t_start_ns", "<i8"),
                          ("t_done_ns", "<i8"), ("gather_ns", "<i8"), ("scatter_ns", "<i8"),
                          ("copy_ns", "<i8"), ("strategy", "S16"), ("direction", "S16"),
                          ("verified", "u1")])


def spiky(rng, n, base_ns=20_000.0, spike_p=0.02, spike_ns=200_000.0):
    """Known distribution: lognormal around base, plus a rare spike (a retransmit-like
    event), the kind of tail where a sum of p99s and the p99 of a sum differ most."""
    return base_ns * rng.lognormal(0.0, 0.1, n) + np.where(rng.random(n) < spike_p,
                                                           spike_ns, 0.0)


def allreduce_samples(times_per_iter, ranks=(0, 1), start=2_000_000_000_000, rng=None):
    """Collective samples: every rank's duration per iteration; the slowest rank takes the
    given time, the others a little less."""
    d = np.asarray(times_per_iter, dtype=np.float64)
    n, k = len(d), len(ranks)
    posts = start + np.concatenate([[0], np.cumsum(d.astype(np.int64) + 5000)[:-1]]).astype(np.int64)
    out = np.zeros(n * k, dtype=SAMPLE_DTYPE)
    it = np.repeat(np.arange(n), k)
    which = np.tile(np.arange(k), n)
    own = np.where(which == it % k, d[it], d[it] * 0.9)
    out["rank"], out["iter"], out["peer"] = np.asarray(ranks)[which], it, -1
    out["t_post_ns"] = posts[it]
    out["t_done_ns"] = posts[it] + np.round(own).astype(np.int64)
    return out


def write_allreduce_file(path, sizes_times, scenario="name: s\nmodel: llama3-70b\n"
                         "parallel: {tp: 8}\n", ranks=(0, 1), kv=None, nranks=4):
    """sizes_times: {(bytes, condition): per-iteration times}."""
    run = SyntheticRun(path, nranks=nranks)
    run.file.attrs["scenario_text"] = scenario
    quiet_of = {}
    for (nbytes, condition), times in sizes_times.items():
        s = allreduce_samples(times, ranks, start=run.start_ns())
        for row in s:
            row["bytes"] = nbytes
        idx = run.add_test("tp-allreduce", "allreduce", s, nbytes=nbytes, condition=condition,
                           case=f"tp-allreduce/{nbytes}", quiet_index=quiet_of.get(nbytes))
        if condition == "quiet":
            quiet_of[nbytes] = idx
    for spec in kv or []:
        add_kvpush(run, **spec)
    run.close()
    return str(path)


def add_kvpush(run, nbytes, transfer_ns, queue_ns, strategy="staged", prompt=8192,
               compute_per_layer_s=0.0):
    n = len(transfer_ns)
    t0 = run.start_ns()
    req = np.zeros(n, dtype=REQUEST_DTYPE)
    samples = np.zeros(n, dtype=SAMPLE_DTYPE)
    t = t0
    for i in range(n):
        arrival, start = t, t + int(queue_ns[i])
        done = start + int(transfer_ns[i])
        req[i] = (i, 0, 1, nbytes, 1, 1, arrival, start, done, 0, 0, 0, strategy.encode(),
                  b"push", 1)
        samples[i] = (1, i, 0, nbytes, start, done, 0, 0)
        t = done + 1000
    idx = run.add_test(f"kv-{strategy}", "kvpush", samples, nbytes=nbytes,
                       case=f"kv-{strategy}/{nbytes}", metric="bandwidth",
                       extra_attrs={"strategy": strategy, "direction": "push",
                                    "memory_path": "host", "loop": "closed",
                                    "prompt_tokens": np.int64(prompt),
                                    "compute_per_layer_s": float(compute_per_layer_s)})
    run.file["tests"][f"{idx:04d}"].create_dataset("requests", data=req)
    return idx


# --- presets and sizes: one source of truth ---------------------------------------------

def cpp_presets(dense=None):
    """The C++ presets as models.ModelSpec; `dense` (a dict) gets each one's leading dense
    layers (None without experts)."""
    dense = {} if dense is None else dense
    text = open(os.path.join(ROOT, "src/model/ModelSpec.cpp")).read()
    body = text[text.index("buildPresets()"):text.index("return presets;")]
    out = {}
    for block in body.split("ModelSpec m;")[1:]:
        field = lambda name: int(re.search(rf"m\.{name} = (\d+);", block).group(1))  # noqa
        name = re.search(r'm\.name = "([^"]+)";', block).group(1)
        mla = re.search(r"m\.mla = MlaSpec\{(\d+), (\d+)\}", block)
        moe = re.search(r"m\.moe = MoeSpec\{(\d+), (\d+), (\d+), (\d+)(?:, (\d+))?\}", block)
        dense[name] = int(moe.group(5) or 0) if moe else None
        out[name] = models.ModelSpec(
            name, field("hiddenSize"), field("layers"), field("attentionHeads"),
            field("kvHeads"), field("headDim"),
            re.search(r"m\.dtype = Dtype::(\w+);", block).group(1),
            mla=models.Mla(*map(int, mla.groups())) if mla else None,
            moe=models.Moe(*map(int, moe.groups()[:4])) if moe else None)
    return out


def test_python_presets_are_the_cpp_presets():
    cpp = cpp_presets()
    assert set(cpp) == {"llama3-8b", "llama3-70b", "llama3-405b", "deepseek-v3"}
    assert cpp == models.PRESETS


def test_leading_dense_layers_are_the_cpp_presets():
    """MoeSpec's leading dense layers (first_k_dense_replace) against models.py's table:
    the per-step counts of `fabscope list --model` and of the placement come from them."""
    dense = {}
    cpp_presets(dense)
    assert {name: d for name, d in dense.items() if d} == models.LEADING_DENSE_LAYERS
    assert models.allreduces_per_step(models.PRESETS["deepseek-v3"], 8) == 61 + 3
    assert models.moe_layers(models.PRESETS["deepseek-v3"]) == 58


def test_sizes_of_docs_models_md():
    assert models.allreduce_bytes(LLAMA70, 32) == 512 * 1024
    assert models.allreduce_bytes(LLAMA70, 2048) == 32 << 20
    assert models.allreduces_per_step(LLAMA70, 8) == 160
    assert models.allreduces_per_step(LLAMA70, 1) == 0
    assert models.kv_block_layer_bytes(LLAMA70, 8, 16) == 8 * 1024
    assert models.kv_request_bytes(LLAMA70, 8, 16, 8192) == 320 << 20
    ds = models.preset("deepseek-v3")
    assert models.kv_block_layer_bytes(ds, 8, 16) == 18 * 1024
    assert models.moe_dispatch_bytes_per_token(ds) == 7408
    with pytest.raises(models.ModelError, match="known presets"):
        models.preset("gpt-5")
    mod = models.model_from_scenario({"preset": "llama3-70b", "kv_dtype": "fp8"})
    assert mod.name == "llama3-70b (modified)"
    assert models.kv_request_bytes(mod, 8, 16, 8192) == 160 << 20


def fabscope_binary():
    for candidate in (os.environ.get("FABSCOPE_BIN"), os.path.join(ROOT, "build/fabscope")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.mark.parametrize("name", sorted(models.PRESETS))
def test_sizes_equal_fabscope_list_model(name):
    binary = fabscope_binary()
    if binary is None:
        pytest.skip("no fabscope binary (build/fabscope or FABSCOPE_BIN)")
    out = subprocess.run([binary, "list", "--model", name, "--tp", "8", "--decode-batch",
                          "1", "32", "--prompt", "2048", "8192"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    spec = models.PRESETS[name]
    head = out.stdout.splitlines()[0]
    assert (f"hidden_size {spec.hidden_size}, layers {spec.layers}, attention_heads "
            f"{spec.attention_heads}, kv_heads {spec.kv_heads}, head_dim {spec.head_dim}") \
        in head
    sizes = [int(b) for b in re.findall(r"= (\d+) B", out.stdout)]
    expected = [models.allreduce_bytes(spec, 1), models.allreduce_bytes(spec, 32),
                models.kv_request_bytes(spec, 8, 16, 2048),
                models.kv_request_bytes(spec, 8, 16, 8192)]
    assert sizes[:4] == expected
    assert f"all-reduces per decode step: {models.allreduces_per_step(spec, 8)}" in out.stdout


def test_list_model_with_a_scenario_names_which_instances_measure_each_size():
    """`fabscope list --model M --scenario FILE` lists the scenario and says which of its
    instances measure each size the model needs (docs/analysis.md)."""
    binary = fabscope_binary()
    if binary is None:
        pytest.skip("no fabscope binary (build/fabscope or FABSCOPE_BIN)")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = subprocess.run([binary, "list", "--model", "llama3-70b", "--tp", "8", "--ranks", "8", "--scenario",
                          os.path.join(ROOT, "scenarios/llama3-70b-serving.yaml")], capture_output=True,
                         text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("scenario 'llama3-70b-serving'"), out.stdout[:300]
    assert "kvpush 320MiB: measured by kv-transfer [quiet]" in out.stdout
    assert "serving-impact sizes measured by this scenario: 4 of 4" in out.stdout


# --- tail composition --------------------------------------------------------------------

def test_composed_p99_matches_direct_simulation(tmp_path):
    """The p99 of a step of 160 all-reduces, composed from the file's raw samples, equals
    the p99 of 160 independent draws from the known distribution (simulated directly);
    the sum of p99s is far above it."""
    rng = np.random.default_rng(3)
    measured = spiky(rng, 20000)
    path = write_allreduce_file(tmp_path / "ar.h5", {(AR_512K, "quiet"): measured})
    with open_result(path) as result:
        impact = compute_impact(result, Deployment(LLAMA70, 8))
    row = impact.tp_row("quiet")
    direct = spiky(np.random.default_rng(4), 160 * 40000).reshape(40000, 160).sum(axis=1)
    true_p99 = np.percentile(direct, 99) / 1e6
    true_p50 = np.percentile(direct, 50) / 1e6
    assert row["p99_ms"] == pytest.approx(true_p99, rel=0.04)
    assert row["p50_ms"] == pytest.approx(true_p50, rel=0.03)
    assert row["sum_of_p99s_ms"] > 3 * true_p99   # adding p99s would be this wrong
    assert "block bootstrap" in impact.method and "160 collectives" in impact.method
    assert row["how"] == "measured at 512 KiB"
    assert row["ranks_measured"] == 2 and row["extrapolation_factor"] == pytest.approx(1.75)


def test_collective_time_is_the_slowest_rank():
    s = allreduce_samples([100.0, 300.0, 200.0], ranks=(0, 1, 2))
    import pandas as pd
    times = collective_times(pd.DataFrame(s))
    assert list(times) == [100.0, 300.0, 200.0]


def test_ring_bus_factor_is_the_all_reduce_kinds_rule():
    # 2(n-1)/n for every n, as src/kinds/collectives/BusFactor.hpp: 0 for one rank
    assert [ring_bus_factor(n) for n in (1, 2, 4, 8)] == [0.0, 1.0, 1.5, 1.75]
    with pytest.raises(ValueError):
        ring_bus_factor(0)


def test_block_bootstrap_keeps_bursts_together():
    """A measurement whose slow iterations come in runs: blocks of consecutive iterations
    keep a run inside one step, so the composed tail is above the shuffled one's."""
    seq = np.full(1000, 10.0)
    for start in range(0, 1000, 100):
        seq[start:start + 10] = 100.0
    blocked = np.percentile(compose_step([(seq, 20)], block=10), 99)
    shuffled = np.percentile(compose_step([(seq, 20)], block=1), 99)
    assert blocked > shuffled * 1.3
    assert compose_step([(seq, 20)]).min() >= 200.0


def test_a_part_run_no_times_in_a_step_needs_no_samples_and_adds_nothing():
    """A collective a step runs 0 times is skipped even
    when nothing of it was measured: the sums are those of the other parts alone."""
    seq = np.arange(1.0, 101.0)
    np.testing.assert_array_equal(compose_step([(np.array([]), 0), (seq, 5)], 200, seed=3),
                                  compose_step([(seq, 5)], 200, seed=3))
    with pytest.raises(ValueError, match="a collective without samples"):
        compose_step([(np.array([]), 1)], 200)


def test_interpolation_between_sizes(tmp_path):
    """Affine times (alpha + bytes / beta) measured at 16 KiB and 1 MiB give the 512 KiB
    figure by interpolation, marked so; outside the measured range it is named missing."""
    alpha, beta = 10_000.0, 10.0  # 10 us + 10 B/ns
    rng = np.random.default_rng(5)
    times = {b: (alpha + b / beta) * rng.lognormal(0, 0.01, 400) for b in (16384, 1 << 20)}
    path = write_allreduce_file(tmp_path / "interp.h5",
                                {(b, "quiet"): t for b, t in times.items()})
    with open_result(path) as result:
        impact = compute_impact(result, Deployment(LLAMA70, 8))
        row = impact.tp_row("quiet")
        assert row["how"] == "interpolated between measured 16 KiB and 1 MiB"
        assert row["collective_p50_us"] == pytest.approx((alpha + AR_512K / beta) / 1e3,
                                                         rel=0.02)
        # the p99 in us too (a spread of 1 % puts it within 3 % of the p50), and the sum of
        # the step's p99s in ms is the count of collectives times it
        assert row["collective_p99_us"] == pytest.approx((alpha + AR_512K / beta) / 1e3,
                                                         rel=0.04)
        assert row["sum_of_p99s_ms"] == pytest.approx(
            row["collectives_per_step"] * row["collective_p99_us"] / 1e3, rel=1e-12)
        far = compute_impact(result, Deployment(LLAMA70, 8, decode_batch=256))
    assert far.tp_row("quiet") is None
    assert any("4 MiB not measured (measured: 16 KiB, 1 MiB); not extrapolated" in m
               for m in far.missing)


def test_interpolate_sequence_keeps_order_of_nearer_size():
    a = np.array([1.0, 5.0, 2.0, 3.0, 4.0])
    b = a * 3
    mid = interpolate_sequence((100, a), (300, b), 150)  # w = 0.25: nearer is a
    assert list(np.argsort(mid)) == list(np.argsort(a))
    assert mid == pytest.approx(a * 1.5)


def test_conditions_inflation_and_kv(tmp_path):
    rng = np.random.default_rng(6)
    kv_bytes = 320 << 20
    transfer = rng.normal(40e6, 1e6, 30)
    queue = np.full(30, 10e6)
    path = write_allreduce_file(
        tmp_path / "cond.h5",
        {(AR_512K, "quiet"): spiky(rng, 500), (AR_512K, "incast"): 2 * spiky(rng, 500)},
        kv=[{"nbytes": kv_bytes, "transfer_ns": transfer, "queue_ns": queue}])
    with open_result(path) as result:
        impact = compute_impact(result, Deployment(LLAMA70, 8, prefill_ms=950.0))
    incast = impact.tp_row("incast")
    assert incast["inflation_p50"] == pytest.approx(2.0, rel=0.1)
    kv = impact.kv_rows[0]
    assert kv["how"] == "measured at 320 MiB"
    assert kv["transfer_p50_ms"] == pytest.approx(np.percentile(transfer, 50) / 1e6)
    assert kv["queue_p50_ms"] == pytest.approx(10.0)
    assert kv["ttft_share_p50"] == pytest.approx(
        np.percentile((transfer + queue) / (transfer + queue + 950e6), 50))
    assert any("the kvpush tests ran quiet only" in m for m in impact.missing)
    # the all-reduce ran quiet and under incast: congestion is measured, not named missing
    assert not any("TP all-reduce under congestion" in m for m in impact.missing), impact.missing
    assert any("front-end API" in m for m in impact.missing)
    # the prefill time was given: the KV share is computed, not asked for
    assert not any("--prefill-ms" in m for m in impact.missing), impact.missing
    with open_result(path) as result:
        without = compute_impact(result, Deployment(LLAMA70, 8))
    assert any(m.startswith("KV share of time to first token: needs the prefill time of a "
                            "8192-token prompt") for m in without.missing), without.missing
    assert "ttft_share_p50" not in without.kv_rows[0]
    text = io.StringIO()
    print_impact(impact, text)
    assert "KV transfer of a 8192-token request" in text.getvalue()


def test_missing_inputs_are_named(tmp_path):
    path = write_allreduce_file(tmp_path / "ds.h5", {(32 * 7168 * 2, "quiet"):
                                                     spiky(np.random.default_rng(1), 300)})
    with open_result(path) as result:
        impact = compute_impact(result, Deployment(models.preset("deepseek-v3"), 8, ep=8))
    text = " | ".join(impact.missing)
    assert "MoE dispatch and combine: not measured in this file" in text and "7408 B" in text
    assert "EP8" in text
    assert "no kvpush test" in text
    assert "no condition other than quiet" in text
    assert "--prefill-ms" not in text  # asked only when a KV transfer was measured


@outcome_contract("impact", 0, "—")
@outcome_contract("impact", 2, "—")
def test_cli_json_and_exit_codes(tmp_path, capsys):
    path = write_allreduce_file(tmp_path / "cli.h5", {(AR_512K, "quiet"):
                                                      spiky(np.random.default_rng(2), 300)})
    out_json = tmp_path / "impact.json"
    assert main(["impact", path, "--model", "llama3-70b", "--tp", "8", "--json",
                 str(out_json)]) == 0
    # indented for a person reading it too, two spaces a level
    assert out_json.read_text().startswith('{\n  "file": ')
    data = json.loads(out_json.read_text())
    assert data["allreduces_per_step"] == 160 and data["tp_allreduce_bytes"] == AR_512K
    assert data["tp_communication"][0]["p99_ms"] > data["tp_communication"][0]["p50_ms"]
    with pytest.raises(SystemExit) as exc:
        main(["impact", path, "--model", "gpt-5"])
    assert exc.value.code == 2
    assert main(["impact", path, "--tp", "3"]) == 2  # 3 does not divide 8 kv heads
    assert "does not divide kv_heads" in capsys.readouterr().err
    # a prefill time that is not a time above 0 ms is bad usage, not a traceback (nan) or
    # negative shares of time to first token
    for bad in ("nan", "inf", "-900", "0"):
        assert main(["impact", path, "--prefill-ms", bad, "--json", str(out_json)]) == 2, bad
        assert capsys.readouterr().err == \
            f"error: --prefill-ms: expected a prefill time above 0 ms, got {float(bad):g}\n"


def test_report_section_and_compare_side_by_side(tmp_path):
    rng = np.random.default_rng(8)
    # B's all-reduce 5 us slower: 160 x 5 us = 0.8 ms more per token
    # and its KV transfers of 320 MiB 50 ms instead of 40 ms
    kv = [{"nbytes": 320 << 20, "transfer_ns": np.full(30, 40e6), "queue_ns": np.full(30, 1e6)}]
    a = write_allreduce_file(tmp_path / "a.h5", {(AR_512K, "quiet"):
                                                 spiky(rng, 400, spike_p=0.0)}, kv=kv)
    kv[0]["transfer_ns"] = np.full(30, 50e6)
    b = write_allreduce_file(tmp_path / "b.h5",
                             {(AR_512K, "quiet"): spiky(rng, 400, base_ns=25_000.0,
                                                        spike_p=0.0)}, kv=kv)
    with open_result(a) as result:
        page = build_report(result)
    assert "Serving impact: llama3-70b TP8" in page
    assert page.index("Serving impact") < page.index("run id")  # near the top
    with open_result(a) as result:  # a model that cannot be placed: the section says why
        page = build_report(result, tp=3)
    assert re.search(r'<h2 id="impact">Serving impact</h2><div class="warn">no serving impact: '
                     r'[^<]*does not divide kv_heads', page)
    ra, rb = open_result(a), open_result(b)
    try:
        out = io.StringIO()
        run_compare([ra, rb], None, resamples=20, stream=out)
    finally:
        ra.close()
        rb.close()
    line = next(l for l in out.getvalue().splitlines() if l.startswith("serving impact"))
    assert re.search(r"b\.h5 adds 0\.(7[5-9]\d*|8\d*) ms per token at p99 .* than a\.h5 for "
                     r"llama3-70b TP8 decode batch 32 \[quiet\]", line), line
    assert ("serving impact: b.h5 vs a.h5, KV transfer staged push (mpi, host, closed loop) "
            "[quiet] of a 8192-token request: p99 40 -> 50 ms") in out.getvalue().splitlines()


# --- the real 4-rank serving run ---------------------------------------------------------

def real_serving_files():
    return [p for p in os.environ.get("FABSCOPE_REAL_H5", "").split(":")
            if p and os.path.exists(p) and "serving" in os.path.basename(p)]


def test_real_serving_run():
    files = real_serving_files()
    if not files:
        pytest.skip("FABSCOPE_REAL_H5 names no serving run (./tests/run sets it)")
    with open_result(files[0]) as result:
        impact = compute_impact(result, Deployment(LLAMA70, 8))
        between = compute_impact(result, Deployment(LLAMA70, 8, decode_batch=16,
                                                    prompt_tokens=4096))
        quiet_inst = next(i for i in result.instances() if i.get("kind") == "allreduce"
                          and i.get("bytes") == AR_512K and i.get("condition") == "quiet")
        times = collective_times(quiet_inst.samples())
    quiet = impact.tp_row("quiet")
    assert quiet["how"] == "measured at 512 KiB"
    assert quiet["collective_p50_us"] == pytest.approx(np.percentile(times, 50) / 1e3)
    assert quiet["p50_ms"] <= quiet["p99_ms"] <= quiet["sum_of_p99s_ms"]
    assert quiet["p50_ms"] >= 160 * times.min() / 1e6
    congested = [r for r in impact.tp_rows if r["condition"] != "quiet"]
    assert {r["condition"] for r in congested} >= {"incast", "alltoall"}
    assert all("inflation_p99" in r for r in congested)
    staged = [r for r in impact.kv_rows if r["strategy"] == "staged"]
    assert staged and staged[0]["how"] == "measured at 320 MiB"
    assert staged[0]["transfer_p50_ms"] > 0 and staged[0]["queue_p50_ms"] >= 0
    assert between.tp_row("quiet")["how"].startswith("interpolated between measured 16 KiB")
    kv_between = [r for r in between.kv_rows if r["strategy"] == "staged"][0]
    assert kv_between["how"] == "interpolated between measured 80 MiB and 320 MiB"


def test_moe_dispatch_and_combine_per_token_from_alltoall_rounds(tmp_path):
    """An alltoall instance at the decode batch's tokens per rank: one round per MoE layer,
    composed like the all-reduces (58 MoE layers of ~100 us for DeepSeek-V3 ~ 5.8 ms); a
    round under congestion twice as slow inflates it twice; another batch is named as
    missing, not made up."""
    rng = np.random.default_rng(4)
    per_token = models.moe_dispatch_bytes_per_token(models.preset("deepseek-v3"), "fp8")
    run = SyntheticRun(tmp_path / "moe.h5", nranks=4)
    run.file.attrs["scenario_text"] = "name: s\nmodel: deepseek-v3\n"
    quiet, quiet_times = None, None
    for condition, scale in (("quiet", 1.0), ("incast", 2.0)):
        times = scale * 100_000 * rng.lognormal(0, 0.05, 300)
        quiet_times = times if condition == "quiet" else quiet_times
        s = allreduce_samples(times, (0, 1, 2, 3), start=run.start_ns())
        for row in s:
            row["bytes"] = 32 * per_token
        idx = run.add_test("moe", "alltoall", s, nbytes=32 * per_token, condition=condition,
                           case=f"moe/{32 * per_token}", quiet_index=quiet,
                           extra_attrs={"dispatch_token_bytes": np.int64(per_token),
                                        "tokens_per_rank": np.int64(32)})
        quiet = idx if condition == "quiet" else quiet
    run.close()
    with open_result(str(tmp_path / "moe.h5")) as result:
        impact = compute_impact(result, Deployment(models.preset("deepseek-v3"), 1, ep=4))
        q = next(r for r in impact.moe_rows if r["condition"] == "quiet")
        c = next(r for r in impact.moe_rows if r["condition"] == "incast")
        assert q["rounds_per_step"] == 58 and q["how"].startswith("measured at")
        assert 5.5 < q["p50_ms"] < 6.1, q
        assert 1.8 < c["inflation_p50"] < 2.2, c
        # one round's p50 and p99 in us, to the whole ns the file stores (the p49 is 0.1 %
        # off the p50 here)
        assert [q["round_p50_us"], q["round_p99_us"]] == pytest.approx(
            list(np.percentile(quiet_times, [50, 99]) / 1e3), rel=1e-5)
        assert not any("MoE" in m for m in impact.missing), impact.missing
        # the printed lines: the congested one says how much slower than quiet, p50 and p99
        from fabscope_analysis.serving.impact_text import headline_lines
        moe = [line for line in headline_lines(impact) if line.startswith("MoE dispatch")]
        assert [line.split(" ")[4] for line in moe] == ["[quiet]", "[incast]"], moe
        assert "vs quiet" not in moe[0]
        got = re.search(r"; x([\d.]+) p50, x([\d.]+) p99 vs quiet$", moe[1])
        assert got, moe[1]
        assert float(got.group(1)) == pytest.approx(c["inflation_p50"], rel=0.01)
        assert float(got.group(2)) == pytest.approx(c["inflation_p99"], rel=0.01)
        other = compute_impact(result, Deployment(models.preset("deepseek-v3"), 1, ep=4,
                                                  decode_batch=64))
        assert any("MoE" in m and "not measured" in m for m in other.missing), other.missing
        assert all(r.get("p50_ms") is None for r in other.moe_rows)


@pytest.mark.parametrize("value", ["0", "-1"])
def test_tp_and_sizes_must_be_positive(value, capsys):
    """`--tp 0` (or a negative size) is bad usage: exit 2 naming the value, before any file is read."""
    from fabscope_analysis.cli import build_parser
    for option in ("--tp", "--decode-batch", "--prompt"):
        with pytest.raises(SystemExit) as stopped:
            build_parser().parse_args(["impact", "x.h5", option, value])
        assert stopped.value.code == 2
        assert f"expected a positive integer, got {value}" in capsys.readouterr().err


def test_a_deployments_sizes_are_refused_below_1_and_taken_at_1():
    """tp, decode batch, prompt, block tokens and prefill chunk are counts: 0 of any is
    refused (exit 2 on the command line), 1 of every one is a deployment."""
    from fabscope_analysis.models import ModelError
    from fabscope_analysis.serving.impact import check_deployment
    ones = dict(decode_batch=1, prompt_tokens=1, block_tokens=1, prefill_chunk=1)
    check_deployment(Deployment(LLAMA70, 1, **ones))
    for field in ["tp"] + list(ones):
        sizes = {**ones, "tp": 1, field: 0}
        with pytest.raises(ModelError, match="must be at least 1"):
            check_deployment(Deployment(LLAMA70, sizes.pop("tp"), **sizes))
