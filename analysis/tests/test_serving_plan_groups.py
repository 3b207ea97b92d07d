"""Which ranks the plan's KV push measures: one node pushes to the next across the fabric;
on a single node, half its ranks push to the other half."""

from fabscope_analysis.serving.plan import Cluster, kv_group


def test_the_kv_push_crosses_the_fabric_when_there_is_one():
    assert kv_group(Cluster(16)) == (8, 8)          # two nodes of 8: node to node
    assert kv_group(Cluster(32, ranks_per_node=4)) == (4, 4)
    assert kv_group(Cluster(8)) == (4, 4)           # one node: half to half
    assert kv_group(Cluster(2)) == (1, 1)
