"""A placement refuses what cannot be placed, and takes what can: the expert-parallel
width of a model with experts, at 1 and above."""

import pytest

from fabscope_analysis import models
from fabscope_analysis.serving.placement import Placement, PlacementError

DEEPSEEK = models.preset("deepseek-v3")
LLAMA70 = models.preset("llama3-70b")


def test_expert_parallel_width_is_taken_on_a_model_with_experts_only():
    for ep in (1, 8, 64):
        assert Placement(DEEPSEEK, tp=1, ep=ep, gpus_per_node=8).ep == ep
    with pytest.raises(PlacementError, match="ep 0: must be at least 1"):
        Placement(DEEPSEEK, tp=1, ep=0, gpus_per_node=8)
    with pytest.raises(PlacementError, match="ep 8: llama3-70b has no experts"):
        Placement(LLAMA70, tp=8, ep=8, gpus_per_node=8)


def test_tensor_and_pipeline_widths_below_1_are_refused_and_1_is_taken():
    """`--tp 0` or `--pp 0` places nothing (no rank holds a layer): refused, naming both
    widths; 1 is the smallest placement of either."""
    assert (Placement(LLAMA70, tp=1, pp=1, gpus_per_node=8).tp,
            Placement(LLAMA70, tp=1, pp=1, gpus_per_node=8).pp) == (1, 1)
    for tp, pp in ((0, 1), (1, 0), (8, 0), (8, -1)):
        with pytest.raises(PlacementError, match=f"tp and pp must be at least 1, got tp {tp}, pp {pp}"):
            Placement(LLAMA70, tp=tp, pp=pp, gpus_per_node=8)


def test_an_nvlink_domain_of_fewer_than_one_node_is_refused_and_one_is_taken():
    """`--nodes-per-nvlink-domain` (docs/serving-fit.md, default 1): 0 nodes share no
    domain at all, refused naming the value; 1 is each node its own domain."""
    assert Placement(LLAMA70, tp=8, gpus_per_node=8, nodes_per_nvlink_domain=1).nodes_per_nvlink_domain == 1
    for nodes in (0, -1):
        with pytest.raises(PlacementError, match=f"nodes per NVLink domain must be at least 1, got {nodes}$"):
            Placement(LLAMA70, tp=8, gpus_per_node=8, nodes_per_nvlink_domain=nodes)
