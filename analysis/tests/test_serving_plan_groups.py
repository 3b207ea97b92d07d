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
    collectives = [t["iterations"] for t in plan.scenario["tests"]
                   if t["kind"] in ("allreduce", "alltoall") and not t["name"].startswith("gpcnet")]
    assert collectives and min(collectives) >= 200, collectives
    assert tests["gpcnet-allreduce"]["iterations"] == 200
