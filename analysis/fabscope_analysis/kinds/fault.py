"""The fault drill (src/kinds/fault): a fault injected while traffic runs.

The summary and the report's faults section show its measured detection beside what the
stack in use would take, and the return to baseline."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional

from ..reader import TestInstance
from ..run_analysis import format_number, number_or_none
from .base import NO_UNIT, SECONDS, KindAnalysis, KindMetric, attr_number


def _seconds(value: float) -> str:
    return f"{format_number(value)} s"


def expected_phrase(stack: str, seconds, basis: str = "") -> str:
    """'<stack> as configured here would take about N s' (or never, or not modelled)."""
    v = None if seconds is None else float(seconds)
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


Number = Optional[float]   # an attribute's number; None when the file lacks it


@dataclass(frozen=True)
class FaultFigures:
    """A fault drill's attributes as the drill wrote them: its measured detection, what
    the stacks would take on their own, a communicator abort and the return to baseline
    (text '' and numbers None where the drill wrote none)."""
    fault: str
    false_losses: Number
    false_loss_detail: str
    detection_s: Number                       # negative: not detected
    detection_mechanism: str
    expected_stack: str
    expected_detection_s: Number
    expected_detection_basis: str
    expected_nccl_ib_s: Optional[Number]      # None: not written (NaN: not modelled)
    expected_verbs_qp_s: Optional[Number]
    abort_per_survivor: Optional[str]         # None: not a drill over NCCL
    abort_max_ms: Number
    abort_within_ms: Number
    reroute: str
    return_to_baseline: str
    baseline_ms: Number
    recover_within_ms: Number
    carrier_rank: str
    victim_pre_fault_rps: Number
    victim_pre_fault_p99_ms: Number
    fault_cycles: str


def _text(value) -> str:
    return "" if value is None else str(value)


def _thousandth(value: Optional[float]) -> Optional[float]:
    return None if value is None else value / 1e3


def fault_figures(inst: TestInstance) -> FaultFigures:
    g = inst.get
    aborts = g("abort_per_survivor")
    return FaultFigures(
        str(g("fault", "fault")), number_or_none(g("false_losses")),
        str(g("false_loss_detail", "")), _thousandth(number_or_none(g("detection_ms"))),
        str(g("detection_mechanism", "?")), _text(g("expected_detection_stack")),
        attr_number(g("expected_detection_s")), str(g("expected_detection_basis", "")),
        None if g("expected_nccl_ib_s") is None else attr_number(g("expected_nccl_ib_s")),
        None if g("expected_verbs_qp_s") is None else attr_number(g("expected_verbs_qp_s")),
        None if aborts is None else str(aborts), number_or_none(g("abort_max_ms")),
        attr_number(g("abort_within_ms")), _text(g("reroute")), _text(g("return_to_baseline")),
        number_or_none(g("baseline_ms")), attr_number(g("recover_within_ms")),
        str(g("carrier_rank")), attr_number(g("victim_pre_fault_rps")),
        attr_number(g("victim_pre_fault_p99_ms")), str(g("fault_cycles", "")))


def fault_lines(f: FaultFigures) -> List[str]:
    """A fault drill: its measured detection next to what the stack in use (and NCCL
    and verbs on InfiniBand) would take on its own with the settings recorded, and the
    return to baseline of a fault that ended."""
    lines = []
    if f.false_losses:
        # First: with a live peer declared lost the figures below do not describe the fault.
        lines.append(f"false losses: {int(f.false_losses)} live peer(s) declared lost, so the drill "
                     f"cannot judge the fault: {f.false_loss_detail}")
    if f.detection_s is not None and f.detection_s >= 0:
        mine = (f"fabscope's drill detected in {_seconds(f.detection_s)}"
                f" ({f.detection_mechanism})")
    else:
        mine = "fabscope's drill did not detect it"
    if f.expected_stack:
        lines.append(f"{f.fault}: {mine}; "
                     + expected_phrase(f.expected_stack, f.expected_detection_s,
                                       f.expected_detection_basis))
        others = [expected_phrase(name, value) for value, name in
                  ((f.expected_nccl_ib_s, "NCCL over InfiniBand"),
                   (f.expected_verbs_qp_s, "a verbs RC queue pair")) if value is not None]
        if others:
            lines.append("  on InfiniBand: " + "; ".join(others))
    else:
        lines.append(f"{f.fault}: {mine}")
    if f.abort_per_survivor is not None:
        # A drill over NCCL: every survivor aborts its communicator; nothing is re-routed.
        slowest = f.abort_max_ms
        lines.append("communicator abort: "
                     + (f"slowest {format_number(slowest)} ms" if slowest is not None and slowest >= 0
                        else "none returned")
                     + f" (abort_within {format_number(f.abort_within_ms)} ms): {f.abort_per_survivor}")
        if f.reroute:
            lines.append(f"re-route: {f.reroute}")
    if f.return_to_baseline:
        worst = f.baseline_ms
        back = (f"worst {format_number(worst)} ms after the fault ended" if worst is not None
                and worst >= 0 else "missing")
        lines.append(f"return to baseline: {f.return_to_baseline} ({back}; recover_within "
                     f"{format_number(f.recover_within_ms)} ms; rank {f.carrier_rank} "
                     f"against the victim's pre-fault {format_number(f.victim_pre_fault_rps)} "
                     f"req/s, p99 {format_number(f.victim_pre_fault_p99_ms)} ms): "
                     f"{f.fault_cycles}")
    return lines


def _not_negative(value: Optional[float]) -> Optional[float]:
    return value if value is not None and value >= 0 else None


def fault_metrics(f: FaultFigures) -> List[KindMetric]:
    """Measured detection, what each stack would take (an infinite budget, never, has no
    sample), the slowest communicator abort and the return to baseline, in seconds."""
    out = [KindMetric(SECONDS, "detection", _not_negative(f.detection_s)),
           KindMetric(NO_UNIT, "false_losses", f.false_losses)]
    if f.expected_stack:
        out.append(KindMetric(SECONDS, "expected_detection", f.expected_detection_s,
                              (("stack", f.expected_stack),)))
    for value, stack in ((f.expected_nccl_ib_s, "NCCL over InfiniBand"),
                         (f.expected_verbs_qp_s, "a verbs RC queue pair")):
        out.append(KindMetric(SECONDS, "expected_detection", value, (("stack", stack),)))
    abort = _not_negative(f.abort_max_ms)
    out.append(KindMetric(SECONDS, "abort_slowest", None if abort is None else abort / 1e3))
    back = _not_negative(f.baseline_ms) if f.return_to_baseline else None
    out.append(KindMetric(SECONDS, "return_to_baseline", None if back is None else back / 1e3))
    return out


ANALYSES = (KindAnalysis(("fault",), compute=fault_figures, summary_lines=fault_lines,
                         metrics=fault_metrics,
                         drill_lines=fault_lines),)
