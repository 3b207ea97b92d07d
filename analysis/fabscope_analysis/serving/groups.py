"""The whole cluster, group by group: which TP or EP group would make decode steps miss ITL.

A collective test whose roles rotate over groups (`roles: {canaries: N, groups: all}`:
`plan` rotates the TP all-reduce and the MoE round at the decode sizes) measures every group
of N consecutive ranks in turn, one instance each (attributes `group`, `groups`; its ranks
in `canaries`). measured.py pools the groups for the ITL check and keeps each group's own
sequence. Per rotated class and condition, each group's measured operations are cut into
the decode steps they make: `per_step` consecutive operations each, as measured (not
resampled), and a step is over when it takes longer than the fabric's ITL budget
(itl_pNN x itl_share) less the p50 of what the step's other classes add (pooled over their
groups). A group is slow when both

- the 95 % lower (Clopper-Pearson) bound of its steps' share over is above what the pNN
  allows (1 - NN %): the steps it serves miss the target more often than the pNN allows;
- its share stands out from the other groups' steps (one-sided Fisher exact test at
  5 % / groups: a false-positive budget of 5 % over the groups, Bonferroni), so that load
  that slows every group now and then (shared CPUs) is not pinned on one group.

A slow group FAILs the check, named by its hosts, with the share of decode steps it serves
(1 / groups of the rotation: a deployment places its replicas on every group alike); a host
common to every slow group (and in no group that is not slow) is named as the likely cause.
A group with fewer operations than one step, and the groups the budget left unmeasured,
are said not judged. Fewer than 2 groups judged, or no ITL target: no check (None).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

from .checks import FAIL, PASS, Check
from .measured import CLASS_TITLES, ClassSeries, GroupSeries, Measured
from .nodes import CONFIDENCE, lower_bound, stands_out
from .slo import Slo, format_ms

GROUPS_CHECK = "groups"


def measured_steps(times: np.ndarray, per_step: int) -> np.ndarray:
    """The decode steps a group's operations make: sums of `per_step` consecutive ones, in
    measured order, non-overlapping (a partial last step is left out)."""
    steps = len(times) // max(per_step, 1)
    if steps == 0:
        return np.array([], dtype=np.float64)
    return np.asarray(times[:steps * per_step], dtype=np.float64).reshape(steps, per_step).sum(axis=1)


@dataclass
class GroupSteps:
    group: GroupSeries
    steps: int
    over: int
    rest_steps: int = 0
    rest_over: int = 0

    def slow(self, allowed: float, alpha: float) -> bool:
        return lower_bound(self.over, self.steps) > allowed and stands_out(
            self.over, self.steps, self.rest_over, self.rest_steps, alpha)

    def words(self) -> str:
        return (f"group {self.group.index} ({', '.join(self.group.hosts)}): {self.over} of "
                f"{self.steps} steps over, the other groups {self.rest_over} of {self.rest_steps}")


def group_steps(groups: List[GroupSeries], per_step: int, limit_ns: float) -> List[GroupSteps]:
    """Per group with at least one whole step: its steps over `limit_ns`, and the others'."""
    out = []
    for g in groups:
        steps = measured_steps(g.times, per_step)
        if len(steps):
            out.append(GroupSteps(g, len(steps), int((steps > limit_ns).sum())))
    for row in out:
        row.rest_steps = sum(o.steps for o in out if o is not row)
        row.rest_over = sum(o.over for o in out if o is not row)
    return out


def _others_p50_ns(measured: Measured, cls: str, condition: str) -> float:
    """What the step's other classes add at their p50 (count x median per operation)."""
    total = 0.0
    for other in measured.itl_classes:
        series = measured.classes.get(other)
        if other == cls or series is None or condition not in series.by_condition:
            continue
        total += series.per_step * float(np.median(series.by_condition[condition]))
    return total


@dataclass
class SlowGroup:
    cls: str
    condition: str
    row: GroupSteps
    groups: int   # groups of the rotation: the row's group serves 1 / groups of the steps


def _judge(key: str, slo: Slo, measured: Measured):
    """(slow groups, judged (class, condition, groups judged), not judged lines)."""
    allowed = 1.0 - float(key.split("_p")[1]) / 100.0
    budget_ns = slo.fabric_budget_ms(key) * 1e6
    slow: List[SlowGroup] = []
    judged, not_judged = [], []
    for cls in measured.itl_classes:
        series: Optional[ClassSeries] = measured.classes.get(cls)
        if series is None or not series.groups:
            continue
        for condition in series.conditions():
            groups = series.groups.get(condition, [])
            limit_ns = budget_ns - _others_p50_ns(measured, cls, condition)
            rows = group_steps(groups, series.per_step, limit_ns)
            short = [g.index for g in groups if len(g.times) < series.per_step]
            if short:
                not_judged.append(f"{CLASS_TITLES[cls]} [{condition}] group(s) "
                                  f"{', '.join(map(str, short))}: fewer operations than one step "
                                  f"({series.per_step})")
            if len(rows) < 2:
                continue
            judged.append((cls, condition, len(rows)))
            alpha = (1.0 - CONFIDENCE) / len(rows)
            slow += [SlowGroup(cls, condition, r, max(series.group_count, len(rows)))
                     for r in rows if r.slow(allowed, alpha)]
        measured_groups = {g.index for gs in series.groups.values() for g in gs}
        left = sorted(set(range(series.group_count)) - measured_groups)
        if left:
            not_judged.append(f"{CLASS_TITLES[cls]}: group(s) {', '.join(map(str, left))} of "
                              f"{series.group_count} not measured (the budget left them out): "
                              "fit cannot tell for them")
    return slow, judged, not_judged


def common_host(slow: List[SlowGroup], measured: Measured) -> Optional[str]:
    """The one host every slow group holds and no judged group that is not slow does."""
    if not slow:
        return None
    common = set.intersection(*(set(s.row.group.hosts) for s in slow))
    slow_keys = {(s.cls, s.condition, s.row.group.index) for s in slow}
    for cls in {s.cls for s in slow}:
        for condition, groups in measured.classes[cls].groups.items():
            for g in groups:
                if (cls, condition, g.index) not in slow_keys and any(
                        s.cls == cls and s.condition == condition for s in slow):
                    common -= set(g.hosts)
    return next(iter(common)) if len(common) == 1 else None


def groups_check(key: str, slo: Slo, measured: Measured) -> Optional[Check]:
    """The per-group check of ITL target `key` (itl_p50, itl_p99), or None when no rotated
    collective judged 2 groups or more."""
    if key not in slo.targets_ms:
        return None
    slow, judged, not_judged = _judge(key, slo, measured)
    if not judged:
        return None
    q = float(key.split("_p")[1])
    rule = (f"a group's measured decode steps (its own consecutive operations) over the "
            f"fabric's {format_ms(slo.fabric_budget_ms(key))} of the "
            f"{format_ms(slo.targets_ms[key])} ITL p{q:g} target (less the step's other "
            f"classes at their p50) more often than a p{q:g} allows ({100 - q:g} %; 95 % lower "
            "bound) and than the other groups' steps (Fisher, 5 % over the groups)")
    scope = "; ".join(f"{CLASS_TITLES[c]} [{cond}]: {n} groups" for c, cond, n in judged)
    left = f" [not judged: {'; '.join(not_judged)}]" if not_judged else ""
    if not slow:
        return Check(GROUPS_CHECK, PASS,
                     f"every TP / EP group measured ({scope}): none stands out by {rule}: "
                     f"PASS{left}", judged[0][1],
                     {"groups_named": [], "hosts_named": [], "judged": len(judged)},
                     missing=not_judged)
    host = common_host(slow, measured)
    parts = [f"{CLASS_TITLES[s.cls]} {s.row.words()} [{s.condition}]; it serves "
             f"{100 / s.groups:.3g} % of decode steps (1 of {s.groups} groups)" for s in slow]
    hosts = sorted({h for s in slow for h in s.row.group.hosts})
    cause = (f": the host common to them, {host}, is the likely cause" if host and len(
        {(s.cls, s.row.group.index) for s in slow}) > 1 else "")
    them = "it" if len({s.row.group.index for s in slow}) == 1 else "them"
    shares: Dict[str, float] = {}
    for s in slow:
        for h in s.row.group.hosts:
            shares[h] = max(shares.get(h, 0.0), 1.0 / s.groups)
    return Check(GROUPS_CHECK, FAIL,
                 f"every TP / EP group measured ({scope}), by {rule}: {'; '.join(parts)}"
                 f"{cause}: decode steps placed on {them} miss the target: FAIL{left}",
                 slow[0].condition,
                 {"groups_named": sorted({f'{s.cls}/{s.row.group.index}' for s in slow}),
                  "hosts_named": [host] if host else hosts, "group_hosts": hosts,
                  "common_host": host, "shares": shares},
                 missing=not_judged)


def named_group_hosts(check: Optional[Check]) -> List[str]:
    return list(check.figures.get("hosts_named", [])) if check is not None else []
