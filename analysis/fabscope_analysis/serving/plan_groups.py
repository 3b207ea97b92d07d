"""The rotation of a collective's measuring group over every TP / EP group of the cluster
(roles.groups), as plan builds it: how many whole groups the cluster holds, whether the
SLO judges them (an ITL target), and the test's rounds and notes (docs/serving-fit.md)."""
from __future__ import annotations

import math
from typing import List

# plan.py imports this module, so its types (PlanRequest, Knobs, Cluster) are named in the
# docstrings, not imported: a cluster has `ranks`; a request `cluster` and `slo_text`; the
# knobs `max_groups`.


def group_count(canaries: int, cluster) -> int:
    """Whole groups of `canaries` consecutive ranks the cluster holds (roles.groups: all)."""
    return max(1, cluster.ranks // max(1, canaries))


# Rounds of a group rotation (the test's repeats): every group once a round, so that load
# that comes and goes falls on the groups of a round alike; 8 let fit's per-group check
# single out one of 2 to 8 groups (groups.py: slowest in 8 of 8 rounds for 2 groups, 6 of 8
# for 4, 5 of 8 for 8, at 5 % over the groups)
GROUP_ROUNDS = 8


def judges_itl(req) -> bool:
    """Whether the SLO has an ITL target: what fit's per-group check judges the groups by."""
    return any(item.split("=", 1)[0].strip().startswith("itl_p")
               for item in req.slo_text.split(",") if "=" in item)


def rotate_groups(test: dict, what: str, label: str, req, knobs, notes: List[str]) -> None:
    """Where the measured group (packed canaries) is a part of the ranks and the SLO has an
    ITL target (what fit's per-group check judges by), its decode sizes rotate over every
    whole group of the cluster in rank order, or the first
    knobs.max_groups of them (the budget's), each group with the test's full iterations;
    the notes say how many and which groups are left out. The prefill-chunk sizes stay on
    the first group (_by_phase)."""
    canaries, cluster = test["roles"]["canaries"], req.cluster
    groups = group_count(canaries, cluster)
    if groups < 2:
        return
    if not judges_itl(req):
        notes.append(f"the {what} is measured on the first of the {groups} {label} groups, not "
                     "rotated: the SLO has no ITL target, by which fit judges each group")
        return
    kept = min(groups, knobs.max_groups) if knobs.max_groups else groups
    if kept < 2:   # one group left: measured as before the rotation, the others named
        notes.append(f"the budget leaves {groups - 1} {label} group(s) of the {what} "
                     f"unmeasured: ranks {canaries}-{groups * canaries - 1} (groups "
                     f"1..{groups - 1}); the first measures alone, fit cannot tell for them")
        return
    test["roles"]["groups"] = "all" if kept == groups else kept
    per_group = test["iterations"]
    test["repeats"] = GROUP_ROUNDS
    test["iterations"] = max(1, math.ceil(per_group / GROUP_ROUNDS))
    notes.append(f"the {what} rotates over {'all ' if kept == groups else ''}{kept} of the "
                 f"{groups} {label} groups ({canaries} ranks each, in rank order), one group "
                 f"measuring at a time while the other ranks make each neighbour condition, "
                 f"in {GROUP_ROUNDS} rounds (repeats) of {test['iterations']} operations: "
                 f"{GROUP_ROUNDS * test['iterations']} per group at each decode size and "
                 "condition; fit judges every group against the others round by round (its "
                 "hosts named where one stands out)")
    if kept < groups:
        notes.append(f"the budget leaves {groups - kept} {label} group(s) of the {what} "
                     f"unmeasured: ranks {kept * canaries}-{groups * canaries - 1} (groups "
                     f"{kept}..{groups - 1}): fit cannot tell for them")
    if knobs.prefill_chunks:
        notes.append(f"the {what} at the prefill chunks (TTFT) is measured on the first group "
                     "only")
