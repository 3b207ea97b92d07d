"""The placement: which operations of a decode step, a prefill chunk and a request cross
the scale-out fabric, with the counts worked out by hand here (not by the code under test)
for the rows of docs/serving-fit.md's placement tables; and what `fit` and `placement` say
with it."""

import json

import numpy as np
import pytest

from serving_files import serving_file

from fabscope_analysis import models, open_result
from fabscope_analysis.cli import main
from fabscope_analysis.serving.impact import Deployment, compute_impact
from fabscope_analysis.serving.fit import compose_verdict
from fabscope_analysis.serving.measured import measure
from fabscope_analysis.serving.placement import (DECODE, FABRIC, FRONTEND, NVLINK, PREFILL,
                                                 Operation, Placement, PlacementError)
from fabscope_analysis.serving.slo import parse_slo_text

LLAMA70 = models.preset("llama3-70b")
DEEPSEEK = models.preset("deepseek-v3")

# Hand-worked sizes (docs/models.md): Llama-3-70B hidden 8192 bf16, DeepSeek-V3 hidden
# 7168 with a 7,408 B fp8 dispatch copy per token; decode batch 32, prefill chunk 2048.
LLAMA_AR_DECODE = 32 * 8192 * 2          # 512 KiB
LLAMA_AR_PREFILL = 2048 * 8192 * 2       # 32 MiB
DS_MOE_DECODE = 32 * 7408                # 231.5 KiB
LLAMA_KV_8192 = 320 << 20                # 512 blocks x 640 KiB (TP 8)


def table(place):
    """{(phase, name, link): (count, bytes)} of the table at batch 32, chunk 2048, 8192."""
    return {(op.phase, op.name, op.link): (op.count, op.bytes)
            for op in place.table(32, 2048, 8192)}


def test_llama3_70b_tp8_inside_one_node_puts_only_the_kv_on_the_fabric():
    rows = table(Placement(LLAMA70, tp=8, gpus_per_node=8))
    # 80 layers: one attention and one MLP all-reduce each, all on NVLink
    assert rows[(DECODE, "TP all-reduce (attention)", NVLINK)] == (80, LLAMA_AR_DECODE)
    assert rows[(DECODE, "TP all-reduce (dense MLP)", NVLINK)] == (80, LLAMA_AR_DECODE)
    assert rows[(PREFILL, "TP all-reduce (attention)", NVLINK)] == (80, LLAMA_AR_PREFILL)
    assert rows[("request", "KV transfer prefill -> decode", FABRIC)] == (1, LLAMA_KV_8192)
    assert rows[("request", "front-end request and streamed tokens", FRONTEND)][0] == 1
    assert [k for k in rows if k[2] == FABRIC] == [("request", "KV transfer prefill -> decode",
                                                     FABRIC)]
    assert Placement(LLAMA70, tp=8, gpus_per_node=8).statements()[0] == \
        "TP 8 inside each node: NVLink, not this fabric"
    # a request's KV without a block size given: vLLM's 16-token blocks (8192 = 512 x 16)
    assert [op.bytes for op in Placement(LLAMA70, tp=8, gpus_per_node=8).request_operations(8192)
            if op.cls == "kv"] == [LLAMA_KV_8192]
    # one pipeline stage is no PP: the layout names TP alone
    assert Placement(LLAMA70, tp=8, gpus_per_node=8).describe() == \
        "llama3-70b TP 8 (8 GPUs per node, disaggregated prefill/decode)"


def test_llama3_70b_tp16_over_two_nodes_puts_160_all_reduces_per_step_on_the_fabric():
    place = Placement(LLAMA70, tp=16, gpus_per_node=8)
    rows = table(place)
    assert rows[(DECODE, "TP all-reduce (attention)", FABRIC)] == (80, LLAMA_AR_DECODE)
    assert rows[(DECODE, "TP all-reduce (dense MLP)", FABRIC)] == (80, LLAMA_AR_DECODE)
    assert place.fabric_count("tp", DECODE) == 160
    assert place.statements()[0] == "TP 16 (16 ranks over 2 nodes): this fabric"


def test_llama3_70b_tp8_pp2_sends_one_activation_per_step_across_nodes():
    place = Placement(LLAMA70, tp=8, pp=2, gpus_per_node=8)
    rows = table(place)
    assert rows[(DECODE, "TP all-reduce (attention)", NVLINK)] == (80, LLAMA_AR_DECODE)
    # one stage boundary (ranks 7 | 8) between nodes: 32 x 8192 x 2 B
    assert rows[(DECODE, "PP activation send", FABRIC)] == (1, LLAMA_AR_DECODE)
    assert rows[(PREFILL, "PP activation send", FABRIC)] == (1, LLAMA_AR_PREFILL)
    assert place.fabric_count("tp") == 0 and place.fabric_count("pp") == 1
    assert place.describe() == ("llama3-70b TP 8 x PP 2 (8 GPUs per node, disaggregated "
                                "prefill/decode)")
    # its one boundary crosses: no stage boundary is left inside a node (no NVLink row)
    assert (DECODE, "PP activation send", NVLINK) not in rows, rows
    # TP 4 x PP 4 on 8-GPU nodes: boundaries at ranks 4, 8, 12; only 8 is between nodes
    four = Placement(LLAMA70, tp=4, pp=4, gpus_per_node=8)
    assert four.fabric_count("pp") == 1 and four.total_count("pp") == 3
    assert table(four)[(DECODE, "PP activation send", NVLINK)][0] == 2


def test_deepseek_v3_tp8_ep64_counts_64_all_reduces_on_nvlink_and_58_moe_rounds_on_fabric():
    place = Placement(DEEPSEEK, tp=8, ep=64, gpus_per_node=8)
    rows = table(place)
    # 61 attention all-reduces, 3 dense-MLP ones (first_k_dense_replace = 3), 58 MoE layers
    assert rows[(DECODE, "TP all-reduce (attention)", NVLINK)][0] == 61
    assert rows[(DECODE, "TP all-reduce (dense MLP)", NVLINK)][0] == 3
    assert rows[(DECODE, "MoE dispatch + combine", FABRIC)] == (58, DS_MOE_DECODE)
    assert place.total_count("tp") == 64 and place.fabric_count("tp") == 0
    assert place.fabric_count("moe") == 58
    assert "EP 64 (64 ranks over 8 nodes): this fabric" in place.statements()


def test_deepseek_v3_dp_attention_ep64_has_no_all_reduce_and_58_moe_rounds():
    place = Placement(DEEPSEEK, tp=1, ep=64, dp_attention=True, gpus_per_node=8)
    rows = table(place)
    assert place.total_count("tp") == 0
    assert rows[(DECODE, "MoE dispatch + combine", FABRIC)] == (58, DS_MOE_DECODE)
    assert {k[1] for k in rows if k[0] == DECODE} == {"MoE dispatch + combine"}
    assert place.statements()[0] == "attention data parallel: no TP all-reduce"


def test_nvlink_domains_unknown_shapes_and_kv_pairs():
    # GB200 NVL72: 18 nodes of 4 GPUs share one domain of 72: EP 72 stays on NVLink, EP 64
    # groups straddle two domains (ranks 64..127), TP 16 does not divide 72 either
    nvl72 = dict(gpus_per_node=4, nodes_per_nvlink_domain=18)
    assert Placement(DEEPSEEK, tp=8, ep=72, **nvl72).fabric_count("moe") == 0
    assert Placement(DEEPSEEK, tp=8, ep=64, **nvl72).fabric_count("moe") == 58
    assert Placement(LLAMA70, tp=16, **nvl72).fabric_count("tp") == 160
    # shape not given: every group counted on the fabric (the old upper bound), said so
    unknown = Placement(DEEPSEEK, tp=8, ep=64)
    assert unknown.fabric_count("tp") == 64 and unknown.fabric_count("moe") == 58
    # so is every stage boundary of PP 4: 3 on the fabric, none on NVLink
    staged = Placement(LLAMA70, tp=8, pp=4)
    assert (staged.fabric_count("pp"), staged.total_count("pp")) == (3, 3)
    assert unknown.statements()[0].startswith("cluster shape not given")
    # a prefill and a decode instance of TP 2 fit one 8-GPU node: the KV stays on NVLink
    small = Placement(models.preset("llama3-8b"), tp=2, gpus_per_node=8)
    assert [op.link for op in small.request_operations(2048) if op.cls == "kv"] == [NVLINK]
    colocated = Placement(LLAMA70, tp=8, gpus_per_node=8, disaggregated=False)
    assert not [op for op in colocated.request_operations(2048) if op.cls == "kv"]
    for bad in (dict(tp=8, ep=8), dict(tp=8, pp=81), dict(tp=8, dp_attention=True)):
        with pytest.raises(PlacementError):
            Placement(LLAMA70, gpus_per_node=8, **bad)
    with pytest.raises(PlacementError, match="tp 1"):
        Placement(DEEPSEEK, tp=8, ep=64, dp_attention=True)


def test_pp_up_to_the_models_layers_is_a_placement_and_beyond_them_is_refused():
    """docs/serving-fit.md refuses `--pp` beyond the layers: Llama-3-70B's 80 layers split
    into 80 stages of one layer each (79 stage boundaries), not into 81."""
    one_layer_each = Placement(LLAMA70, tp=8, pp=80)
    assert one_layer_each.total_count("pp") == 79
    with pytest.raises(PlacementError, match="^pp 81: llama3-70b has only 80 layers to split$"):
        Placement(LLAMA70, tp=8, pp=81)


def test_colocated_ttft_without_a_prefill_chunk_cannot_tell_where_the_prefill_crosses(tmp_path,
                                                                                      capsys):
    """Colocated, TP 8 on a cluster whose shape is not given: each prefill chunk's TP
    all-reduces cross this fabric, and without --prefill-chunk fit cannot size them. The
    TTFT check lacks a part the request needs: CANNOT TELL naming it (as with the chunk
    given and not measured), never PASS at 0. TP 8 inside each node: nothing crosses, PASS."""
    path = serving_file(tmp_path / "kv.h5")
    assert main(["fit", path, "--slo", "ttft_p99=2s,cif_p99=off", "--colocated",
                 "--no-diagnose"]) == 1
    out = capsys.readouterr().out
    assert "  ttft_p99: a request's communication: CANNOT TELL (the prefill's TP all-reduce "\
        "crosses this fabric: no --prefill-chunk given to size it)\n" in out
    assert "(defaults: itl_share, ttft_share): CANNOT TELL: ttft_p99 [placement: " in out.splitlines()[0]
    assert main(["fit", path, "--slo", "ttft_p99=2s,cif_p99=off", "--colocated",
                 "--no-diagnose", "--gpus-per-node", "8"]) == 0
    assert "  ttft_p99: no part of a request crosses this fabric" in capsys.readouterr().out


def test_fit_counts_only_what_crosses_the_fabric_and_states_the_placement(tmp_path):
    """A TP all-reduce far over the ITL budget FAILs when TP crosses the fabric (shape not
    given, or TP over 2 nodes) and does not count when TP 8 stays inside a node; with PP 2
    the activation sends cross the fabric unmeasured: CANNOT TELL, named."""
    path = serving_file(tmp_path / "slow.h5", tp_us=2000)   # 160 x 2 ms = 320 ms a token
    slo = parse_slo_text("itl_p99=50ms")
    d = Deployment(LLAMA70, 8)

    def itl(place):
        with open_result(path) as result:
            verdict = compose_verdict(measure(result, d, place), slo, d)
        return verdict, next(c for c in verdict.checks if c.name == "itl_p99")

    verdict, check = itl(None)
    assert check.status == "FAIL" and "160 x TP all-reduce" in check.text
    verdict, check = itl(Placement(LLAMA70, tp=8, gpus_per_node=8))
    assert check.status == "PASS" and "no operation of a decode step crosses this fabric" \
        in check.text
    assert verdict.line().endswith("[placement: TP 8 inside each node: NVLink, not this fabric; "
                                   "KV prefill -> decode: this fabric] [paths: measured over host "
                                   "memory: a stand-in (KV push: mpi on host memory)]")
    verdict, check = itl(Placement(LLAMA70, tp=8, pp=2, gpus_per_node=8))
    assert check.status == "CANNOT TELL" and "PP activation send" in check.text


def test_fit_and_placement_commands(tmp_path, capsys):
    path = serving_file(tmp_path / "slow.h5", tp_us=2000)
    out = tmp_path / "fit.json"
    assert main(["fit", path, "--slo", "itl_p99=50ms", "--gpus-per-node", "8", "--json",
                 str(out), "--no-diagnose"]) == 0
    assert "TP 8 inside each node: NVLink, not this fabric" in capsys.readouterr().out
    assert json.loads(out.read_text())["placement"][0] == \
        "TP 8 inside each node: NVLink, not this fabric"
    assert main(["fit", path, "--slo", "itl_p99=50ms", "--no-diagnose"]) == 1
    assert main(["fit", path, "--slo", "itl_p99=50ms", "--dp-attention"]) == 2
    assert "DP attention" in capsys.readouterr().err
    assert main(["placement", "--model", "deepseek-v3", "--tp", "1", "--dp-attention", "--ep",
                 "64", "--gpus-per-node", "8"]) == 0
    printed = capsys.readouterr().out
    assert "58 x MoE dispatch + combine of 231.5 KiB per decode step over EP 64 (64 ranks over " \
        "8 nodes): this fabric" in printed
    assert "x TP all-reduce" not in printed
    assert main(["placement", "--model", "llama3-70b", "--ep", "8"]) == 2


def test_ttft_leaves_the_kv_out_where_the_placement_keeps_it_off_the_fabric(tmp_path):
    """Colocated prefill and decode: no KV transfer, so a 40 ms KV push in the file does not
    count; what is left of a request on this fabric is its prefill's communication (4
    chunks of 2,048 tokens, each 160 TP all-reduces of about 0.3 ms: about 192 ms), or
    nothing at all (PASS at 0, said why)."""
    path = serving_file(tmp_path / "kv.h5", kv_ms=40.0,
                        prefill={"chunk": 2048, "tp_us": 300.0})
    slo = parse_slo_text("ttft_p99=2s,ttft_share=1%")    # the fabric may take 20 ms

    def ttft(d, place):
        with open_result(path) as result:
            verdict = compose_verdict(measure(result, d, place), slo, d)
        return next(c for c in verdict.checks if c.name == "ttft_p99")

    bare = Deployment(LLAMA70, 8)
    assert ttft(bare, None).status == "FAIL"                   # the 40 ms KV push counts
    alone = ttft(bare, Placement(LLAMA70, tp=8, gpus_per_node=8, disaggregated=False))
    assert alone.status == "PASS" and "no part of a request crosses this fabric" in alone.text
    assert "none (prefill and decode colocated)" in alone.text
    chunked = Deployment(LLAMA70, 8, prefill_chunk=2048)
    prefill = ttft(chunked, Placement(LLAMA70, tp=8, disaggregated=False))
    assert "4 prefill chunks of 2048 tokens (160 x TP all-reduce (prefill chunk) each)" \
        in prefill.text and "KV transfer of" not in prefill.text
    assert 192 * 0.9 < prefill.figures["conditions"]["quiet"]["point_ms"] < 192 * 1.15
    # a prefill and a decode instance of TP 2 share one 8-GPU node: the KV stays on NVLink
    small = models.preset("llama3-8b")
    inside = Placement(small, tp=2, gpus_per_node=8)
    assert [op.link for op in inside.request_operations(8192) if op.cls == "kv"] == [NVLINK]


def pp_file(path, one_way_us=1000.0, iterations=300):
    """A plan-shaped pp-activation test at decode batch 32 (512 KiB): per iteration one pair
    between nodes (a round trip of about 2 x one_way_us, half of it reported) and one pair
    inside a node 100x slower, which must not count (a stage boundary crosses nodes)."""
    from synthetic import SAMPLE_DTYPE, SyntheticRun
    rng = np.random.default_rng(3)
    run = SyntheticRun(path, nranks=4)
    run.file.attrs["scenario_text"] = "name: s\nmodel: llama3-70b\nparallel: {tp: 8}\n"
    samples = np.zeros(2 * iterations, dtype=SAMPLE_DTYPE)
    t = run.start_ns()
    for i in range(iterations):
        rtt = int(2 * one_way_us * 1e3 * rng.lognormal(0, 0.05))
        samples[2 * i] = (0, i, 2, LLAMA_AR_DECODE, t, t + rtt, 0, 2)        # same leaf
        samples[2 * i + 1] = (1, i, 3, LLAMA_AR_DECODE, t, t + 100 * rtt, 0, 1)  # same node
        t += 100 * rtt + 1000
    run.add_test("pp-activation", "latency", samples, nbytes=LLAMA_AR_DECODE, divisor=2,
                 pattern="rails")
    run.close()
    return str(path)


def test_fit_composes_the_pp_sends_plan_measures(tmp_path):
    """TP 8 x PP 2 on 8-GPU nodes: one activation send per token crosses the fabric; fit
    reads it from the pp-activation test as half a round trip of the slowest pair between
    nodes (about 1 ms here), never from a pair inside a node."""
    path = pp_file(tmp_path / "pp.h5")
    d = Deployment(LLAMA70, 8)
    with open_result(path) as result:
        measured = measure(result, d, Placement(LLAMA70, tp=8, pp=2, gpus_per_node=8))
    verdict = compose_verdict(measured, parse_slo_text("itl_p99=50ms"), d)
    itl = next(c for c in verdict.checks if c.name == "itl_p99")
    assert itl.status == "PASS" and "(1 x PP activation send)" in itl.text
    assert 0.9 < itl.figures["conditions"]["quiet"]["point_ms"] < 1.3
    assert "PP 2: 1 of 1 stage boundaries on this fabric" in verdict.line()


@pytest.mark.parametrize("tp, dp_attention, allreduces", [(8, False, 61 + 3), (1, True, 0)])
def test_impact_counts_a_step_as_fit_does(tmp_path, tp, dp_attention, allreduces):
    """DeepSeek-V3 (61 layers, the first 3 dense): at TP 8 x EP 8 a decode step runs 61
    attention + 3 dense-MLP all-reduces and 58 MoE rounds; with DP attention none of the
    all-reduces. `impact` composes a step of those counts, the same `fit` composes (both
    from the placement), not 2 per layer."""
    path = serving_file(tmp_path / "ds.h5", model="deepseek-v3", tp_loaded=(), kv_loaded=(),
                        requests=40, iterations=400, moe_us=100)
    d = Deployment(DEEPSEEK, tp, ep=8, dp_attention=dp_attention)
    with open_result(path) as result:
        impact = compute_impact(result, d, resamples=200)
        fit = measure(result, d, Placement(DEEPSEEK, tp, 1, 8, dp_attention))
        # TP 1 without DP attention: no all-reduce at all, said so
        tp_1 = measure(result, Deployment(DEEPSEEK, 1, ep=8), Placement(DEEPSEEK, 1, 1, 8)) \
            if dp_attention else None
    if tp_1 is not None:
        assert [n for n in tp_1.notes if "no tensor-parallel" in n] == [
            "TP1: no tensor-parallel all-reduces (tp = 1)"]
    assert [r["rounds_per_step"] for r in impact.moe_rows] == [58]
    assert fit.classes["moe"].per_step == 58
    assert impact.to_json()["allreduces_per_step"] == allreduces
    if allreduces:
        assert [r["collectives_per_step"] for r in impact.tp_rows] == [allreduces]
        assert fit.classes["tp"].per_step == allreduces
    else:
        assert not impact.tp_rows and "tp" not in fit.classes
        assert any("DP attention" in n for n in impact.notes), impact.notes
    assert any("58 of deepseek-v3's 61 layers" in n for n in impact.notes), impact.notes
    # TP 8 inside a node and DP attention both have all-reduces, off this fabric or none:
    # neither is TP 1's "no tensor-parallel all-reduces"
    assert not [n for n in fit.notes if "no tensor-parallel" in n], fit.notes


def test_tp_1_has_no_tp_phrase_and_sizes_are_read_in_whole_units():
    """TP 1 is no TP group: the placement says nothing of a TP all-reduce; an operation of
    exactly 1 MiB reads "1 MiB" (not "1024 KiB"), of exactly 1 KiB "1 KiB"."""
    assert Placement(LLAMA70, tp=1, gpus_per_node=8).statements() == [
        "KV prefill -> decode: NVLink, not this fabric"]
    assert [Operation("TP all-reduce (attention)", DECODE, 80, n, NVLINK, "the TP 8 group")
            .describe() for n in (1 << 20, 1 << 10, 1023)] == [
        f"80 x TP all-reduce (attention) of {size} per decode step over the TP 8 group: "
        "NVLink, not this fabric" for size in ("1 MiB", "1 KiB", "1023 B")]
