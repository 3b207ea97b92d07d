"""Which ranks the plan's KV push measures: one node pushes to the next across the fabric;
on a single node, half its ranks push to the other half."""

from fabscope_analysis.serving.plan import Cluster, kv_group


def test_the_kv_push_crosses_the_fabric_when_there_is_one():
    assert kv_group(Cluster(16)) == (8, 8)          # two nodes of 8: node to node
    assert kv_group(Cluster(32, ranks_per_node=4)) == (4, 4)
    assert kv_group(Cluster(8)) == (4, 4)           # one node: half to half
    assert kv_group(Cluster(2)) == (1, 1)


def test_gpcnets_allreduce_canary_runs_200_iterations_at_most():
    """GPCNeT's all-reduce canary: 200 iterations (a congestion factor is a ratio of medians;
    the serving collectives' tail sizing, tens of thousands, is not its), fewer only when the
    plan's collectives have fewer."""
    from test_serving_plan import by_name, plan_for
    plan = plan_for("deepseek-v3", 64, ep=64)
    tests = by_name(plan)
    # a rotated collective's operations per group: its rounds (repeats) x its iterations
    collectives = [t["iterations"] * t.get("repeats", 1) for t in plan.scenario["tests"]
                   if t["kind"] in ("allreduce", "alltoall") and not t["name"].startswith("gpcnet")]
    assert collectives and min(collectives) >= 200, collectives
    assert tests["gpcnet-allreduce"]["iterations"] == 200


def test_the_kv_push_runs_every_request_the_plan_asks_for():
    """Each prefill rank pushes `iterations` requests: together at least the plan's
    kv_requests, one round more when they do not divide evenly (ceil, not floor: 121
    requests over 4 prefill ranks is 31 rounds, 124 requests)."""
    import math
    from test_serving_plan import knobs, listing, fake_estimate, by_name
    from fabscope_analysis.serving.plan import PlanRequest
    from fabscope_analysis.serving.plan_budget import fit_budget
    k = knobs()
    k.kv_requests = 121
    plan = fit_budget(PlanRequest("llama3-70b", 8, None, Cluster(16), 1800.0, "itl_p99=50ms"),
                      listing("llama3-70b"), k, "c.yaml", fake_estimate)
    push = by_name(plan)["kv-push"]
    requests = plan.knobs.kv_requests
    assert requests % push["prefill_ranks"], (requests, push["prefill_ranks"])  # not a multiple
    assert push["iterations"] == math.ceil(requests / push["prefill_ranks"]), push
    assert push["iterations"] * push["prefill_ranks"] >= requests
