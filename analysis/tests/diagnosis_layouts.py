"""Hand-built inputs shared by the tests of the diagnosis's rules: a regular cluster's
layout and the test instance a PairData names."""

import numpy as np

from fabscope_analysis.diagnosis.model import Layout


class AllPairsBandwidth:
    """The instance a hand-built PairData belongs to: an all-pairs bandwidth test."""
    index = 2

    def get(self, key, default=None):
        return "ap-bandwidth" if key == "name" else default


def regular_layout(hosts: int, gpus: int, leaves: int) -> Layout:
    """hosts x gpus ranks in rank order, hosts split evenly over the leaves, NIC r % gpus."""
    n = hosts * gpus
    host = np.arange(n) // gpus
    return Layout(n, host, host // (hosts // leaves), [f"host{h:03d}" for h in range(hosts)],
                  [f"leaf{x}" for x in range(leaves)], {r: r % gpus for r in range(n)},
                  {r: f"mlx5_{r % gpus}" for r in range(n)}, gpus)
