"""`plan`: the scenario that measures what `fit` needs, within a time budget.

The model listings in tests/data are `fabscope list --model M --tp 8` as the binary prints
them; the test with the real binary checks that the written scenario loads there."""

import argparse
import os
import subprocess

import h5py
import pytest
import yaml

from fabscope_analysis.cli import build_parser, main
from fabscope_analysis.reader import open_result
from fabscope_analysis.serving.command import _slo_of
from fabscope_analysis.serving.slo import SloError
from fabscope_analysis.serving.plan import (Cluster, Knobs, PlanRequest, build_scenario,
                                            criteria_text, fit_arguments, moe_tokens, probes_for, scenario_text)
from fabscope_analysis.serving.plan import _canaries
from fabscope_analysis.serving.plan_budget import fit_budget, size_for_tails, tail_notes
from fabscope_analysis.serving.plan_command import command_of
from fabscope_analysis.serving.plan_list import (ListAnswer, PlanError, layout_from_topology,
                                                 parse_duration_s,
                                                 parse_model_listing, parse_scenario_listing,
                                                 smallest_estimate)
from fabscope_analysis.verdict import CRITERIA_DIR
from serving_files import serving_file
from contracts import outcome_contract

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def listing(name):
    with open(os.path.join(HERE, "data", f"list-model-{name}-tp8.txt"), encoding="utf-8") as f:
        return parse_model_listing(f.read())


def knobs():
    return Knobs(decode_batches=[1, 32], prefill_chunks=[2048], prompts=[2048, 8192],
                 conditions=["quiet", "incast", "bidirectional", "copy"])


def fake_estimate(scenario):
    """A stand-in for the loader: 10 ms per collective iteration per instance, 40 ms per
    KV request, 20 ms per p2p iteration (the real one is tested below)."""
    seconds = 0.0
    for t in scenario["tests"]:
        sizes = t["sizes"]
        count = (len(sizes.get("decode_batch", [])) + len(sizes.get("prefill_chunk", []))
                 + len(sizes.get("tokens", [])) + len(sizes.get("prompt_tokens", []))
                 if isinstance(sizes, dict) else len(sizes))
        per = {"allreduce": 0.01, "alltoall": 0.01, "kvpush": 0.04 * t.get("prefill_ranks", 1)}
        groups = t.get("roles", {}).get("groups", 1)   # roles.groups: an instance per group
        if groups == "all":
            groups = scenario["_ranks"] // t["roles"]["canaries"] if "_ranks" in scenario else 4
        seconds += count * len(t.get("conditions", ["quiet"])) * t["iterations"] \
            * per.get(t["kind"], 0.02) * groups * t.get("repeats", 1)
    return ListAnswer(True, estimate_s=seconds, instances=len(scenario["tests"]))


def plan_for(model, ranks, budget_s=1800.0, ep=None, estimate=fake_estimate):
    k = knobs()
    cluster = Cluster(ranks)
    k.probes = probes_for(cluster)
    req = PlanRequest(model, 8, ep, cluster, budget_s, "itl_p99=50ms,ttft_p99=2s")
    return fit_budget(req, listing(model), k, "plan.criteria.yaml", estimate)


def by_name(plan):
    return {t["name"]: t for t in plan.scenario["tests"]}


def test_a_listing_without_tp_all_reduces_plans_attention_data_parallel():
    """At tp 1 the binary prints no all-reduce size line (no TP all-reduce, tests/data as it
    prints it): the listing is read with no decode batch and the DP-attention plan made
    from it. A listing that counts all-reduces but prints none of their sizes is refused."""
    with open(os.path.join(HERE, "data", "list-model-deepseek-v3-tp1.txt"), encoding="utf-8") as f:
        sizes = parse_model_listing(f.read())
    assert (sizes.allreduces_per_step, sizes.decode_batches, sizes.prompt_tokens,
            sizes.has_experts) == (0, [], [2048, 8192], True)
    dpa = fit_budget(PlanRequest("deepseek-v3", 1, 64, Cluster(128), 1800.0, "itl_p99=50ms",
                                 dp_attention=True), sizes, knobs(), "c.yaml", fake_estimate)
    assert "tp-allreduce" not in by_name(dpa) and "moe-dispatch-combine" in by_name(dpa)
    with open(os.path.join(HERE, "data", "list-model-deepseek-v3-tp8.txt"), encoding="utf-8") as f:
        text = "".join(line for line in f.readlines() if not line.startswith("  allreduce"))
    with pytest.raises(PlanError, match="all-reduces per decode step"):
        parse_model_listing(text)


def test_model_listing_takes_prompt_lengths_from_kv_lines_and_batches_from_allreduce_lines_only():
    """A size line of either kind without the field that kind is read for adds nothing: a
    prefill all-reduce's prompt length is no KV request's, and a KV line without one names
    none."""
    with open(os.path.join(HERE, "data", "list-model-llama3-70b-tp8.txt"), encoding="utf-8") as f:
        text = f.read()
    extra = ("  allreduce      32MiB  derive: tp-allreduce-prefill, prompt_tokens: 4096\n"
             "  kvpush          5MiB  derive: kv-layer, block_tokens: 32\n")
    sizes = parse_model_listing(text.replace("  front-end API", extra + "  front-end API", 1))
    assert sizes.decode_batches == [1, 32] and sizes.prompt_tokens == [2048, 8192]
    assert sizes.block_tokens == 16


def test_model_listing_is_read_from_the_binarys_text():
    ds, llama = listing("deepseek-v3"), listing("llama3-70b")
    assert (ds.name, ds.has_experts, ds.allreduces_per_step) == ("deepseek-v3", True, 64)
    assert (llama.has_experts, llama.allreduces_per_step) == (False, 160)
    assert llama.decode_batches == [1, 32] and llama.prompt_tokens == [2048, 8192]
    with pytest.raises(PlanError, match="all-reduces per decode step"):
        parse_model_listing("model x: hidden_size 1\nsomething else\n")
    assert parse_duration_s("1m05s") == 65 and parse_duration_s("1h02m") == 3720
    answer = parse_scenario_listing(1, "", "fabscope: error: x.yaml:3:1: test 'kv' at 1MiB needs "
                                    "about 8784 MiB per rank for samples and buffers, more than "
                                    "max_memory_per_rank (4096 MiB)")
    assert not answer.ok and answer.memory_needed_mib == 8784
    thinned = parse_scenario_listing(0, (
        "18   rails-latency          latency   8B       quiet    mpi    host      50     10  120s  "
        "132016B      55    0.121s  rails: 127 rounds; budget (scenario 'p', 20s): kept 55 of 127 "
        "rounds, a seeded sample; left out 72 rounds, 36864 pairs\n"
        "estimated time: 1m05s in all, budget 20s (assuming ...)\n"), "")
    assert thinned.ok and thinned.estimate_s == 65 and thinned.instances == 1
    assert thinned.thinned == ["rails-latency 8B quiet: kept 55 of 127 rounds, a seeded sample; "
                               "left out 72 rounds, 36864 pairs"]


def test_topology_file_gives_nodes_per_leaf_and_leaves_per_pod(tmp_path):
    topo = tmp_path / "topo.yaml"
    topo.write_text("hosts:\n" + "".join(
        f"  n{i:02d}: {{site: dc1, pod: p{i // 8}, leaf: l{i // 4}}}\n" for i in range(24)))
    assert layout_from_topology(str(topo)) == (4, 2)
    # a last leaf and a last pod partly filled (18 hosts: leaves of 4 and one of 2, pods of
    # 2 leaves and one of 1): the layout is that of the full ones
    topo.write_text("hosts:\n" + "".join(
        f"  n{i:02d}: {{site: dc1, pod: p{i // 8}, leaf: l{i // 4}}}\n" for i in range(18)))
    assert layout_from_topology(str(topo)) == (4, 2)
    topo.write_text("hosts:\n  \"gpu-*\": {pod: a, leaf: l1}\n")
    with pytest.raises(PlanError, match="cannot be counted") as caught:
        layout_from_topology(str(topo))
    assert caught.value.option == "--topology"


def test_a_topology_without_leaf_labels_leaves_the_layout_unknown(tmp_path):
    """Hosts labelled with a site only: no leaf and no pod is counted, so the layout is
    (0, 0), unknown, as when neither --nodes-per-leaf nor --leaves-per-pod is given; never
    one node a leaf, which would plan every node pair as crossing leaves."""
    topo = tmp_path / "topo.yaml"
    topo.write_text("hosts:\n" + "".join(f"  n{i:02d}: {{site: dc1}}\n" for i in range(8)))
    assert layout_from_topology(str(topo)) == (0, 0)


def test_small_cluster_all_pairs_moe_and_kv_across_nodes():
    plan = plan_for("deepseek-v3", 64, ep=64)
    tests = by_name(plan)
    assert {"all-pairs-latency", "all-pairs-bandwidth"} <= set(tests)
    # TP 8 on nodes of 8 GPUs runs over NVLink: not this fabric's, not measured, said so
    assert "tp-allreduce" not in tests
    assert any("TP 8 inside each node: NVLink, not this fabric" in n for n in plan.notes)
    moe = tests["moe-dispatch-combine"]
    # DeepEP's low-latency configuration (decode) and its normal one at the prefill chunk
    assert moe["sizes"] == {"derive": "moe-dispatch", "tokens": [1, 32, 128]}
    # the prefill chunk's round is a test of its own, with what the TTFT needs
    prefill = tests["moe-dispatch-combine-prefill"]
    assert prefill["sizes"] == {"derive": "moe-dispatch", "tokens": [2048]}
    assert prefill["iterations"] == plan.knobs.prefill_iterations
    # 64 ranks cannot measure EP 64 and congest it too: half measure, and it says so
    assert moe["roles"]["canaries"] == 32 and any("EP 64" in n for n in plan.notes)
    kv = tests["kv-push"]
    # one node pushes to the next while the other 48 ranks load the fabric
    assert (kv["prefill_ranks"], kv["decode_ranks"]) == (8, 8) and "ranks" not in kv
    assert kv["roles"] == {"canaries": 16, "placement": "packed"}
    assert kv["conditions"] == ["quiet", "incast", "bidirectional", "copy"]
    assert kv["iterations"] * kv["prefill_ranks"] >= 100   # a p99 of the requests
    assert plan.scenario["criteria"] == "plan.criteria.yaml"


def test_the_placement_decides_what_the_plan_measures():
    """TP 16 on 8-GPU nodes spans 2 nodes: its all-reduce is measured on one TP group (16
    ranks); TP 8 x PP 2 keeps TP on NVLink and says its one stage boundary crosses the
    fabric unmeasured; DP attention has no TP all-reduce and needs --tp 1; fit is told
    the layout."""
    k = knobs()
    k.probes = probes_for(Cluster(64))
    wide = fit_budget(PlanRequest("llama3-70b", 16, None, Cluster(64), 1800.0, "itl_p99=50ms"),
                      listing("llama3-70b"), k, "c.yaml", fake_estimate)
    assert by_name(wide)["tp-allreduce"]["roles"]["canaries"] == 16
    assert by_name(wide)["tp-allreduce"]["sizes"]["decode_batch"] == [1, 32]
    assert "--tp 16 --gpus-per-node 8" in fit_arguments(wide)
    piped = fit_budget(PlanRequest("llama3-70b", 8, None, Cluster(64), 1800.0, "itl_p99=50ms",
                                   pp=2), listing("llama3-70b"), knobs(), "c.yaml", fake_estimate)
    assert "tp-allreduce" not in by_name(piped) and "kv-push" in by_name(piped)
    assert any("1 PP activation send(s) per step cross this fabric" in n for n in piped.notes)
    # the boundary's sends: latency between the ranks of one local rank on two whole nodes,
    # at 1 and 32 tokens (decode) and 2048 (prefill) x 8192 hidden x 2 B
    pp = by_name(piped)["pp-activation"]
    assert (pp["kind"], pp["pattern"], pp["sizes"]) == ("latency", "rails", [16384, 524288])
    assert by_name(piped)["pp-activation-prefill"]["sizes"] == [33554432]
    assert pp["roles"] == {"canaries": 16, "placement": "packed"}
    assert pp["conditions"] == ["quiet", "incast", "bidirectional", "copy"]
    # two nodes cannot measure and congest with whole nodes: half the ranks, spread
    two = fit_budget(PlanRequest("llama3-70b", 8, None, Cluster(16), 1800.0, "itl_p99=50ms",
                                 pp=2), listing("llama3-70b"), knobs(), "c.yaml", fake_estimate)
    assert by_name(two)["pp-activation"]["roles"] == {"canaries": 8, "placement": "spread"}
    # quiet alone: no congesting ranks are needed, the two nodes measure (16 ranks, no roles)
    quiet_only = knobs()
    quiet_only.conditions = ["quiet"]
    alone = by_name(fit_budget(PlanRequest("llama3-70b", 8, None, Cluster(64), 1800.0,
                                           "itl_p99=50ms", pp=2), listing("llama3-70b"),
                               quiet_only, "c.yaml", fake_estimate))["pp-activation"]
    assert (alone["ranks"], "roles" in alone, "conditions" in alone) == (16, False, False)
    assert "--pp 2 --gpus-per-node 8" in fit_arguments(piped)
    dpa = fit_budget(PlanRequest("deepseek-v3", 1, 64, Cluster(128), 1800.0, "itl_p99=50ms",
                                 dp_attention=True), listing("deepseek-v3"), knobs(), "c.yaml",
                     fake_estimate)
    assert "tp-allreduce" not in by_name(dpa) and "moe-dispatch-combine" in by_name(dpa)
    assert "--dp-attention" in fit_arguments(dpa)
    # EP 8 on 8-GPU nodes: the MoE rounds stay on NVLink, not measured, said so
    narrow = fit_budget(PlanRequest("deepseek-v3", 8, 8, Cluster(64), 1800.0, "itl_p99=50ms"),
                        listing("deepseek-v3"), knobs(), "c.yaml", fake_estimate)
    assert "moe-dispatch-combine" not in by_name(narrow)
    assert any("MoE rounds run over NVLink inside each node (EP 8)" in n for n in narrow.notes)
    with pytest.raises(PlanError, match="DP attention"):
        PlanRequest("deepseek-v3", 8, 64, Cluster(128), 1800.0, "itl_p99=50ms",
                    dp_attention=True).placement()


def ranked_estimate(ranks):
    """fake_estimate knowing the cluster's ranks (roles.groups: all counts its groups)."""
    return lambda scenario: fake_estimate(dict(scenario, _ranks=ranks))


def test_the_tp_allreduce_and_moe_rounds_rotate_over_every_group():
    """TP 16 on 8-GPU nodes, 64 ranks, quiet: the decode sizes' all-reduce rotates over the 4
    TP groups (16 packed ranks each, one instance per group); the prefill chunk's stays on the
    first. Under neighbour conditions half the ranks measure: 2 groups of 32. DeepSeek-V3's
    MoE round over 32 of 64 ranks rotates over 2 groups. The plan says how many groups and
    operations per group."""
    k = knobs()
    k.conditions = ["quiet"]
    k.probes = probes_for(Cluster(64))
    quiet = fit_budget(PlanRequest("llama3-70b", 16, None, Cluster(64), 1800.0, "itl_p99=50ms"),
                       listing("llama3-70b"), k, "c.yaml", ranked_estimate(64))
    tp = by_name(quiet)["tp-allreduce"]
    assert tp["roles"] == {"canaries": 16, "placement": "packed", "groups": "all"}
    prefill = by_name(quiet)["tp-allreduce-prefill"]
    assert "groups" not in prefill["roles"] and "repeats" not in prefill
    # 8 rounds (repeats) that together hold the iterations the ITL's tail needs, per group
    assert tp["repeats"] == 8 and tp["iterations"] * 8 >= quiet.knobs.collective_iterations
    iterations = tp["iterations"]
    assert any(f"the TP all-reduce rotates over all 4 of the 4 TP groups (16 ranks each, in rank "
               f"order), one group measuring at a time while the other ranks make each neighbour "
               f"condition, in 8 rounds (repeats) of {iterations} operations: {8 * iterations} "
               "per group" in n for n in quiet.notes), quiet.notes
    assert any("at the prefill chunks (TTFT) is measured on the first group only" in n
               for n in quiet.notes)
    loaded = fit_budget(PlanRequest("llama3-70b", 16, None, Cluster(64), 1800.0, "itl_p99=50ms"),
                        listing("llama3-70b"), knobs(), "c.yaml", ranked_estimate(64))
    assert by_name(loaded)["tp-allreduce"]["roles"] == {"canaries": 16, "placement": "packed",
                                                       "groups": "all"}
    moe = by_name(plan_for("deepseek-v3", 64, ep=64))["moe-dispatch-combine"]
    assert moe["roles"] == {"canaries": 32, "placement": "packed", "groups": "all"}
    # no ITL target: the per-group check has nothing to judge by, so nothing rotates
    bare = fit_budget(PlanRequest("llama3-70b", 16, None, Cluster(64), 1800.0, "ttft_p99=2s"),
                      listing("llama3-70b"), k, "c.yaml", ranked_estimate(64))
    assert "groups" not in by_name(bare)["tp-allreduce"]["roles"]
    assert any("the TP all-reduce is measured on the first of the 4 TP groups, not rotated: the "
               "SLO has no ITL target" in n for n in bare.notes), bare.notes
    # one group is the whole cluster: nothing to rotate
    whole = fit_budget(PlanRequest("llama3-70b", 16, None, Cluster(16), 1800.0, "itl_p99=50ms"),
                       listing("llama3-70b"), k, "c.yaml", ranked_estimate(16))
    assert "groups" not in by_name(whole)["tp-allreduce"]["roles"]


def test_a_budget_too_small_for_every_group_keeps_fewer_and_names_those_left():
    """The groups step halves the rotated groups once the cheaper steps are spent; the plan
    names the ranks of the groups left out and that fit cannot tell for them. Down to one
    group, nothing rotates: the first group measures alone, the others named."""
    k = knobs()
    k.conditions = ["quiet"]
    k.probes = probes_for(Cluster(128))
    req = PlanRequest("llama3-70b", 16, None, Cluster(128), 1800.0, "itl_p99=50ms")
    full = fit_budget(req, listing("llama3-70b"), k, "c.yaml", ranked_estimate(128))
    assert by_name(full)["tp-allreduce"]["roles"]["groups"] == "all"
    k = knobs()
    k.conditions = ["quiet"]
    k.probes = probes_for(Cluster(128))
    tight = fit_budget(PlanRequest("llama3-70b", 16, None, Cluster(128), full.answer.estimate_s / 2.2,
                                   "itl_p99=50ms"),
                       listing("llama3-70b"), k, "c.yaml", ranked_estimate(128))
    kept = by_name(tight)["tp-allreduce"]["roles"]["groups"]
    assert isinstance(kept, int) and 2 <= kept < 8, kept
    assert any(s.startswith("TP / MoE groups measured in turn: 8 -> 4") for s in tight.shrunk)
    assert any(f"the budget leaves {8 - kept} TP group(s) of the TP all-reduce unmeasured: ranks "
               f"{16 * kept}-127 (groups {kept}..7): fit cannot tell for them" in n
               for n in tight.notes), tight.notes
    k = knobs()
    k.conditions = ["quiet"]
    k.probes = probes_for(Cluster(128))
    one = fit_budget(PlanRequest("llama3-70b", 16, None, Cluster(128), full.answer.estimate_s / 3,
                                 "itl_p99=50ms"),
                     listing("llama3-70b"), k, "c.yaml", ranked_estimate(128))
    tp = by_name(one)["tp-allreduce"]
    assert "groups" not in tp["roles"] and "repeats" not in tp, tp
    assert any("the budget leaves 7 TP group(s) of the TP all-reduce unmeasured: ranks 16-127 "
               "(groups 1..7); the first measures alone, fit cannot tell for them" in n
               for n in one.notes), one.notes


def test_moe_rounds_cover_deepeps_two_configurations_labelled(tmp_path):
    """The alltoall test measures the decode batches and 128 tokens per rank (low-latency)
    and each prefill chunk (normal); the scenario says which is which and fit is told the
    chunk. Without prefill chunks only the low-latency rounds are left."""
    plan = plan_for("deepseek-v3", 64, ep=64)
    text = scenario_text(plan, ["--model", "deepseek-v3"])
    assert ("# MoE rounds (moe-dispatch-combine, fp8 dispatch / bf16 combine in both): 1, 32, "
            "128 tokens per rank = DeepEP low-latency (decode batches; 128 as DeepEP publishes "
            "it); 2048 tokens per rank = DeepEP normal (prefill chunk)") in text
    assert "--decode-batch 32 --prefill-chunk 2048 --prompt 8192" in fit_arguments(plan)
    k = knobs()
    k.prefill_chunks = [1024, 4096]
    assert moe_tokens(k) == [1, 32, 128, 1024, 4096]
    k.prefill_chunks = []
    req = PlanRequest("deepseek-v3", 8, 64, Cluster(64), 1800.0, "itl_p99=50ms")
    bare = fit_budget(req, listing("deepseek-v3"), k, "c.yaml", fake_estimate)
    assert by_name(bare)["moe-dispatch-combine"]["sizes"]["tokens"] == [1, 32, 128]
    assert "--prefill-chunk" not in fit_arguments(bare)
    assert "DeepEP normal" not in scenario_text(bare, [])


def test_gpcnets_canaries_where_the_rank_count_allows():
    """64 ranks: 12 canaries (20 %) measure random-ring latency 8 B and bandwidth and an
    8 B all-reduce under every condition, the rings on whole nodes, the all-reduce on random
    ranks, and the plan says so; 16 ranks (3 canaries) and a quiet plan have none; the
    budget leaves them out before a neighbour condition fit judges."""
    plan = plan_for("deepseek-v3", 64, ep=64)
    tests = by_name(plan)
    ring, bw, ar = (tests[n] for n in ("gpcnet-ring-latency", "gpcnet-ring-bandwidth",
                                       "gpcnet-allreduce"))
    assert (ring["kind"], ring["pattern"], ring["sizes"]) == ("latency", "ring", [8])
    assert (bw["kind"], bw["pattern"], bw["sizes"]) == ("bandwidth", "ring", ["128KiB"])
    assert (ar["kind"], ar["sizes"]) == ("allreduce", [8])
    for t in (ring, bw, ar):
        assert t["conditions"] == ["quiet", "incast", "bidirectional", "copy"]
        assert t["roles"]["canaries"] == "20%"
    assert ring["roles"]["placement"] == "packed" and ar["roles"]["placement"] == "random"
    assert any("GPCNeT's canaries: 12 ranks of 64 (20 %)" in n and "other 52" in n
               for n in plan.notes)
    small = plan_for("llama3-70b", 16)
    assert not any(t["name"].startswith("gpcnet") for t in small.scenario["tests"])
    assert any("20 % of 16 ranks is fewer than 4 canaries" in n for n in small.notes)
    k = knobs()
    k.conditions = ["quiet"]
    req = PlanRequest("llama3-70b", 8, None, Cluster(64), 1800.0, "itl_p99=50ms")
    quiet = fit_budget(req, listing("llama3-70b"), k, "c.yaml", fake_estimate)
    assert not any(t["name"].startswith("gpcnet") for t in quiet.scenario["tests"])
    tight = plan_for("deepseek-v3", 64, budget_s=20, ep=64)
    assert "GPCNeT's canary tests left out" in tight.shrunk
    # ... before a neighbour condition fit judges
    dropped = [i for i, s in enumerate(tight.shrunk) if s.startswith("neighbour condition")]
    assert dropped and tight.shrunk.index("GPCNeT's canary tests left out") < dropped[0]


def test_kv_push_leaves_congestors_or_runs_quiet_on_its_own_ranks():
    """Two nodes: the KV group shrinks to half the ranks so that the rest can congest (and
    says so); quiet only: the KV test takes every rank, its roles rotating over the nodes."""
    plan = plan_for("llama3-70b", 16)
    kv = by_name(plan)["kv-push"]
    assert (kv["prefill_ranks"], kv["decode_ranks"], kv["roles"]["canaries"]) == (4, 4, 8)
    assert any("KV push is measured 4 -> 4" in n for n in plan.notes)
    k = knobs()
    k.conditions = ["quiet"]
    k.probes = probes_for(Cluster(64))
    req = PlanRequest("llama3-70b", 8, None, Cluster(64), 1800.0, "itl_p99=50ms")
    quiet = by_name(fit_budget(req, listing("llama3-70b"), k, "c.yaml", fake_estimate))["kv-push"]
    assert "roles" not in quiet and "conditions" not in quiet
    # quiet on 8 nodes: every rank measures, the roles rotating over every node
    assert "ranks" not in quiet and quiet["role_rotation"] == "ring" and quiet["rotation_cycles"] == 4
    assert (quiet["prefill_ranks"], quiet["decode_ranks"]) == (8, 8)
    # one node of 256 ranks whose instances (TP 8 x PP 32) fill it, quiet: 128 push to
    # 128 (the KV pair crosses the fabric), one request each already more than the 120
    # the KV push asks for
    one = Cluster(256, ranks_per_node=256)
    req = PlanRequest("llama3-70b", 8, None, one, 1800.0, "itl_p99=50ms", pp=32)
    alone = [t for t in build_scenario(req, listing("llama3-70b"), k, "c.yaml", [])["tests"]
             if t["name"] == "kv-push"][0]
    assert (alone["ranks"], alone["prefill_ranks"], alone["iterations"]) == (256, 128, 1)


def test_large_cluster_samples_instead_of_all_pairs_and_dense_models_have_no_moe():
    plan = plan_for("llama3-70b", 1024)
    tests = by_name(plan)
    assert not any(name.startswith("all-pairs") for name in tests)
    assert {"rails-latency", "ring-latency", "bisection-bandwidth"} <= set(tests)
    assert "moe-dispatch-combine" not in tests


def test_budget_is_respected_by_shrinking_never_below_a_p99():
    full = plan_for("deepseek-v3", 64, ep=64)
    assert not full.shrunk and full.answer.estimate_s > 20
    plan = plan_for("deepseek-v3", 64, budget_s=20, ep=64)
    assert plan.answer.estimate_s <= 20 and plan.shrunk
    assert plan.knobs.collective_iterations >= 100 and plan.knobs.kv_requests >= 100
    with pytest.raises(PlanError, match="no plan fits the budget") as caught:
        plan_for("deepseek-v3", 64, budget_s=1, ep=64)
    assert caught.value.option == "--budget"


def test_the_criteria_carry_the_slo_and_fit_reads_it_from_the_scenario(tmp_path):
    text = criteria_text("itl_p99=50ms,ttft_p99=2s", Cluster(64), CRITERIA_DIR)
    assert yaml.safe_load(text)["slo"] == {"itl_p99": "50ms", "ttft_p99": "2s"}
    result = serving_file(tmp_path / "r.h5", requests=20, iterations=20)
    (tmp_path / "plan.criteria.yaml").write_text(text.replace("50ms", "40ms"))
    with h5py.File(result, "a") as f:
        f.attrs["scenario_text"] = ("name: p\nmodel: llama3-70b\nparallel: {tp: 8}\n"
                                    "criteria: plan.criteria.yaml\n")
        f.attrs["scenario_file"] = str(tmp_path / "plan.yaml")
    no_options = argparse.Namespace(criteria=None, slo=None)
    with open_result(str(result)) as opened:
        assert _slo_of(no_options, opened).targets_ms == {"itl_p99": 40.0, "ttft_p99": 2000.0}
        given = argparse.Namespace(criteria=None, slo="itl_p99=5ms")
        assert _slo_of(given, opened).targets_ms == {"itl_p99": 5.0, "ttft_p99": 2000.0}
        (tmp_path / "plan.criteria.yaml").write_text(text.split("\nslo:")[0])
        with pytest.raises(SloError, match="no latency target"):
            _slo_of(no_options, opened)


@outcome_contract("plan", 2, "—")
@pytest.mark.parametrize("option, bad", [
    ("--tp", ["--tp", "0"]), ("--ep", ["--ep", "4096"]), ("--budget", ["--budget", "soon"]),
    ("--slo", ["--slo", "itl_p99=fast"]), ("--conditions", ["--conditions", "incast"]),
    ("--ranks-per-node", ["--ranks-per-node", "7"]), ("--prompt", ["--prompt", "long"]),
    ("--nodes-per-leaf", ["--nodes-per-leaf", "4", "--leaves-per-pod", "-1"]),
    ("--decode-batch", ["--decode-batch", "8,0"]), ("--prompt", ["--prompt", "0"]),
])
def test_bad_input_exits_2_naming_the_option(tmp_path, capsys, option, bad):
    args = {"--model": "deepseek-v3", "--ranks": "64", "--slo": "itl_p99=50ms",
            "--output": str(tmp_path / "p.yaml")}
    args.update(dict(zip(bad[::2], bad[1::2])))
    assert main(["plan"] + [w for kv in args.items() for w in kv]) == 2
    # refused by the plan itself, before the binary's scenario loader sees it
    assert capsys.readouterr().err.startswith(f"error: {option}")
    assert not (tmp_path / "p.yaml").exists()


def test_plan_without_an_slo_is_a_usage_error_naming_it(tmp_path, capsys):
    """--slo is what the plan measures for: without it argparse refuses (exit 2)."""
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["plan", "--model", "llama3-70b", "--ranks", "16",
                                   "--output", str(tmp_path / "p.yaml")])
    assert stopped.value.code == 2 and "--slo" in capsys.readouterr().err


def fabscope_bin():
    for candidate in (os.environ.get("FABSCOPE_BIN"), os.path.join(REPO, "build", "fabscope")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.skip("no fabscope binary (build/fabscope or FABSCOPE_BIN): the plan is not loaded")


def test_a_model_the_binary_refuses_exits_2_quoting_its_refusal(tmp_path, capsys):
    """`fabscope list` prints the model's lines on stdout, then refuses TP 3 (8 KV heads) on
    stderr: the plan names --tp and quotes that refusal, not the listing's last line."""
    binary = fabscope_bin()
    assert main(["plan", "--model", "llama3-70b", "--tp", "3", "--ranks", "16", "--slo",
                 "itl_p99=50ms", "--paths", "host", "--fabscope", binary,
                 "--output", str(tmp_path / "p.yaml")]) == 2
    assert capsys.readouterr().err == ("error: --tp: fabscope list refused it: fabscope: error: "
                                       "model 'llama3-70b': tp=3 does not divide kv_heads=8\n")
    assert not (tmp_path / "p.yaml").exists()


def test_an_output_that_cannot_be_written_exits_2_naming_it(tmp_path, capsys):
    """A plan made (the binary loaded it) but --output a folder: exit 2 naming --output and
    why, no plan printed as if written."""
    binary = fabscope_bin()
    folder = tmp_path / "plan.yaml"
    folder.mkdir()
    assert main(["plan", "--model", "llama3-70b", "--ranks", "16", "--slo", "itl_p99=50ms",
                 "--paths", "host", "--fabscope", binary, "--output", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: --output {folder}: cannot write it (Is a directory)\n"
    assert captured.out == "" and not (tmp_path / "plan.criteria.yaml").exists()


@outcome_contract("plan", 0, "—")
def test_the_written_plan_loads_in_the_real_binary_within_its_budget(tmp_path, capsys):
    binary = fabscope_bin()
    out = tmp_path / "plan.yaml"
    # TP 16 over two 8-GPU nodes: its all-reduce crosses the fabric and is measured
    assert main(["plan", "--model", "llama3-70b", "--tp", "16", "--ranks", "16", "--budget", "2m",
                 "--slo", "itl_p99=50ms", "--prompt", "512", "--fabscope", binary, "--output",
                 str(out)]) == 0
    printed = capsys.readouterr().out
    assert "estimate" in printed and (tmp_path / "plan.criteria.yaml").exists()
    # the line launch/fabscope-fit takes fit's options from
    assert "# The verdict: python3 -m fabscope_analysis fit RESULT.h5 --tp 16 --gpus-per-node 8 " \
        "--decode-batch 32 --prefill-chunk 2048 --prompt 512 --block-tokens 16\n" in out.read_text()
    done = subprocess.run([binary, "list", "--scenario", str(out), "--ranks", "16"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    answer = parse_scenario_listing(done.returncode, done.stdout, done.stderr)
    assert answer.ok and 0 < answer.estimate_s <= 120
    assert "512KiB" in done.stdout and "all-pairs" in done.stdout
    # TP 8 x PP 2: the loader takes the PP sends' latency between the two nodes
    piped = tmp_path / "pp.yaml"
    assert main(["plan", "--model", "llama3-70b", "--pp", "2", "--ranks", "16", "--budget", "2m",
                 "--slo", "itl_p99=50ms", "--prompt", "512", "--fabscope", binary, "--output",
                 str(piped)]) == 0
    done = subprocess.run([binary, "list", "--scenario", str(piped), "--ranks", "16"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "rails: all-pairs within each local rank across 2 nodes, 1 rounds" in done.stdout
    # DeepSeek-V3: the loader takes both MoE rounds (DeepEP low-latency and normal)
    ds = tmp_path / "ds.yaml"
    assert main(["plan", "--model", "deepseek-v3", "--ep", "16", "--ranks", "16", "--budget",
                 "5m", "--slo", "itl_p99=50ms", "--prompt", "512", "--fabscope", binary,
                 "--output", str(ds)]) == 0
    done = subprocess.run([binary, "list", "--scenario", str(ds), "--ranks", "16"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "128 tokens/rank" in done.stdout and "2048 tokens/rank" in done.stdout
    # 64 ranks: GPCNeT's canary tests (20 %) load there too
    wide = tmp_path / "wide.yaml"
    assert main(["plan", "--model", "llama3-70b", "--ranks", "64", "--budget", "5m", "--slo",
                 "itl_p99=50ms", "--prompt", "512", "--fabscope", binary,
                 "--output", str(wide)]) == 0
    done = subprocess.run([binary, "list", "--scenario", str(wide), "--ranks", "64"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "gpcnet-ring-latency" in done.stdout and "random rings" in done.stdout


@outcome_contract("launch/fabscope-fit", 2, "—")
def test_the_wrapper_refuses_bad_usage_before_planning(tmp_path):
    wrapper = os.path.join(REPO, "launch", "fabscope-fit")
    for args, expected in ((["--ranks", "4"], "--model and --ranks are required"),
                           (["--model", "llama3-70b", "--ranks", "4", "--output", "x.yaml"],
                            "--output: the plan goes to --dir")):
        done = subprocess.run([wrapper, "--dir", str(tmp_path / "d")] + args, capture_output=True,
                              text=True, timeout=30, check=False)
        assert done.returncode == 2 and expected in done.stderr


def test_the_plan_measures_what_tells_the_slos_percentiles():
    """TP 16 over two 8-GPU nodes: 160 all-reduces a step cross the fabric. A step's p99
    composed from n operations cannot hold an event none showed, which may come at up to
    3.0 / n each (rule of three): 47,694 make that at most 1 % of steps
    (1 - (1 - 2.9957 / 47694)^160 = 0.99997 %, one fewer is above). The TTFT p99 splits
    its 1 % between the KV request (2.9957 / 0.005 -> 600) and the prefill chunk's 160
    all-reduces (95,626)."""
    req = PlanRequest("llama3-70b", 16, None, Cluster(16), 1800.0, "itl_p99=50ms,ttft_p99=2s")
    k = Knobs(decode_batches=[32], prefill_chunks=[2048], prompts=[512], conditions=["quiet"])
    needs = size_for_tails(req, k, {"itl_p99": 50.0, "ttft_p99": 2000.0})
    assert (k.collective_iterations, k.kv_requests, k.prefill_iterations) == (47694, 600, 95626)
    assert [n[:2] for n in needs] == [("collective_iterations", 47694), ("kv_requests", 600),
                                      ("prefill_iterations", 95626)]
    # a p50 alone, no prefill counted: 160 operations, half the steps: 2.9957 / (1 - 0.5^(1/160))
    # = 693.0 -> 694; one request: 2.9957 / 0.5 -> 6
    p50 = Knobs(decode_batches=[32], prefill_chunks=[], prompts=[512], conditions=["quiet"],
                collective_iterations=1, kv_requests=1)
    size_for_tails(req, p50, {"itl_p50": 50.0, "ttft_p50": 2000.0})
    assert (p50.collective_iterations, p50.kv_requests) == (694, 6)
    # cut by the budget: said, with what would tell
    k.prefill_iterations = 5976
    notes = tail_notes(k, needs)
    assert "47694 measured, told from 47694" in notes[0]
    assert "cut it to 5976 of the 95626 that tell: fit will say CANNOT TELL" in notes[2]
    # TP 8 inside each node: no fabric operation a step, nothing raised for the ITL
    inside = Knobs(decode_batches=[32], prefill_chunks=[], prompts=[512], conditions=["quiet"])
    size_for_tails(PlanRequest("llama3-70b", 8, None, Cluster(16), 1800.0, "itl_p99=50ms"),
                   inside, {"itl_p99": 50.0})
    assert inside.collective_iterations == 200


def test_a_group_is_measured_whole_unless_a_condition_needs_ranks_to_congest():
    """TP 16 on 16 ranks: quiet only, the all-reduce is measured on the whole TP group;
    with a neighbour condition at most half the ranks measure, the other half congests."""
    quiet = knobs()
    quiet.conditions = ["quiet"]
    for k, canaries in ((quiet, 16), (knobs(), 8)):
        plan = fit_budget(PlanRequest("llama3-70b", 16, None, Cluster(16), 1800.0,
                                      "itl_p99=50ms"), listing("llama3-70b"), k, "c.yaml",
                          fake_estimate)
        assert by_name(plan)["tp-allreduce"]["roles"]["canaries"] == canaries, k.conditions


@pytest.mark.parametrize("need, raised_gib", [(8784, 10), (32 * 1024, 36)])
def test_a_kv_pool_over_the_default_memory_raises_the_limit_to_its_need(need, raised_gib):
    """The loader refuses the plan until its memory limit holds the KV pool (8,784 MiB per
    rank, over the default 4 GiB): the plan raises max_memory_per_rank to the need and
    10 %, in whole GiB (10 GiB), says so, and writes it into the scenario. A need of
    exactly the cap (32 GiB) is still raised to (36 GiB), not met by dropping prompts."""

    def estimate(scenario):
        limit = scenario.get("max_memory_per_rank", "4GiB")
        if int(limit.removesuffix("GiB")) * 1024 < need:
            return ListAnswer(False, error=f"the KV pool needs {need} MiB per rank",
                              memory_needed_mib=need)
        return fake_estimate(scenario)
    plan = plan_for("llama3-70b", 64, estimate=estimate)
    assert plan.scenario["max_memory_per_rank"] == f"{raised_gib}GiB"
    assert plan.shrunk[0] == (f"max_memory_per_rank raised to {raised_gib} GiB (the KV pool "
                              f"needs {need} MiB per rank)")


def test_pp_sends_between_multi_node_nvlink_domains_are_named_not_measured():
    """TP 8 x PP 4 in NVLink domains of 2 nodes: 1 of the 3 stage boundaries crosses the
    fabric, but the plan measures PP sends only between single-node domains (a pair of
    nodes would be inside one domain): no pp-activation test, and a note says so."""
    plan = fit_budget(PlanRequest("llama3-70b", 8, None, Cluster(64), 1800.0, "itl_p99=50ms",
                                  pp=4, nodes_per_nvlink_domain=2),
                      listing("llama3-70b"), knobs(), "c.yaml", fake_estimate)
    assert not any(name.startswith("pp-activation") for name in by_name(plan))
    assert ("1 PP activation send(s) per step cross this fabric: not measured (the plan "
            "measures them between two single-node domains; fit names them as missing)") \
        in plan.notes


def test_plan_takes_tp_8_unless_told():
    """`plan --model M` plans for TP 8, as its help says; --tp changes it."""
    given = ["plan", "--model", "llama3-70b", "--ranks", "16", "--slo", "itl_p99=50ms", "--output", "p.yaml"]
    assert build_parser().parse_args(given).tp == 8
    assert build_parser().parse_args(given + ["--tp", "4"]).tp == 4


def test_with_an_ample_budget_each_probe_runs_its_starting_iterations():
    """Nothing shrunk (a budget of a day): every latency probe runs 50 iterations of 8 B, every
    bandwidth probe 10 of 1 MiB, the starting values the budget halves from."""
    plan = plan_for("llama3-70b", 16, budget_s=86400.0)
    probes = [t for t in plan.scenario["tests"] if t.get("pattern") and t["name"] in knobs_probes(16)]
    assert probes, [t["name"] for t in plan.scenario["tests"]]
    for t in probes:
        expected = (50, [8]) if t["sizes"] == [8] else (10, ["1MiB"])
        assert (t["iterations"], t["sizes"]) == expected, t


def knobs_probes(ranks):
    return set(probes_for(Cluster(ranks)))


def test_a_scenario_listing_without_its_estimate_line_is_refused():
    """fabscope list's answer must end with 'estimated time: ... in all': a listing without
    it (a binary of another version, a cut-off output) is no estimate, whatever it lists."""
    listed = parse_scenario_listing(0, "0 tp allreduce 16KiB quiet\n1 kv kvpush 80MiB quiet\n", "")
    assert not listed.ok and "estimated time" in listed.error
    listed = parse_scenario_listing(0, "0 tp allreduce 16KiB quiet\nestimated time: 1m05s in all\n", "")
    assert listed.ok and listed.estimate_s == 65 and listed.instances == 1


def test_the_command_stored_in_the_scenario_names_every_option_given_or_defaulted():
    """The plan's command line, as stored in its scenario, holds the options with a value,
    defaults included (seed 7; nodes per leaf and leaves per pod 0: not given), and none
    left unset (--ep, --topology, --calibration)."""
    args = build_parser().parse_args(["plan", "--model", "llama3-70b", "--ranks", "16",
                                      "--slo", "tpot_p99=50ms", "--output", "s.yaml"])
    assert command_of(args) == [
        "--model", "llama3-70b", "--tp", "8", "--pp", "1", "--ranks", "16",
        "--ranks-per-node", "8", "--nodes-per-leaf", "0", "--leaves-per-pod", "0",
        "--budget", "30m", "--slo", "tpot_p99=50ms",
        "--conditions", "quiet,incast,bidirectional,copy", "--decode-batch", "1,32",
        "--prefill-chunk", "2048", "--prompt", "2048,8192", "--paths", "auto", "--seed", "7",
        "--output", "s.yaml"]


def test_a_measured_group_is_never_fewer_than_two_ranks():
    """Under a neighbour condition at most half the ranks measure, so the rest congest; but
    a collective of one rank crosses no fabric: 2 or 3 ranks still measure on 2."""
    for ranks, measured in ((2, 2), (3, 2), (4, 2), (5, 2), (16, 8)):
        assert _canaries(ranks, Cluster(ranks), ["quiet", "incast"]) == measured, ranks
    assert _canaries(3, Cluster(3), ["quiet"]) == 3


def test_a_budget_refusal_quotes_the_smallest_plans_figure_or_the_loaders_refusal():
    """The budget error's "smallest is ...": the loader's estimate, else its figure at one
    round an instance, else (no figure at all) the loader's own words."""
    assert smallest_estimate(ListAnswer(True, estimate_s=90.0)) == "1 min 30 s"
    assert smallest_estimate(ListAnswer(False, over_budget=True, error="over budget: still 2h with "
                                        "one round per instance")) == "120 min 00 s (one round a test instance)"
    assert smallest_estimate(ListAnswer(False, over_budget=True, error="no such model: gpt-x")) == \
        "refused by the scenario loader: no such model: gpt-x"
