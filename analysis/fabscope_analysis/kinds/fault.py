"""The fault drill (src/kinds/fault): a fault injected while traffic runs.

The summary and the report's faults section show its measured detection beside what the
stack in use would take, and the return to baseline."""

from __future__ import annotations

import math
from typing import List

from ..run_analysis import format_number, number_or_none
from .base import KindAnalysis


def _seconds(value: float) -> str:
    return f"{format_number(value)} s"


def expected_phrase(stack: str, seconds, basis: str = "") -> str:
    """'<stack> as configured here would take about N s' (or never, or not modelled)."""
    v = number_or_none(seconds)
    if v is None or math.isnan(v):
        return f"{stack}: not modelled" + (f" ({basis})" if basis else "")
    if math.isinf(v):
        text = f"{stack} as configured here would never report it"
    elif v == 0:
        text = f"{stack} as configured here would report it at once"
    else:
        # "about": a budget, not a measurement; whole seconds from 10 s on.
        text = f"{stack} as configured here would take about " + (f"{v:.0f} s" if v >= 10 else _seconds(v))
    return text + (f" ({basis})" if basis else "")


def fault_lines(inst) -> List[str]:
    """A fault drill: its measured detection next to what the stack in use (and NCCL
    and verbs on InfiniBand) would take on its own with the settings recorded, and the
    return to baseline of a fault that ended."""
    g = inst.get
    lines = []
    false_losses = number_or_none(g("false_losses"))
    if false_losses:
        # First: with a live peer declared lost the figures below do not describe the fault.
        lines.append(f"false losses: {int(false_losses)} live peer(s) declared lost, so the drill "
                     f"cannot judge the fault: {g('false_loss_detail', '')}")
    detected = number_or_none(g("detection_ms"))
    if detected is not None and detected >= 0:
        mine = (f"fabscope's drill detected in {_seconds(detected / 1e3)}"
                f" ({g('detection_mechanism', '?')})")
    else:
        mine = "fabscope's drill did not detect it"
    stack = g("expected_detection_stack")
    if stack:
        lines.append(f"{g('fault', 'fault')}: {mine}; "
                     + expected_phrase(str(stack), g("expected_detection_s"),
                                       str(g("expected_detection_basis", ""))))
        others = [expected_phrase(name, g(key)) for key, name in
                  (("expected_nccl_ib_s", "NCCL over InfiniBand"),
                   ("expected_verbs_qp_s", "a verbs RC queue pair")) if g(key) is not None]
        if others:
            lines.append("  on InfiniBand: " + "; ".join(others))
    else:
        lines.append(f"{g('fault', 'fault')}: {mine}")
    aborts = g("abort_per_survivor")
    if aborts is not None:
        # A drill over NCCL: every survivor aborts its communicator; nothing is re-routed.
        slowest = number_or_none(g("abort_max_ms"))
        lines.append(f"communicator abort: "
                     + (f"slowest {format_number(slowest)} ms" if slowest is not None and slowest >= 0
                        else "none returned")
                     + f" (abort_within {format_number(g('abort_within_ms'))} ms): {aborts}")
        if g("reroute"):
            lines.append(f"re-route: {g('reroute')}")
    verdict = g("return_to_baseline")
    if verdict:
        worst = number_or_none(g("baseline_ms"))
        back = (f"worst {format_number(worst)} ms after the fault ended" if worst is not None
                and worst >= 0 else "missing")
        lines.append(f"return to baseline: {verdict} ({back}; recover_within "
                     f"{format_number(g('recover_within_ms'))} ms; rank {g('carrier_rank')} "
                     f"against the victim's pre-fault {format_number(g('victim_pre_fault_rps'))} "
                     f"req/s, p99 {format_number(g('victim_pre_fault_p99_ms'))} ms): "
                     f"{g('fault_cycles', '')}")
    return lines


ANALYSES = (KindAnalysis(("fault",), summary_lines=fault_lines, drill_lines=fault_lines),)
