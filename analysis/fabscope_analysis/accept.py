"""`accept FILE --criteria C.yaml [--baseline B.h5] [--junit out.xml]`: pass/fail verdict.

Every (rule, matching test instance, site scope) is one check; a failed check names the
ranks, hosts or pairs responsible. Exit 0 when every check passes, 1 otherwise.

Site scopes (scopes.py): in a run whose ranks carry site labels, each instance is judged
once per scope (site=A, site=B, inter-site A<->B, a collective's group), each against the
rule's thresholds on its own samples only, so a WAN path never loosens or tightens a
site's verdict. A rule's ``match: {scope: ...}`` (glob patterns on the scope name) picks
scopes, e.g. strict limits for ``site=*`` and looser ones for ``inter-site *``. A run
without site labels has one unnamed scope, matched by rules without ``scope``.
"""

from __future__ import annotations

import fnmatch
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, TextIO, Tuple

import numpy as np
import pandas as pd

from .criteria import (BANDWIDTH_METRICS, LATENCY_METRICS, Bound, Criteria, CriteriaError,
                       Rule, load_criteria)
from .reader import FLAG_CONTROL_PAIR, FLAG_DATA_CHECK_FAILED, ResultFile, TestInstance
from .reference import REFERENCE_KIND, SKIPPED, reference_pairs, skipped_references_of
from .run_analysis import RunAnalysis, describe_instance, format_number, instance_key
from .scopes import Scope
from .stats import (figure_value, impact_factor, is_bandwidth, pair_values, with_derived,
                    worse_is_higher_times)

__all__ = ["load_criteria", "run_accept", "evaluate", "CheckResult"]

MAX_NAMED = 5  # responsible ranks/pairs named per failure


@dataclass
class CheckResult:
    rule: str
    subject: str
    messages: List[str] = field(default_factory=list)
    details: List[str] = field(default_factory=list)
    instance: Optional[int] = None     # the test instance checked (None: the whole run)
    scope: str = ""                    # its site scope name
    failed: List[str] = field(default_factory=list)  # criteria keys that failed (p99_us, ...)
    # Neither passed nor failed by itself: the instance was `skipped` (a reference tool not
    # installed; the reason), or the check needs a reference that was skipped ("cannot tell").
    skipped: str = ""
    cannot_tell: str = ""

    @property
    def passed(self) -> bool:
        return not self.messages

    @property
    def label(self) -> str:
        """What accept prints first: PASS, FAIL, SKIP or CANNOT TELL."""
        if self.messages:
            return "FAIL"
        return "CANNOT TELL" if self.cannot_tell else "SKIP" if self.skipped else "PASS"


# -- metric values ----------------------------------------------------------------------

def _stat_fn(stat: str) -> Optional[Callable[[str, np.ndarray, np.ndarray], float]]:
    """p50/p99/p999/mean/max/worst -> f(metric, times_ns, sample_bytes) in display units
    (stats.figure_value: the one definition every surface uses)."""
    if stat not in ("p50", "p99", "p999", "mean", "max", "worst"):
        return None
    return lambda metric, t, b: figure_value(metric, stat, t, b)


def _applicable(key: str, inst: TestInstance) -> bool:
    if inst.get("kind") == REFERENCE_KIND:
        return False  # an external tool measured it: no fabscope samples to judge
    if key in LATENCY_METRICS:
        return not is_bandwidth(inst.metric)
    if key in BANDWIDTH_METRICS:
        return is_bandwidth(inst.metric)
    return True


def _unit(key: str) -> str:
    if key.endswith("_us"):
        return " us"
    if key.endswith("_gbps"):
        return " GB/s"
    return ""


def _stat_of(key: str) -> str:
    """'p99_us' -> 'p99', 'impact_mean' -> 'mean'."""
    return key.split("_", 1)[1] if key.startswith("impact_") else key.rsplit("_", 1)[0]


def _group_values(samples: pd.DataFrame, metric: str, key: str, by) -> Dict[object, float]:
    """Per group (rank, or (rank, peer)) value of the metric `key`."""
    fn = _stat_fn(_stat_of(key))
    out = {}
    if fn is None or samples.empty:
        return out
    for group_key, group in samples.groupby(by, sort=True):
        times = worse_is_higher_times(group, metric)
        out[group_key] = fn(metric, times, group["bytes"].to_numpy(dtype=np.float64))
    return out


def _violates(value: float, bound: Bound) -> bool:
    if not np.isfinite(value):
        return True
    return (bound.min is not None and value < bound.min) or \
           (bound.max is not None and value > bound.max)


def _bound_text(bound: Bound, unit: str = "", ratio: bool = False) -> str:
    parts = []
    suffix = "x" if ratio else unit
    if bound.min is not None:
        parts.append(f">= {format_number(bound.min)}{suffix}")
    if bound.max is not None:
        parts.append(f"<= {format_number(bound.max)}{suffix}")
    return " and ".join(parts)


# -- matching ---------------------------------------------------------------------------

def _matches(rule: Rule, inst: TestInstance) -> bool:
    for key, wanted in rule.match.items():
        if key == "scope":
            continue  # per scope: _scope_matches
        if key == "bytes":
            b = float(inst.get("bytes", 0))
            if (wanted.min is not None and b < wanted.min) or \
               (wanted.max is not None and b > wanted.max):
                return False
            continue
        attr = "metric" if key == "metric" else key
        value = str(inst.get(attr, ""))
        ok = False
        for pattern in wanted:
            if key == "condition" and pattern == "congested":
                ok = ok or value != "quiet"
            else:
                ok = ok or fnmatch.fnmatchcase(value, pattern)
        if not ok:
            return False
    return True


def _scope_matches(rule: Rule, scope: Scope) -> bool:
    patterns = rule.match.get("scope")
    return patterns is None or any(fnmatch.fnmatchcase(scope.name, p) for p in patterns)


# -- evaluation -------------------------------------------------------------------------

class _Evaluator:
    def __init__(self, analysis: RunAnalysis, baseline: Optional[RunAnalysis]):
        self.a = analysis
        self.baseline = baseline
        self.baseline_index = {instance_key(i): i for i in baseline.instances} if baseline else {}
        # parallel pass index -> its serial retest
        self.retest_of = {int(i.get("retest_of", -1)): i for i in analysis.instances
                          if str(i.get("pass")) == "serial-retest"}

    def retest_pairs(self, retest: TestInstance):
        """A serial retest's pairs against its controls (measured alone the same way):
        (control median, number of control pairs, {(rank, peer): (value, rel)}), rel
        = performance relative to the controls (1 = as good, <1 = slower); None when
        the retest has no control pairs (files before issue 16)."""
        raw = retest.samples()
        raw = raw[raw["peer"] >= 0]
        control = (raw["flags"].astype("int64") & FLAG_CONTROL_PAIR) != 0
        if not control.any():
            return None
        s = with_derived(raw.reset_index(drop=True), retest.sample_divisor)
        control = control.to_numpy()
        controls = pair_values(s[control], retest.metric)
        retested = pair_values(s[~control], retest.metric)
        median = float(np.median(controls["median"]))
        bandwidth = is_bandwidth(retest.metric)
        rel = {(int(r.rank), int(r.peer)): (float(r.median), r.median / median if bandwidth
                                            else median / r.median)
               for r in retested.itertuples()}
        return median, len(controls), rel

    def rank(self, r) -> str:
        host = self.a.hosts.get(int(r))
        return f"rank {int(r)} ({host})" if host else f"rank {int(r)}"

    def pair(self, r, p) -> str:
        return f"{self.rank(r)} -> {self.rank(p)}"

    def _named(self, items: List[Tuple[str, float]], unit: str) -> str:
        shown = ", ".join(f"{who} {format_number(v)}{unit}" for who, v in items[:MAX_NAMED])
        if len(items) > MAX_NAMED:
            shown += f" and {len(items) - MAX_NAMED} more"
        return shown

    def _responsible(self, inst: TestInstance, scope: Scope, key: str, bound: Bound) -> str:
        """Ranks (and pairs, for pair patterns) whose own value breaks the bound."""
        s = self.a.samples(inst, scope)
        unit = _unit(key)
        higher_bad = bound.max is not None
        parts = []
        for label, by, namer in (("ranks", "rank", lambda k: self.rank(k)),
                                 ("pairs", ["rank", "peer"], lambda k: self.pair(*k))):
            if label == "pairs":
                s_pairs = s[s["peer"] >= 0]
                if s_pairs.empty or s_pairs.groupby("rank")["peer"].nunique().max() < 2:
                    continue  # one peer per rank: the rank list already names the pair
                values = _group_values(s_pairs, inst.metric, key, by)
            else:
                values = _group_values(s, inst.metric, key, by)
            bad = [(namer(k), v) for k, v in values.items() if _violates(v, bound)]
            bad.sort(key=lambda item: -item[1] if higher_bad else item[1])
            if bad:
                parts.append(f"{label} beyond the limit: {self._named(bad, unit)}")
        if not parts:
            values = _group_values(s, inst.metric, key, "rank")
            if values:
                worst = max(values.items(), key=lambda kv: kv[1]) if higher_bad else \
                    min(values.items(), key=lambda kv: kv[1])
                parts.append(f"no single rank breaks it (all ranks together do); worst "
                             f"{self.rank(worst[0])} {format_number(worst[1])}{unit}")
        return "; ".join(parts)

    def value(self, inst: TestInstance, scope: Scope, key: str) -> float:
        st = self.a.stats(inst, scope)
        if key == "samples":
            return float(st.n_samples)
        if key == "flagged_samples":
            s = self.a.samples(inst, scope)
            # a failed data check only: a phase, class or probe mark is not a failure
            return float(np.count_nonzero(s["flags"].to_numpy(dtype=np.int64) & FLAG_DATA_CHECK_FAILED)) \
                if len(s) else 0.0
        if key == "impact_mean":
            return self.a.impacts(inst, scope)[0]
        if key == "impact_p99":
            return self.a.impacts(inst, scope)[1]
        stat = key.rsplit("_", 1)[0]
        return st.value({"p999": "p99.9"}.get(stat, stat))

    def limits(self, rule: Rule, inst: TestInstance, scope: Scope, result: CheckResult):
        for key, bound in rule.limits.items():
            if not _applicable(key, inst):
                continue
            if key.startswith("impact_") and self.a.quiet_scope(inst, scope) is None:
                continue
            value = self.value(inst, scope, key)
            if key not in ("samples", "flagged_samples") and self.a.stats(inst, scope).n_samples == 0:
                result.failed.append(key)
                result.messages.append(f"{key}: no samples to evaluate (status "
                                       f"{inst.get('status')}: {inst.get('error') or '-'})")
                continue
            result.details.append(f"{key} = {format_number(value)}{_unit(key)}")
            if not _violates(value, bound):
                continue
            result.failed.append(key)
            msg = (f"{key} = {format_number(value)}{_unit(key)}, required "
                   f"{_bound_text(bound, _unit(key))}")
            if key in ("impact_mean", "impact_p99"):
                msg += "; " + self._impact_ranks(inst, scope, key)
            elif key == "flagged_samples":
                s = self.a.samples(inst, scope)
                failed = (s["flags"].astype("int64") & FLAG_DATA_CHECK_FAILED) != 0
                flagged = s[failed].groupby("rank").size().sort_values(ascending=False)
                msg += "; flagged on " + self._named(
                    [(self.rank(r), float(n)) for r, n in flagged.items()], " samples")
            elif key != "samples":
                msg += "; " + self._responsible(inst, scope, key, bound)
            result.messages.append(msg)

    def _impact_ranks(self, inst: TestInstance, scope: Scope, key: str) -> str:
        quiet = self.a.quiet_partner(inst)
        q_vals = _group_values(self.a.samples(quiet, self.a.quiet_scope(inst, scope)),
                               inst.metric, key, "rank")
        c_vals = _group_values(self.a.samples(inst, scope), inst.metric, key, "rank")
        per_rank = [(self.rank(r), impact_factor(inst.metric, q_vals[r], c_vals[r]))
                    for r in c_vals if r in q_vals]
        per_rank = [(w, v) for w, v in per_rank if np.isfinite(v)]
        per_rank.sort(key=lambda item: -item[1])
        return "most affected: " + (self._named(per_rank, "x") if per_rank else "-")

    def baseline_check(self, rule: Rule, inst: TestInstance, scope: Scope, result: CheckResult):
        if not rule.baseline:
            return
        base_inst = self.baseline_index.get(instance_key(inst))
        if base_inst is None:
            key = instance_key(inst)
            result.messages.append(f"baseline {self.baseline.result.path} has no instance with "
                                   f"case {key[0]!r}, condition {key[1]!r}, pass {key[2]!r}")
            return
        base_scope = next((b for b in self.baseline.scopes(base_inst) if b.name == scope.name),
                          None)
        if base_scope is None:
            result.messages.append(
                f"baseline {self.baseline.result.path} has no site scope {scope.name or '(none)'!r} "
                f"for case {instance_key(inst)[0]!r} (it has: "
                f"{', '.join(b.name or '(none)' for b in self.baseline.scopes(base_inst))}); "
                "a site's results are only compared with the same site's")
            return
        base = _Evaluator(self.baseline, None)
        for key, bound in rule.baseline.items():
            if not _applicable(key, inst):
                continue
            now, before = self.value(inst, scope, key), base.value(base_inst, base_scope, key)
            if not (np.isfinite(now) and np.isfinite(before)) or before == 0:
                result.messages.append(f"{key}: cannot compare with the baseline "
                                       f"({format_number(now)} vs {format_number(before)})")
                continue
            ratio = now / before
            result.details.append(f"{key} ratio to baseline = {ratio:.3f}")
            if not _violates(ratio, bound):
                continue
            result.failed.append(key)
            now_ranks = _group_values(self.a.samples(inst, scope), inst.metric, key, "rank")
            base_ranks = _group_values(self.baseline.samples(base_inst, base_scope), inst.metric,
                                       key, "rank")
            ratios = [(self.rank(r), now_ranks[r] / base_ranks[r]) for r in now_ranks
                      if r in base_ranks and base_ranks[r]]
            bad = [(w, v) for w, v in ratios if _violates(v, bound)]
            bad.sort(key=lambda item: -item[1] if bound.max is not None else item[1])
            who = (f"ranks beyond it: {self._named(bad, 'x')}" if bad
                   else "no single rank beyond it")
            result.messages.append(
                f"{key} = {format_number(now)}{_unit(key)} is {ratio:.3f}x the baseline "
                f"{format_number(before)}{_unit(key)}, required {_bound_text(bound, ratio=True)}"
                f"; {who}")

    def outliers(self, rule: Rule, inst: TestInstance, scope: Scope, result: CheckResult):
        s = self.a.samples(inst, scope)
        metric = inst.metric
        unit = " GB/s" if is_bandwidth(metric) else " us"
        fraction = rule.outliers.get("pair_min_fraction_of_median")
        judged = self.retest_pairs(inst) if fraction is not None and \
            str(inst.get("pass")) == "serial-retest" else None
        if judged is not None:
            # A retest judges its pairs against its control pairs, never against
            # itself: its own median is the suspects' (issue 16).
            median, n_controls, rel = judged
            result.details.append(f"control pairs' median {format_number(median)}{unit} over "
                                  f"{n_controls} control pairs measured alone")
            bad = sorted(((r, p, v, x) for (r, p), (v, x) in rel.items() if x < fraction),
                         key=lambda item: item[3])
            if bad:
                result.failed.append("pair_min_fraction_of_median")
            for rank, peer, value, x in bad[:MAX_NAMED]:
                result.messages.append(
                    f"pair {self.pair(rank, peer)}: {format_number(value)}{unit} alone "
                    f"against the control pairs' {format_number(median)}{unit}: "
                    f"{100 * x:.0f}% of their performance, required >= "
                    f"{100 * fraction:.0f}% (confirmed slow alone)")
            for (rank, peer), (value, x) in sorted(rel.items()):
                if x >= fraction:
                    result.details.append(f"pair {self.pair(rank, peer)}: {format_number(value)}"
                                          f"{unit} alone, {100 * x:.0f}% of the controls' "
                                          "performance: cleared")
            fraction = None  # judged
        retest = self.retest_of.get(inst.index) if fraction is not None else None
        cleared = {}
        if retest is not None:
            judged = self.retest_pairs(retest)
            if judged is not None:
                cleared = {k: v for k, v in judged[2].items() if v[1] >= fraction}
        if fraction is not None:
            pairs = pair_values(s, metric)
            if len(pairs) >= 2:
                median = float(np.median(pairs["median"]))
                result.details.append(f"median pair {format_number(median)}{unit} over "
                                      f"{len(pairs)} pairs")
                bad = []
                for row in pairs.itertuples():
                    # performance relative to the median pair: 1 = typical, <1 = slower
                    rel = row.median / median if is_bandwidth(metric) else median / row.median
                    if rel < fraction:
                        alone = cleared.get((int(row.rank), int(row.peer)))
                        if alone is not None:
                            # Slow among the others, fine alone: interference, not a bad pair.
                            result.details.append(
                                f"pair {self.pair(row.rank, row.peer)}: {100 * rel:.0f}% of the "
                                f"median pair here, but {100 * alone[1]:.0f}% of the control "
                                f"pairs alone in the serial retest {retest.index:04d}: "
                                "interference, not failed")
                            continue
                        bad.append((row.rank, row.peer, row.median, rel))
                bad.sort(key=lambda item: item[3])
                if bad:
                    result.failed.append("pair_min_fraction_of_median")
                for rank, peer, value, rel in bad[:MAX_NAMED]:
                    result.messages.append(
                        f"pair {self.pair(rank, peer)}: {format_number(value)}{unit} is "
                        f"{100 * rel:.0f}% of the median pair's performance "
                        f"({format_number(median)}{unit}), required >= {100 * fraction:.0f}%")
                if len(bad) > MAX_NAMED:
                    result.messages.append(f"... and {len(bad) - MAX_NAMED} more slow pairs")
        ratio = rule.outliers.get("rank_p99_max_ratio_to_median")
        if ratio is not None:
            tails = self.a.stats(inst, scope).rank_tails
            if len(tails) >= 2:
                median_time = float(np.median(tails["p99_time_ns"]))
                median_show = float(np.median(tails["p99"]))
                result.details.append(f"median rank p99 {format_number(median_show)}{unit}")
                bad = [(row.rank, row.p99, row.p99_time_ns / median_time)
                       for row in tails.itertuples()
                       if median_time > 0 and row.p99_time_ns > ratio * median_time]
                bad.sort(key=lambda item: -item[2])
                if bad:
                    result.failed.append("rank_p99_max_ratio_to_median")
                for rank, p99, times in bad[:MAX_NAMED]:
                    side = " (slow side)" if is_bandwidth(metric) else ""
                    result.messages.append(
                        f"{self.rank(rank)}: p99{side} {format_number(p99)}{unit} takes "
                        f"{times:.1f}x the median rank's p99 time (median rank p99 "
                        f"{format_number(median_show)}{unit}), required <= {ratio:g}x")
                if len(bad) > MAX_NAMED:
                    result.messages.append(f"... and {len(bad) - MAX_NAMED} more slow ranks")


def evaluate(result: ResultFile, criteria: Criteria,
             baseline: Optional[ResultFile] = None, diagnosis=None) -> List[CheckResult]:
    """Every check of the criteria on the file. ``diagnosis``: diagnose()'s result when
    the caller has it already (verdict.compute_verdict), so culprits come from one run."""
    if criteria.needs_baseline() and baseline is None:
        rule = next(r for r in criteria.rules if r.baseline)
        raise CriteriaError(criteria.path, rule.line,
                            f"rule {rule.name!r} compares with a baseline: pass --baseline FILE")
    analysis = RunAnalysis(result)
    evaluator = _Evaluator(analysis, RunAnalysis(baseline) if baseline is not None else None)
    checks: List[CheckResult] = []
    if criteria.require_complete:
        check = CheckResult("run complete", result.path)
        if not result.complete:
            check.messages.append(f"the run did not end normally (complete=0, exit_code="
                                  f"{result.attrs.get('exit_code')}); tests may be missing")
        checks.append(check)
    validity = result.validity()
    for row in validity.to_dict("records"):
        # What makes the numbers meaningless or doubtful fails the run unless the
        # criteria allow it (allow_validity).
        check = CheckResult("validity", f"{row['what']} on "
                            f"{'every host' if row['host'] in ('', '*') else row['host']}")
        text = (f"{row['what']}: {format_number(row['value'])} against a limit of "
                f"{format_number(row['limit'])}: {row['effect']}")
        if row["what"] in criteria.allow_validity:
            check.details.append(text + " (allowed: allow_validity)")
        else:
            check.failed.append("validity")
            check.messages.append(text + " (allow it with allow_validity in the criteria)")
        checks.append(check)
    for inst in analysis.instances:
        status = str(inst.get("status", ""))
        if status == SKIPPED and (criteria.allowed_status is None or
                                  SKIPPED not in criteria.allowed_status):
            # A tool that is not there measured nothing: listed, not failed by itself
            # (a rule that needs its figure says "cannot tell").
            checks.append(CheckResult("status", describe_instance(inst), instance=inst.index,
                                      skipped=str(inst.get("error") or "no reason given")))
        elif criteria.allowed_status is not None:
            check = CheckResult("status", describe_instance(inst), instance=inst.index)
            if status not in criteria.allowed_status:
                check.failed.append("status")
                check.messages.append(f"status {status} (allowed: "
                                      f"{', '.join(criteria.allowed_status)}): "
                                      f"{inst.get('error') or 'no error message'}")
            checks.append(check)
    references = reference_pairs(result) if any(
        r.reference_ratio_max is not None for r in criteria.rules) else []
    for rule in criteria.rules:
        matched = [i for i in analysis.instances if _matches(rule, i)]
        if not matched:
            check = CheckResult(rule.name, "(no matching test instance)")
            if not rule.optional:
                check.messages.append(f"no test instance matches this rule (criteria line "
                                      f"{rule.line}); mark it 'optional: true' if that is fine")
            checks.append(check)
            continue
        evaluated = 0
        scoped = 0
        skipped = [i for i in matched if i.get("status") == SKIPPED]
        for inst in skipped:
            if rule.reference_ratio_max is not None and inst.get("kind") == REFERENCE_KIND:
                checks.append(CheckResult(rule.name, describe_instance(inst), instance=inst.index,
                                          cannot_tell=f"reference_ratio_max: cannot tell, the "
                                          f"reference was skipped: {inst.get('error') or '-'}"))
                evaluated += 1
        matched = [i for i in matched if i.get("status") != SKIPPED]
        if not matched:
            continue  # only skipped instances: listed once by the status check
        for inst in matched:
            # Thresholds apply per site scope: each scope is its own check.
            for scope in analysis.scopes(inst):
                if not _scope_matches(rule, scope):
                    continue
                scoped += 1
                check = CheckResult(rule.name, describe_instance(inst) +
                                    analysis.scope_suffix(scope), instance=inst.index,
                                    scope=scope.name)
                evaluator.limits(rule, inst, scope, check)
                evaluator.baseline_check(rule, inst, scope, check)
                if rule.outliers:
                    evaluator.outliers(rule, inst, scope, check)
                if rule.reference_ratio_max is not None:
                    _reference_check(rule, inst, references, check, result)
                # a check with neither a value nor a failure did not apply (e.g. p99_us on a
                # bandwidth test, impact on a quiet one, outliers with a single rank)
                if check.details or check.messages or check.cannot_tell:
                    checks.append(check)
                    evaluated += 1
        if not scoped:
            check = CheckResult(rule.name, "(no matching site scope)")
            if not rule.optional:
                check.messages.append(
                    f"{len(matched)} test instance(s) match but none has a site scope matching "
                    f"{', '.join(rule.match.get('scope', []))} (criteria line {rule.line}); "
                    "mark it 'optional: true' if that is fine")
            checks.append(check)
            continue
        if not evaluated and not rule.optional:
            checks.append(CheckResult(rule.name, "(no applicable test instance)", [
                f"the rule matched {len(matched)} instance(s) but none of its checks applies "
                f"to them (criteria line {rule.line}): check the metric names against the "
                f"test kinds, or mark it 'optional: true'"]))
    if criteria.diagnose != "off":
        from .diagnose import acceptance_checks  # culprits named by host (docs/analysis.md)
        checks.extend(acceptance_checks(result, baseline, CheckResult,
                                        strict=criteria.diagnose == "strict",
                                        diagnosis=diagnosis))
    return checks


def _reference_check(rule: Rule, inst: TestInstance, pairs, check: CheckResult,
                     result: ResultFile) -> None:
    """reference_ratio_max: every reference figure paired with this fabscope instance (or, for
    a reference instance, with any fabscope instance) within the factor, either way. With no
    pair but a skipped reference that would have paired: cannot tell."""
    mine = [p for p in pairs if inst.index in (p.fabscope.index, p.reference.index)]
    if not mine and inst.get("kind") != REFERENCE_KIND:
        gone = skipped_references_of(result, inst)
        if gone:
            check.cannot_tell = "reference_ratio_max: cannot tell, " + "; ".join(
                f"its reference (test {r.index:04d} skipped: {r.get('error') or '-'})"
                for r in gone)
    for pair in mine:
        text = pair.line()
        if not np.isfinite(pair.disagreement):
            check.failed.append("reference_ratio_max")
            check.messages.append(f"reference_ratio_max: no ratio to judge: {text}")
        elif pair.disagreement > rule.reference_ratio_max:
            check.failed.append("reference_ratio_max")
            check.messages.append(f"reference_ratio_max: {text}; they differ by a factor "
                                  f"{format_number(pair.disagreement)}, allowed "
                                  f"{format_number(rule.reference_ratio_max)}")
        else:
            check.details.append(f"reference ratio {format_number(pair.ratio)} "
                                 f"(test {pair.reference.index:04d})")


# Characters XML 1.0 does not allow at all (escaping cannot carry them): control
# characters but tab, newline and carriage return, and the non-characters.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_text(text: str) -> str:
    """Text from a result file made fit for XML: what XML cannot hold shown as \\xNN."""
    return _XML_INVALID.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def write_junit(checks: List[CheckResult], path: str, suite_name: str) -> None:
    """JUnit XML; ElementTree escapes markup, _xml_text what XML cannot carry."""
    failures = sum(1 for c in checks if not c.passed)
    skips = sum(1 for c in checks if c.passed and (c.skipped or c.cannot_tell))
    suites = ET.Element("testsuites", tests=str(len(checks)), failures=str(failures))
    suite = ET.SubElement(suites, "testsuite", name=_xml_text(suite_name), tests=str(len(checks)),
                          failures=str(failures), errors="0", skipped=str(skips))
    for check in checks:
        case = ET.SubElement(suite, "testcase", classname=_xml_text(f"fabscope.accept.{check.rule}"),
                             name=_xml_text(check.subject))
        if not check.passed:
            failure = ET.SubElement(case, "failure", message=_xml_text(check.messages[0][:500]),
                                    type="criteria")
            failure.text = _xml_text("\n".join(check.messages))
        elif check.skipped or check.cannot_tell:
            ET.SubElement(case, "skipped", message=_xml_text((check.cannot_tell or check.skipped)[:500]))
        if check.details:
            out = ET.SubElement(case, "system-out")
            out.text = _xml_text("\n".join(check.details))
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)


def run_accept(result: ResultFile, criteria=None, baseline: Optional[ResultFile] = None,
               junit_path: Optional[str] = None, stream: Optional[TextIO] = None) -> bool:
    """Print every check of the criteria in force and the verdict; True when it passes.

    ``criteria``: a Criteria, a path, or None for the criteria in force
    (verdict.criteria_in_force). The closing line is verdict.Verdict.line(): the same
    line `verdict`, `summary` and the report show.
    """
    from .verdict import compute_verdict
    verdict = compute_verdict(result, criteria, baseline=baseline)
    for check in verdict.checks:
        print(f"{check.label}  {check.rule}: {check.subject}", file=stream)
        for msg in check.messages or [m for m in (check.cannot_tell, check.skipped) if m][:1]:
            print(f"      {msg}", file=stream)
    for reason in verdict.extra_reasons():
        print(f"{'FAIL' if reason.failing else 'NOTE'}  {reason.text}", file=stream)
    print(f"\naccept: {verdict.passed_count()} of {len(verdict.checks)} checks passed"
          f" ({verdict.criteria.path} on {result.path}) -> {'PASS' if verdict.passed else 'FAIL'}",
          file=stream)
    print(verdict.line(), file=stream)
    if junit_path:
        write_junit(verdict.checks, junit_path, f"fabscope accept {result.name}")
    return verdict.passed
