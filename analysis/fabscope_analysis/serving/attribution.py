"""What a component to fix costs, and what a FAIL is worth on shared CPUs.

- **Cost.** A component the diagnosis names (a host, a NIC, a link) costs a failing check
  when its ranks are among those the check's serving class ran on (the TP all-reduce's
  ranks for an ITL check, the KV push's prefill and decode ranks for a TTFT check, the
  failing classes' ranks for the congestion rule). The `cost:` line states that check's
  figure as a share of its SLO target, next to the share the fabric may take.
- **Shared CPUs.** When the run's validity findings say ranks shared CPUs
  (`oversubscribed`, `busy_host`), every time includes the kernel scheduler's slices: a slow
  figure may be the CPUs', not the fabric's. A FAIL then stands only where a component the
  diagnosis names lies on the failing check's ranks; any other FAIL becomes CANNOT TELL,
  saying why (the per-node check names its own node: the scheduler does not slow one node
  in both roles; the per-group check its own group, against the others measured in the same
  run). Without such findings nothing changes.
"""

from __future__ import annotations

from typing import List, Optional, Set

import numpy as np

from ..diagnosis import validity as V
from .checks import CANNOT_TELL, FAIL, Check, worst_status
from .fit import FitVerdict

CLUSTER_CHECK = "cluster"
from .groups import GROUPS_CHECK
from .measured import CLASS_TITLES, Measured
from .nodes import NODES_CHECK
from .slo import format_ms


def check_classes(check: Check, verdict: FitVerdict, measured: Measured) -> List[str]:
    """The serving classes a check's figure is made of."""
    if check.name.startswith("itl_"):
        return list(measured.itl_classes)
    if check.name.startswith("ttft_"):
        return ["kv", "api"] + list(measured.prefill_classes)
    return sorted({r.cls for r in verdict.cif if r.status == FAIL})


def check_ranks(check: Check, verdict: FitVerdict, measured: Measured) -> Set[int]:
    ranks: Set[int] = set()
    for cls in check_classes(check, verdict, measured):
        series = measured.classes.get(cls)
        if series is not None:
            ranks |= series.members
    return ranks


def _share_text(check: Check, verdict: FitVerdict) -> str:
    f = check.figures
    if "share_of_target" not in f:      # the congestion rule: its own words
        return check.text
    kind = check.name.split("_")[0]
    return (f"{check.name} FAIL: {f['point_ms']:.4g} ms ({check.name.split('_')[1]}, "
            f"{check.condition}) = {100 * f['share_of_target']:.3g} % of the "
            f"{format_ms(f['target_ms'])} {kind.upper()} target (the fabric may take "
            f"{100 * verdict.slo.share(kind):g} %)")


def culprit_words(culprit) -> str:
    """'host fh4 (receive)', 'nic fh4:mlx5_1 (send)', 'link fh0 -> fh4', 'leaf 2': the
    component once, the direction where it is one."""
    subject = culprit.subject()
    who = subject if subject.split(" ")[0] in ("leaf", "host", "link", "uplinks", "spine", "local") \
        else f"{culprit.component} {subject}"
    return who if culprit.direction == "link" else f"{who} ({culprit.direction})"


def cluster_check(culprits, hosts: int, measured: Optional[Measured] = None) -> Check:
    """A component the diagnosis names anywhere fails the deployment: serving places requests
    on every node, not only on the ranks that measured its operations, so the requests put
    on a named host meet it: the share the rotated KV push measured crossing it where it
    rotated over that host, else about its share of the hosts."""
    named = sorted({c.host for c in culprits})
    share = 100.0 * len(named) / max(hosts, 1)
    how = f"about {share:.3g} % of them ({len(named)} of {hosts} hosts)"
    crossing = _kv_share(named, measured)
    if crossing is not None:
        how = (f"{100 * crossing[0]:.3g} % of them (the KV push, rotated over every node, "
               f"sent {crossing[1]} of its {crossing[2]} requests through "
               f"{'it' if len(named) == 1 else 'them'})")
    subjects = "; ".join(culprit_words(c) for c in culprits)
    return Check(CLUSTER_CHECK, FAIL,
                 f"the whole cluster: the diagnosis names {subjects}: requests are placed on every "
                 f"node, so {how} meet it, whatever the serving operations measured on other "
                 "ranks showed: FAIL",
                 figures={"hosts_named": len(named), "hosts": hosts,
                          "request_share": crossing[0] if crossing else share / 100.0})


def _kv_share(hosts: List[str], measured: Optional[Measured]):
    """(share, crossing, total) of the rotated KV push's quiet requests with an end on one
    of `hosts`, or None when the KV push did not rotate over them."""
    kv = measured.classes.get("kv") if measured is not None else None
    if kv is None or not kv.hosts:
        return None
    condition = "quiet" if "quiet" in kv.hosts else sorted(kv.hosts)[0]
    prefill, decode = kv.hosts[condition]
    if len(set(prefill) | set(decode)) < 3 or not set(hosts) & (set(prefill) | set(decode)):
        return None
    on = np.isin(prefill, hosts) | np.isin(decode, hosts)
    return float(on.mean()), int(on.sum()), len(on)


def costs(verdict: FitVerdict, measured: Measured, culprits) -> List[str]:
    """One line per named component and failing check whose ranks it lies on."""
    lines = []
    for culprit in culprits:
        for check in verdict.checks:
            if check.status != FAIL:
                continue
            on = sorted(set(culprit.ranks) & check_ranks(check, verdict, measured))
            if not on:
                continue
            classes = ", ".join(CLASS_TITLES.get(c, c) for c in
                                check_classes(check, verdict, measured) if c in measured.classes)
            lines.append(f"{culprit.subject()} ({culprit.direction}) carries the {classes} of "
                         f"rank{'s' if len(on) > 1 else ''} {','.join(map(str, on))}: "
                         f"{_share_text(check, verdict)}")
    return lines


def shared_cpu_findings(result) -> List[str]:
    """The run's validity findings that put the scheduler into every time."""
    found = {(what, "every host" if host in ("", "*") else host)
             for host, what, _ in V.rows(result) if what in V.SHARED_CPU_VALIDITY}
    return [f"{what} on {where}" for what, where in sorted(found)]


def hold_unexplained_fails(verdict: FitVerdict, measured: Measured, culprits,
                           findings: List[str]) -> None:
    """On shared CPUs, a FAIL no named component explains becomes CANNOT TELL."""
    if not findings:
        return
    named: Set[int] = set()
    for culprit in culprits:
        named |= set(culprit.ranks)
    for check in verdict.checks:
        if check.status != FAIL or check.name in (CLUSTER_CHECK, NODES_CHECK, GROUPS_CHECK) \
                or named & check_ranks(check, verdict, measured):
            continue
        check.status = CANNOT_TELL
        check.text = (check.text.replace(": FAIL", ": CANNOT TELL", 1) +
                      f" [held: the CPUs were shared ({'; '.join(findings)}) and no component "
                      "the diagnosis names lies on its ranks: the scheduler may explain it; "
                      "run on a quiet machine]")
    verdict.status = worst_status(c.status for c in verdict.checks)
