"""`accept FILE --criteria C.yaml [--baseline B.h5 ...] [--junit out.xml]`: pass/fail verdict.

Every (rule, matching test instance, site scope) is one check, PASS, FAIL or CANNOT TELL
(accept_limits: a figure's interval against its limit; accept_outliers: many pairs or
ranks with false-discovery control); a failed check names the ranks, hosts or pairs
responsible. Checks are plain data (accept_result.CheckResult); accept_text prints them
and writes JUnit, verdict.py turns them into the run's one verdict.

Site scopes (scopes.py): in a run whose ranks carry site labels, each instance is judged
once per scope (site=A, site=B, inter-site A<->B, a collective's group), each against the
rule's thresholds on its own samples only, so a WAN path never loosens or tightens a
site's verdict. A rule's ``match: {scope: ...}`` (glob patterns on the scope name) picks
scopes. A run without site labels has one unnamed scope, matched by rules without ``scope``.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
import pandas as pd

from .accept_limits import Figures, check_baseline, check_limits, check_tolerance
from .accept_outliers import (PAIR_KEY, RANK_KEY, check_pairs, check_ranks, check_retest_pairs,
                              pair_log_medians)
from .accept_result import MAX_NAMED, CheckResult
from .criteria import DEFAULT_FDR, Criteria, CriteriaError, Rule, load_criteria
from .diagnose import acceptance_checks, diagnose
from .reader import ResultFile, TestInstance
from .kinds import analysis_of
from .kinds.reference import SKIPPED, pair_line, reference_pairs, skipped_references_of
from .run_analysis import RunAnalysis, describe_instance, format_number, instance_key
from .scopes import Scope

__all__ = ["load_criteria", "evaluate", "CheckResult", "MAX_NAMED"]

Baselines = Union[None, ResultFile, Sequence[ResultFile]]


def baseline_list(baseline: Baselines) -> List[ResultFile]:
    if baseline is None:
        return []
    return [baseline] if isinstance(baseline, ResultFile) else list(baseline)


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
        value = str(inst.get(key, ""))
        if not any((value != "quiet") if key == "condition" and pattern == "congested"
                   else fnmatch.fnmatchcase(value, pattern) for pattern in wanted):
            return False
    return True


def _scope_matches(rule: Rule, scope: Scope) -> bool:
    patterns = rule.match.get("scope")
    return patterns is None or any(fnmatch.fnmatchcase(scope.name, p) for p in patterns)


# -- evaluation -------------------------------------------------------------------------

@dataclass
class _Baseline:
    figures: Figures
    index: Dict[tuple, TestInstance]


class _Evaluator:
    """What every rule's check needs: the run's figures, the baselines', the serial
    retest of each parallel pass, and how ranks and pairs are named."""

    def __init__(self, analysis: RunAnalysis, baselines: List[RunAnalysis]):
        self.a = analysis
        self.figures = Figures(analysis)
        self.baselines = [_Baseline(Figures(b), {instance_key(i): i for i in b.instances})
                          for b in baselines]
        # parallel pass index -> its serial retest
        self.retest_of = {int(i.get("retest_of", -1)): i for i in analysis.instances
                          if str(i.get("pass")) == "serial-retest"}
        self._pairs: Dict[tuple, pd.DataFrame] = {}

    def rank(self, r) -> str:
        host = self.a.hosts.get(int(r))
        return f"rank {int(r)} ({host})" if host else f"rank {int(r)}"

    def pair(self, r, p) -> str:
        return f"{self.rank(r)} -> {self.rank(p)}"

    def pairs(self, inst: TestInstance, scope: Optional[Scope] = None) -> pd.DataFrame:
        """pair_log_medians of an instance's scope (every sample without one), computed
        once: the pair rule and the serial retest's pool both need them."""
        whole = scope is None or len(self.a.scopes(inst)) == 1
        key = (inst.index, None if whole else scope.name)
        if key not in self._pairs:
            self._pairs[key] = pair_log_medians(self.a.samples(inst, None if whole else scope),
                                                inst.metric)
        return self._pairs[key]

    def parallel_pairs(self, index: Optional[int]) -> pd.DataFrame:
        """pair_log_medians of the parallel pass `index` (a serial retest's pool)."""
        inst = next((i for i in self.a.instances if i.index == index), None)
        if inst is None:
            return pd.DataFrame(columns=["rank", "peer", "samples", "log_time", "se"])
        return self.pairs(inst)

    def outliers(self, rule: Rule, inst: TestInstance, scope: Scope, result: CheckResult):
        s = self.a.samples(inst, scope)
        q = rule.outliers.get("false_discovery_rate", DEFAULT_FDR)
        fraction = rule.outliers.get(PAIR_KEY)
        if fraction is not None:
            judged = str(inst.get("pass")) == "serial-retest" and \
                check_retest_pairs(self, inst, fraction, result)
            if not judged:
                check_pairs(self, inst, self.pairs(inst, scope), fraction, q, result)
        ratio = rule.outliers.get(RANK_KEY)
        if ratio is not None:
            check_ranks(self, inst, s, ratio, q, result)


def _run_checks(result: ResultFile, criteria: Criteria, analysis: RunAnalysis) -> List[CheckResult]:
    """The run as a whole: complete, validity findings, every instance's status."""
    checks: List[CheckResult] = []
    if criteria.require_complete:
        check = CheckResult("run complete", result.path)
        if not result.complete:
            check.messages.append(f"the run did not end normally (complete=0, exit_code="
                                  f"{result.attrs.get('exit_code')}); tests may be missing")
        checks.append(check)
    for row in result.validity().to_dict("records"):
        # What makes the numbers doubtful (another job on the CPUs, ranks sharing
        # them) leaves the run unable to judge the fabric either way: cannot tell,
        # unless the criteria allow the finding (allow_validity).
        check = CheckResult("validity", f"{row['what']} on "
                            f"{'every host' if row['host'] in ('', '*') else row['host']}")
        text = (f"{row['what']}: {format_number(row['value'])} against a limit of "
                f"{format_number(row['limit'])}: {row['effect']}")
        if row["what"] in criteria.allow_validity:
            check.details.append(text + " (allowed: allow_validity)")
        else:
            check.add_cannot_tell(text + ": the numbers are doubtful, so the run cannot judge the "
                                  "fabric (allow it with allow_validity in the criteria)")
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
    return checks


def _scope_check(evaluator: _Evaluator, rule: Rule, inst: TestInstance, scope: Scope,
                 references, result: ResultFile) -> CheckResult:
    analysis = evaluator.a
    check = CheckResult(rule.name, describe_instance(inst) + analysis.scope_suffix(scope),
                        instance=inst.index, scope=scope.name)
    check_limits(evaluator, rule, inst, scope, check)
    check_baseline(evaluator, rule, inst, scope, check)
    check_tolerance(evaluator, rule, inst, scope, check)
    if rule.outliers:
        evaluator.outliers(rule, inst, scope, check)
    if rule.reference_ratio_max is not None:
        _reference_check(rule, inst, references, check, result)
    return check


def _rule_checks(evaluator: _Evaluator, rule: Rule, references, result: ResultFile
                 ) -> List[CheckResult]:
    """Every check of one rule: one per matching instance and site scope."""
    analysis = evaluator.a
    matched = [i for i in analysis.instances if _matches(rule, i)]
    if not matched:
        check = CheckResult(rule.name, "(no matching test instance)")
        if not rule.optional:
            check.messages.append(f"no test instance matches this rule (criteria line "
                                  f"{rule.line}); mark it 'optional: true' if that is fine")
        return [check]
    checks: List[CheckResult] = []
    for inst in [i for i in matched if i.get("status") == SKIPPED]:
        if rule.reference_ratio_max is not None and analysis_of(inst.get("kind")).reference_tool:
            checks.append(CheckResult(rule.name, describe_instance(inst), instance=inst.index,
                                      cannot_tell=f"reference_ratio_max: cannot tell, the "
                                      f"reference was skipped: {inst.get('error') or '-'}"))
    measured = [i for i in matched if i.get("status") != SKIPPED]
    if not measured:
        return checks  # only skipped instances: listed once by the status check
    scoped = 0
    for inst in measured:
        # Thresholds apply per site scope: each scope is its own check.
        for scope in [s for s in analysis.scopes(inst) if _scope_matches(rule, s)]:
            scoped += 1
            check = _scope_check(evaluator, rule, inst, scope, references, result)
            # a check with neither a value nor a failure did not apply (e.g. p99_us on a
            # bandwidth test, impact on a quiet one, outliers with a single rank)
            if check.details or check.messages or check.cannot_tell:
                checks.append(check)
    return checks + _rule_coverage(rule, measured, scoped, len(checks))


def _rule_coverage(rule: Rule, measured: List[TestInstance], scoped: int, evaluated: int
                   ) -> List[CheckResult]:
    """A rule that matched instances but no scope, or none of whose checks applied."""
    if not scoped:
        check = CheckResult(rule.name, "(no matching site scope)")
        if not rule.optional:
            check.messages.append(
                f"{len(measured)} test instance(s) match but none has a site scope matching "
                f"{', '.join(rule.match.get('scope', []))} (criteria line {rule.line}); "
                "mark it 'optional: true' if that is fine")
        return [check]
    if not evaluated and not rule.optional:
        return [CheckResult(rule.name, "(no applicable test instance)", [
            f"the rule matched {len(measured)} instance(s) but none of its checks applies "
            f"to them (criteria line {rule.line}): check the metric names against the "
            f"test kinds, or mark it 'optional: true'"])]
    return []


def evaluate(result: ResultFile, criteria: Criteria, baseline: Baselines = None,
             diagnosis=None) -> List[CheckResult]:
    """Every check of the criteria on the file. ``baseline``: one known-good run or
    several; ``diagnosis``: diagnose()'s result when the caller has it already
    (verdict.compute_verdict), so culprits come from one run of diagnose."""
    baselines = baseline_list(baseline)
    needed = criteria.baseline_runs_needed()
    if len(baselines) < needed:
        rule = next(r for r in criteria.rules if (r.tolerance if needed == 2 else r.baseline))
        what = ("a tolerance limit from known-good runs: pass --baseline with 2 or more files"
                if needed == 2 else "a baseline: pass --baseline FILE")
        raise CriteriaError(criteria.path, rule.line, f"rule {rule.name!r} needs {what}")
    analysis = RunAnalysis(result)
    evaluator = _Evaluator(analysis, [RunAnalysis(b) for b in baselines])
    checks = _run_checks(result, criteria, analysis)
    references = reference_pairs(result) if any(
        r.reference_ratio_max is not None for r in criteria.rules) else []
    for rule in criteria.rules:
        checks.extend(_rule_checks(evaluator, rule, references, result))
    if criteria.diagnose != "off":
        # culprits named by host (docs/analysis.md): diagnose runs once per verdict
        d = diagnosis if diagnosis is not None else diagnose(
            result, baseline=baselines[0] if baselines else None)
        checks.extend(acceptance_checks(result, None, CheckResult,
                                        strict=criteria.diagnose == "strict", diagnosis=d))
    return checks


def _reference_check(rule: Rule, inst: TestInstance, pairs, check: CheckResult,
                     result: ResultFile) -> None:
    """reference_ratio_max: every reference figure paired with this fabscope instance (or, for
    a reference instance, with any fabscope instance) within the factor, either way. With no
    pair but a skipped reference that would have paired: cannot tell."""
    mine = [p for p in pairs if inst.index in (p.fabscope_index, p.reference_index)]
    if not mine and not analysis_of(inst.get("kind")).reference_tool:
        gone = skipped_references_of(result, inst)
        if gone:
            check.cannot_tell = "reference_ratio_max: cannot tell, " + "; ".join(
                f"its reference (test {r.index:04d} skipped: {r.get('error') or '-'})"
                for r in gone)
    for pair in mine:
        text = pair_line(pair)
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
                                 f"(test {pair.reference_index:04d})")
