"""PASS / FAIL / CANNOT TELL: can this fabric serve a deployment at its SLO?

Method (docs/serving-fit.md has it for admins):

- Per generated token the fabric adds one decode step's communication over this fabric,
  as the placement (placement.py) says: the TP all-reduces (one per layer for attention,
  one per dense layer for the MLP) when the TP group crosses the fabric, one MoE dispatch +
  combine round per MoE layer when the EP group does, one after another; what runs over
  NVLink is not the fabric's. Its p50/p99 are those of sums drawn from the measured per-operation
  sequences (impact.compose_step), per neighbour condition; checked against
  itl_pNN x itl_share.
- Per request the fabric adds the KV transfer of the prompt (queueing + transfer), where
  an api test ran what the front end's network adds to the first byte, and, given a
  prefill chunk, the prefill's communication: ceil(prompt / chunk) chunks of the same
  fabric operations at the chunk's tokens (MoE: DeepEP's normal round; not hidden
  behind compute: an upper bound); checked against ttft_pNN x ttft_share.
- Where the KV push rotated its roles over the nodes (kvpush `role_rotation: ring`), each
  node as prefill and as decode (nodes.py): a node slow in both roles FAILs, named, with
  the share of requests that cross it.
- Where the TP all-reduce or the MoE round rotated over the groups (roles.groups), each
  group's own decode steps against the others' (groups.py): a group that misses the ITL
  budget more often than its pNN allows and stands out from the other groups FAILs, named
  by its hosts, with the share of decode steps it serves.
- Each serving class's congestion impact factor (cif.py) is checked against cif_p99.
- Every figure carries a 90 % interval (resample.py); PASS or FAIL only when the whole
  interval is on one side of the limit. A figure that was not measured is named as
  missing and its check CANNOT TELL; nothing is guessed.

The verdict is FAIL when a check fails, else CANNOT TELL when one cannot tell, else PASS.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from . import resample as R
from .checks import CANNOT_TELL, ORDER, PASS, Check, worst_status
from .cif import CifRow, cif_check, cif_rows, gpcnet_rows
from .measured import CLASS_TITLES, PREFILL_CLASSES, Measured
from .placement import PREFILL
from .groups import groups_check
from .nodes import nodes_check
from .paths import paths_of
from ..run_analysis import format_number
from .slo import Slo, format_ms

@dataclass
class FitVerdict:
    deployment: str
    slo: Slo
    status: str = CANNOT_TELL
    checks: List[Check] = field(default_factory=list)
    cif: List[CifRow] = field(default_factory=list)
    missing: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    to_fix: List[str] = field(default_factory=list)
    costs: List[str] = field(default_factory=list)      # what each component to fix costs
    limiters: List[str] = field(default_factory=list)   # the KV line-rate headline and limiter
    placement: List[str] = field(default_factory=list)  # which groups cross this fabric
    paths: str = ""   # the data path the judged classes were measured over (paths.py)

    def line(self) -> str:
        worst = [c for c in self.checks if c.status == self.status and c.status != PASS]
        why = f": {'; '.join(sorted({c.name for c in worst}))}" if worst else ""
        placed = f" [placement: {'; '.join(self.placement)}]" if self.placement else ""
        placed += f" [paths: {self.paths}]" if self.paths else ""
        return f"fit {self.deployment} at {self.slo.describe()}: {self.status}{why}{placed}"


def _quantile_of(key: str) -> float:
    return {"p50": 50.0, "p99": 99.0}[key.split("_")[1]]


def _ms(ns: float) -> str:
    return format_number(ns / 1e6)


def _condition_check(key: str, slo: Slo, condition: str, point: float, low: float,
                     high: float, what: str) -> Check:
    target, budget = slo.targets_ms[key], slo.fabric_budget_ms(key)
    status = R.judge(low / 1e6, high / 1e6, budget)
    stat, budget_name = key.split("_")[1], key.split("_")[0].upper()
    text = (f"{what} adds {_ms(point)} ms ({stat}, {condition}) = "
            f"{format_number(100 * point / 1e6 / target)} % of the {format_ms(target)} "
            f"{budget_name} target (the fabric may take {100 * slo.share(key.split('_')[0]):g} % "
            f"= {format_number(budget)} ms; 90 % interval {_ms(low)}-{_ms(high)} ms): {status}")
    return Check(key, status, text, condition,
                 {"point_ms": point / 1e6, "low_ms": low / 1e6, "high_ms": high / 1e6,
                  "target_ms": target, "fabric_budget_ms": budget,
                  "share_of_target": point / 1e6 / target})


def _bound_unseen(check: Check, key: str, counts: List[Tuple[int, int]], unit: str) -> Check:
    """A PASS the measured operations cannot carry is CANNOT TELL: a resampled step (or
    request) never holds an event none of its measured operations showed, and such an
    event can still come at up to 3 / n per operation (resample.unseen_step_share).
    counts: (operations measured, operations per step or request) of each part."""
    q = _quantile_of(key)
    share = R.unseen_step_share(counts)
    check.figures["unseen_share_bound"] = share
    if check.status != PASS or share <= 1.0 - q / 100.0:
        return check
    per = sum(c for _, c in counts)
    fewest = min(n for n, c in counts if c > 0)
    check.status = CANNOT_TELL
    check.text = (check.text[:check.text.rindex(": PASS")] + ": CANNOT TELL"
                  + check.text[check.text.rindex(": PASS") + len(": PASS"):]
                  + f" [the p{q:g} of a {unit} of {per} operation{'s' if per > 1 else ''} rests on "
                  f"{fewest} measured: an event none of them showed could still come in up to "
                  f"{format_number(100 * share)} % of {unit}s (95 % bound, rule of three); "
                  f"{R.operations_to_tell(per, q)} of each would tell]")
    return check


def _combine(key: str, per_condition: List[Check], missing: List[str], what: str) -> Check:
    """One check from its conditions: the worst condition's verdict and text."""
    if not per_condition:
        return Check(key, CANNOT_TELL, f"{what}: CANNOT TELL ({'; '.join(missing)})",
                     missing=missing)
    worst = max(per_condition, key=lambda c: (ORDER[c.status], c.figures.get("point_ms", 0)))
    status = worst_status(c.status for c in per_condition)
    if status != worst.status:
        worst = next(c for c in per_condition if c.status == status)
    others = [f"{c.condition} {format_number(c.figures['point_ms'])} ms {c.status}"
              for c in per_condition
              if c is not worst]
    text = worst.text + (f" [other conditions: {', '.join(others)}]" if others else "")
    if missing and status == PASS:
        text += f" [not measured: {'; '.join(missing)}]"
    return Check(key, status, text, worst.condition, dict(worst.figures,
                 conditions={c.condition: c.figures for c in per_condition}), missing)


def itl_checks(keys: List[str], slo: Slo, measured: Measured) -> List[Check]:
    """One check per ITL target (itl_p50, itl_p99), every condition composed once."""
    if not measured.itl_classes and measured.placement is not None:
        where = "; ".join(measured.placement.statements())
        return [Check(key, PASS, f"no operation of a decode step crosses this fabric ({where}): "
                                 "it adds nothing per generated token: PASS",
                      figures={"point_ms": 0.0, "low_ms": 0.0, "high_ms": 0.0,
                               "target_ms": slo.targets_ms[key],
                               "fabric_budget_ms": slo.fabric_budget_ms(key)})
                for key in keys]
    needed = [measured.classes[c] for c in measured.itl_classes if c in measured.classes]
    prefill_titles = tuple(CLASS_TITLES[c] for c in PREFILL_CLASSES)
    missing = [m for c in measured.itl_classes if c not in measured.classes
               for m in ([m for m in measured.missing if m.startswith(CLASS_TITLES[c])
                          and not m.startswith(prefill_titles)]
                         or [f"{CLASS_TITLES[c]} not measured at this deployment's size"])]
    if missing or not needed:
        return [_combine(key, [], missing or ["no per-token communication measured"],
                         "per-token communication") for key in keys]
    conditions = sorted(set().union(*(c.by_condition for c in needed)),
                        key=lambda c: (c != "quiet", c))
    per_key: Dict[str, List[Check]] = {key: [] for key in keys}
    absent = []
    what = " + ".join(f"{c.per_step} x {CLASS_TITLES[c.cls]}" for c in needed)
    for condition in conditions:
        lacking = [CLASS_TITLES[c.cls] for c in needed if condition not in c.by_condition]
        short = [CLASS_TITLES[c.cls] for c in needed
                 if condition in c.by_condition and len(c.by_condition[condition]) < R.MIN_COMPOSED]
        if lacking or short:
            absent.append(f"{condition}: " + "; ".join(
                [f"{w} not measured" for w in lacking] +
                [f"{w} has fewer than {R.MIN_COMPOSED} operations" for w in short]))
            continue
        parts = [(c.by_condition[condition], c.per_step) for c in needed]
        figures = R.composed_quantiles(parts, [_quantile_of(k) for k in keys])
        for key in keys:
            point, low, high = figures[_quantile_of(key)]
            per_key[key].append(_bound_unseen(
                _condition_check(key, slo, condition, point, low, high,
                                 f"the fabric ({what}) per generated token"),
                key, [(len(t), c) for t, c in parts], "step"))
    checks = [_combine(key, per_key[key], absent, "per-token communication") for key in keys]
    for check in checks:
        if absent and check.status == PASS:
            check.status = CANNOT_TELL
            check.text = check.text.replace(": PASS", ": CANNOT TELL", 1)
    return checks


def _prefill_parts(measured: Measured, condition: str, prompt_tokens: int, chunk: int):
    """(parts, what, why not) of the prefill's communication for one request: ceil(prompt /
    chunk) chunks, each the chunk's fabric operations (measured.prefill_classes, counted by
    the placement). Empty parts and the reason when a class is not measured under it."""
    if not measured.prefill_classes:
        return [], "", ""
    chunks = -(-prompt_tokens // chunk)
    series = [measured.classes.get(c) for c in measured.prefill_classes]
    lacking = [CLASS_TITLES[c] for c, s in zip(measured.prefill_classes, series)
               if s is None or condition not in s.by_condition
               or len(s.by_condition[condition]) < R.MIN_COMPOSED]
    if lacking:
        return [], "", (f"{condition}: the prefill's {' and '.join(lacking)} at {chunk} tokens "
                        f"not measured (or fewer than {R.MIN_COMPOSED} operations)")
    parts = [(s.by_condition[condition], s.per_step * chunks) for s in series]
    what = (f" + {chunks} prefill chunk{'s' if chunks > 1 else ''} of {chunk} tokens ("
            + " + ".join(f"{s.per_step} x {CLASS_TITLES[s.cls]}" for s in series) + " each)")
    return parts, what, ""


def ttft_check(key: str, slo: Slo, measured: Measured, prompt_tokens: int,
               prefill_chunk: Optional[int] = None) -> Check:
    q = _quantile_of(key)
    kv, api = measured.classes.get("kv"), measured.classes.get("api")
    if not measured.kv_on_fabric:
        return _ttft_without_kv(key, slo, measured, prompt_tokens, prefill_chunk)
    if kv is None:
        missing = [m for m in measured.missing if m.startswith("KV")] or ["no kvpush test"]
        return _combine(key, [], missing, f"KV transfer of a {prompt_tokens}-token prompt")
    checks, absent = [], []
    for condition in kv.conditions():
        seqs = [kv.by_condition[condition]]
        what = f"KV transfer of a {prompt_tokens}-token prompt ({kv.series})"
        if api is not None and condition in api.by_condition:
            seqs.append(api.by_condition[condition])
            what += " + the front end's first byte"
        elif api is not None:
            absent.append(f"{condition}: front end not measured under it (not counted)")
        parts, prefill_what, why_not = _prefill_parts(measured, condition, prompt_tokens,
                                                      prefill_chunk or 1)
        what += prefill_what
        if why_not:
            absent.append(why_not)
        fewest = min(len(s) for s in seqs)
        if fewest < R.min_values(q):
            absent.append(f"{condition}: {fewest} requests measured, a p{q:g} needs at least "
                          f"{R.min_values(q)}")
            continue
        point, low, high = R.request_quantile(seqs, parts, q)
        checks.append(_bound_unseen(_condition_check(key, slo, condition, point, low, high, what),
                                    key, _request_counts(seqs, parts), "request"))
    check = _combine(key, checks, absent, "KV transfer")
    # a PASS without a part the request needs (too few requests, the prefill's
    # communication at the chunk given) cannot tell: the part could be what fails
    if any("requests measured" in a or "the prefill's" in a for a in absent) \
            and check.status == PASS:
        check.status = CANNOT_TELL
        check.text = check.text.replace(": PASS", ": CANNOT TELL", 1)
    return check


def _request_counts(seqs, parts) -> List[Tuple[int, int]]:
    """(measured, per request) of a request's parts: one value of each sequence, `count`
    operations of each composed part."""
    return [(len(s), 1) for s in seqs] + [(len(t), c) for t, c in parts]


def _unsized_prefill(measured: Measured, prefill_chunk: Optional[int]) -> str:
    """Why a request's prefill communication is not counted although the placement puts it
    on this fabric (no chunk size given), or '' (a chunk given, or nothing of the prefill
    crosses: how many operations cross does not depend on the chunk's size)."""
    place = measured.placement
    if prefill_chunk or place is None:
        return ""
    crossing = [CLASS_TITLES[c] for c in ("tp", "moe", "pp") if place.fabric_count(c, PREFILL)]
    if not crossing:
        return ""
    return (f"the prefill's {' and '.join(crossing)} cross{'es' if len(crossing) == 1 else ''} "
            f"this fabric: no --prefill-chunk given to size {'it' if len(crossing) == 1 else 'them'}")


def _ttft_without_kv(key: str, slo: Slo, measured: Measured, prompt_tokens: int,
                     prefill_chunk: Optional[int]) -> Check:
    """TTFT where the placement keeps the KV off this fabric (colocated, or a prefill and a
    decode instance inside one NVLink domain): the prefill's fabric communication and the
    front end, where measured; 0 and PASS when neither is part of a request; CANNOT TELL
    (at best) when the prefill crosses this fabric unsized (_unsized_prefill)."""
    q = _quantile_of(key)
    api = measured.classes.get("api")
    prefill = [measured.classes[c] for c in measured.prefill_classes if c in measured.classes]
    conditions = sorted(set(api.by_condition if api else {}).union(
        *(c.by_condition for c in prefill)), key=lambda c: (c != "quiet", c))
    where = next((n for n in measured.notes if n.startswith("KV transfer prefill")), "")
    unsized = _unsized_prefill(measured, prefill_chunk)
    if api is None and not measured.prefill_classes and not unsized:
        return Check(key, PASS, f"no part of a request crosses this fabric ({where}): it adds "
                                "nothing to the first token: PASS",
                     figures={"point_ms": 0.0, "low_ms": 0.0, "high_ms": 0.0,
                              "target_ms": slo.targets_ms[key],
                              "fabric_budget_ms": slo.fabric_budget_ms(key)})
    checks, absent = [], [unsized] if unsized else []
    for condition in conditions or ["quiet"]:
        seqs = [api.by_condition[condition]] if api and condition in api.by_condition else []
        parts, prefill_what, why_not = _prefill_parts(measured, condition, prompt_tokens,
                                                      prefill_chunk or 1)
        if why_not:
            absent.append(why_not)
        if not seqs and not parts:
            continue
        if seqs and len(seqs[0]) < R.min_values(q):
            absent.append(f"{condition}: {len(seqs[0])} requests measured, a p{q:g} needs at "
                          f"least {R.min_values(q)}")
            continue
        what = ("the front end's first byte" if seqs else "") + prefill_what
        point, low, high = R.request_quantile(seqs, parts, q)
        checks.append(_bound_unseen(_condition_check(key, slo, condition, point, low, high,
                                                     f"a request's communication ({where}): "
                                                     + what.lstrip(" +")),
                                    key, _request_counts(seqs, parts), "request"))
    check = _combine(key, checks, absent if checks else
                     (absent or ["nothing of a request measured"]), "a request's communication")
    if absent and check.status == PASS:
        check.status = CANNOT_TELL
        check.text = check.text.replace(": PASS", ": CANNOT TELL", 1)
    return check


def compose_verdict(measured: Measured, slo: Slo, deployment) -> FitVerdict:
    verdict = FitVerdict(deployment.describe(), slo, missing=list(measured.missing),
                         notes=list(measured.notes),
                         placement=measured.placement.statements() if measured.placement else [],
                         paths=paths_of(measured).statement())
    itl_keys = [key for key in ("itl_p50", "itl_p99") if key in slo.targets_ms]
    if itl_keys:
        verdict.checks.extend(itl_checks(itl_keys, slo, measured))
        per_group = groups_check(itl_keys[-1], slo, measured)   # the highest percentile given
        if per_group is not None:
            verdict.checks.append(per_group)
    for key in ("ttft_p50", "ttft_p99"):
        if key in slo.targets_ms:
            verdict.checks.append(ttft_check(key, slo, measured, deployment.prompt_tokens,
                                             getattr(deployment, "prefill_chunk", None)))
    ttft_keys = [key for key in ("ttft_p99", "ttft_p50") if key in slo.targets_ms]
    per_node = nodes_check(ttft_keys[0], slo, measured) if ttft_keys and measured.kv_on_fabric \
        else None
    if per_node is not None:
        verdict.checks.append(per_node)
    if slo.cif_p99 is None:
        verdict.cif = cif_rows(measured, float("inf"))
        for row in verdict.cif:
            row.status = "not judged"
        verdict.notes.append("the congestion rule is off (cif_p99=off): the congestion impact "
                             "factors are shown, not judged")
    else:
        verdict.cif = cif_rows(measured, slo.cif_p99)
        verdict.checks.append(cif_check(verdict.cif, measured, slo.cif_p99))
    verdict.cif.extend(gpcnet_rows(measured))
    verdict.status = worst_status(c.status for c in verdict.checks)
    return verdict


def json_of(verdict: FitVerdict) -> dict:
    return {"verdict": verdict.status, "line": verdict.line(), "deployment": verdict.deployment,
            "slo": verdict.slo.to_json(),
            "checks": [{"name": c.name, "status": c.status, "text": c.text,
                        "condition": c.condition, "figures": c.figures, "missing": c.missing}
                       for c in verdict.checks],
            "congestion_impact": [r.to_json() for r in verdict.cif],
            "placement": verdict.placement, "paths": verdict.paths,
            "to_fix": verdict.to_fix, "costs": verdict.costs, "limiters": verdict.limiters,
            "missing": verdict.missing, "notes": verdict.notes,
            "method": {"interval": "outer circular block bootstrap, 90 % two-sided, "
                                   f"{R.REPLICATES} replicates",
                       "composition": "impact.compose_step, "
                                      f"{R.POINT_RESAMPLES} sums, seed {R.SEED}"}}
