"""Point-to-point kinds (src/kinds/p2p): latency, bandwidth and bibw between pairs of ranks.

Their headline rows are messages (latency: a round trip over the sample divisor;
bandwidth: a window of messages); the summary adds the osu-style batch figure; the line
rate reads the bandwidth rows; diagnose's pairs evidence reads the quiet pairs tests;
fit's PP class reads the latency kind's plan-written stage-boundary test."""

from __future__ import annotations

from typing import Optional

from ..reader import FLAG_AUXILIARY_MASK
from .base import PAIR_EVIDENCE, PAIR_FIT, KindAnalysis, Transfers


def bandwidth_transfers(inst) -> Optional[Transfers]:
    """Each headline row a transfer from its rank to its peer (bandwidth metric only: a
    latency row carries no bandwidth figure)."""
    if inst.metric != "bandwidth":
        return None
    s = inst.samples()
    s = s[(s["flags"].astype("int64").to_numpy() & FLAG_AUXILIARY_MASK) == 0]
    if s.empty:
        return None
    return (s["rank"].to_numpy(), s["peer"].to_numpy(), s["bytes"].to_numpy(dtype="float64"),
            (s["t_done_ns"] - s["t_post_ns"]).to_numpy(dtype="float64") / 1e9)


LATENCY = KindAnalysis(("latency",), "latency", batch_column=True,
                       evidence=frozenset({PAIR_FIT, PAIR_EVIDENCE}),
                       serving_classes=frozenset({"pp", "pp_prefill"}),
                       stage_boundary_sends=True, gpcnet_canary=True)
BANDWIDTH = KindAnalysis(("bandwidth",), "bandwidth", batch_column=True,
                         evidence=frozenset({PAIR_FIT, PAIR_EVIDENCE}),
                         transfers=bandwidth_transfers,
                         gpcnet_canary=True)
BIBW = KindAnalysis(("bibw",), "bandwidth", batch_column=True, transfers=bandwidth_transfers)

ANALYSES = (LATENCY, BANDWIDTH, BIBW)
