"""The whole cluster, group by group: which TP or EP group would make decode steps miss ITL.

A collective test whose roles rotate over groups (`roles: {canaries: N, groups: all}`;
`plan` rotates the TP all-reduce and the MoE round at the decode sizes) measures every group
of N consecutive ranks in turn, one instance each (attributes `group`, `groups`; its ranks
in `canaries`), and with `repeats: R` does so in R rounds (every group once a round, the
rounds in turn over the run). measured.py pools the groups for the ITL check and keeps each
group's own sequence, round by round. Per rotated class and condition, a group is slow
when both

- **it alone would miss the target**: its decode step composed from its own operations
  (resample.composed_quantiles, as the ITL check composes) has a pNN whose whole 90 %
  interval is above the fabric's ITL budget (itl_pNN x itl_share) less what the step's
  other classes add at their p50, and
- **it stands out from the other groups, round by round**: in each round the groups were
  measured one after another within seconds, so load that comes and goes (other work on
  shared CPUs) falls on the groups of a round alike, and a group is the slowest of its
  round (largest mean time per operation) by chance in 1 / G of rounds. The group is the
  slowest in more rounds than that allows: one-sided binomial test against 1 / G at 5 % / G
  (a false-positive budget of 5 % over the G groups, Bonferroni). With too few rounds to
  reach that (G = 4 needs 4 rounds; the plan runs 8), no group can be named, and the check
  says so.

A slow group FAILs the check, named by its hosts, with the share of decode steps it serves
(1 / groups of the rotation: a deployment places its replicas on every group alike); a host
common to every slow group and in no group that is not slow is named as the likely cause.
The groups the budget left unmeasured are said not judged. Fewer than 2 groups measured,
or no ITL target: no check (None).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np
from scipy.stats import binom

from .checks import CANNOT_TELL, FAIL, PASS, Check
from .resample import composed_quantiles
from .measured import CLASS_TITLES, ClassSeries, GroupSeries, Measured
from .nodes import CONFIDENCE
from .slo import Slo, format_ms

GROUPS_CHECK = "groups"


@dataclass
class GroupRow:
    group: GroupSeries
    composed_ns: float      # its composed step's pNN (its own operations)
    low_ns: float           # the lower end of that figure's 90 % interval
    slowest: int            # rounds in which it had the largest mean time per operation
    rounds: int             # rounds every judged group was measured in
    p_value: float

    def words(self) -> str:
        return (f"group {self.group.index} ({', '.join(self.group.hosts)}): its step "
                f"{format_ms(self.composed_ns / 1e6)} alone (90 % interval from "
                f"{format_ms(self.low_ns / 1e6)}), the slowest group in "
                f"{self.slowest} of {self.rounds} rounds (p = {self.p_value:.2g})")


def slowest_counts(groups: List[GroupSeries]) -> Tuple[List[int], int]:
    """Per group, the rounds in which its mean time per operation was the largest of the
    groups (ties: none counts), over the rounds every group was measured in; and that count
    of rounds."""
    common = sorted(set.intersection(*(set(g.rounds) for g in groups))) if groups else []
    counts = [0] * len(groups)
    for r in common:
        means = np.array([float(np.mean(g.rounds[r])) for g in groups])
        top = np.flatnonzero(means == means.max())
        if len(top) == 1:
            counts[int(top[0])] += 1
    return counts, len(common)


def chance_of(slowest: int, rounds: int, groups: int) -> float:
    """P(a group is the slowest in `slowest` rounds or more of `rounds` by chance, 1 / groups
    a round)."""
    return float(binom.sf(slowest - 1, rounds, 1.0 / groups))


def judge_groups(groups: List[GroupSeries], per_step: int, q: float, limit_ns: float,
                 alpha_family: float = 1.0 - CONFIDENCE) -> Tuple[List[GroupRow], str]:
    """(rows of the slow groups, why none can be named or ""). A group is slow when its
    composed step's pNN is over limit_ns and it was the slowest of its round in more rounds
    than chance allows at alpha_family / groups."""
    counts, rounds = slowest_counts(groups)
    alpha = alpha_family / len(groups)
    if chance_of(rounds, rounds, len(groups)) >= alpha:
        return [], (f"{rounds} round(s) of {len(groups)} groups cannot single one out at "
                    f"{100 * alpha_family:g} % over the groups (the plan's repeats give 8)")
    slow = []
    for g, k in zip(groups, counts):
        p = chance_of(k, rounds, len(groups))
        if p >= alpha:
            continue
        composed, low, _ = composed_quantiles([(g.times, per_step)], [q])[q]
        if low > limit_ns:   # its whole 90 % interval beyond, as any check's FAIL
            slow.append(GroupRow(g, composed, low, k, rounds, p))
    return slow, ""


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
    row: GroupRow
    groups: int   # groups of the rotation: the row's group serves 1 / groups of the steps


def _judge(key: str, slo: Slo, measured: Measured):
    """(slow groups, judged (class, condition, groups judged, rounds), not judged lines)."""
    q = float(key.split("_p")[1])
    budget_ns = slo.fabric_budget_ms(key) * 1e6
    slow: List[SlowGroup] = []
    judged, not_judged = [], []
    for cls in measured.itl_classes:
        series: Optional[ClassSeries] = measured.classes.get(cls)
        if series is None or not series.groups:
            continue
        for condition in series.conditions():
            groups = series.groups.get(condition, [])
            if len(groups) < 2:
                continue
            limit_ns = budget_ns - _others_p50_ns(measured, cls, condition)
            rows, why = judge_groups(groups, series.per_step, q, limit_ns)
            if why:
                not_judged.append(f"{CLASS_TITLES[cls]} [{condition}]: {why}")
                continue
            judged.append((cls, condition, len(groups), slowest_counts(groups)[1]))
            slow += [SlowGroup(cls, condition, r, max(series.group_count, len(groups)))
                     for r in rows]
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
    collective measured 2 groups or more."""
    if key not in slo.targets_ms:
        return None
    slow, judged, not_judged = _judge(key, slo, measured)
    if not judged and not not_judged:
        return None
    q = float(key.split("_p")[1])
    rule = (f"a group's decode step composed from its own operations (its 90 % interval) over "
            f"the fabric's "
            f"{format_ms(slo.fabric_budget_ms(key))} of the {format_ms(slo.targets_ms[key])} "
            f"ITL p{q:g} target (less the step's other classes at their p50), and the slowest "
            "group of its round in more rounds than chance allows (binomial, 5 % over the "
            "groups)")
    scope = "; ".join(f"{CLASS_TITLES[c]} [{cond}]: {n} groups in {r} rounds"
                      for c, cond, n, r in judged) or "no class judged"
    left = f" [not judged: {'; '.join(not_judged)}]" if not_judged else ""
    if not judged:
        return Check(GROUPS_CHECK, CANNOT_TELL,
                     f"every TP / EP group measured: no group can be judged: CANNOT TELL{left}",
                     figures={"groups_named": [], "hosts_named": []}, missing=not_judged)
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
