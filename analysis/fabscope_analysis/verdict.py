"""The run's one verdict: the criteria in force, evaluated once, shown the same everywhere.

`summary`, the top of `report`, `accept` and `verdict FILE [--brief]` (which the launch
wrappers, the demo and the run's own closing line print) all call compute_verdict(), so
they cannot disagree. The verdict is a list of reasons: every failed check of the
criteria; when the criteria say ``diagnose: true`` (or strict), diagnose runs once
here and each culprit is a reason of kind ``culprit`` (its accept check is the same
failure), so no surface shows a second, separate diagnose verdict.

Which criteria are in force, first that applies:
1. ``--criteria FILE`` given to the command;
2. the scenario's own top-level ``criteria: FILE`` (the scenario text is in the result
   file; a relative path is looked up next to the scenario file, then in the shipped
   criteria directory);
3. the shipped default suited to the run: ``local.yaml`` for a run on one host (a local
   run is not judged by rack limits), ``rack-acceptance.yaml`` for several hosts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple, Union

import yaml

from .accept import Baselines, CheckResult, baseline_list, evaluate
from .accept_result import outcome_counts
from .criteria import Criteria, load_criteria
from .diagnose import diagnose
from .errors import CriteriaError
from .reader import ResultFile

# The shipped criteria: next to the package in the source tree (analysis/criteria), or
# inside it when installed (cmake --install puts them in fabscope_analysis/criteria).
_HERE = os.path.dirname(os.path.abspath(__file__))
CRITERIA_DIR = next((d for d in (os.path.join(os.path.dirname(_HERE), "criteria"),
                                 os.path.join(_HERE, "criteria")) if os.path.isdir(d)),
                    os.path.join(os.path.dirname(_HERE), "criteria"))
LOCAL_DEFAULT = "local.yaml"
RACK_DEFAULT = "rack-acceptance.yaml"

# Criteria keys -> the summary/report column that shows the failing figure.
COLUMN_OF_KEY = {
    "p50_us": "p50", "p50_gbps": "p50", "p99_us": "p99", "p99_gbps": "p99",
    "p999_us": "p99.9", "p999_gbps": "p99.9", "max_us": "worst", "worst_gbps": "worst",
    "mean_us": "mean", "mean_gbps": "mean", "impact_mean": "impact mean",
    "impact_p99": "impact p99", "samples": "samples", "flagged_samples": "status",
    "status": "status", "rank_p99_max_ratio_to_median": "stragglers",
    "pair_min_fraction_of_median": "test",
}


@dataclass
class Reason:
    """One reason of the verdict. kind: 'check' (a failed criteria check), 'culprit'
    (diagnose), 'note'. A failing reason makes the verdict FAIL."""
    kind: str
    text: str
    # kind 'culprit': the host (or 'link A -> B') diagnose named
    failing: bool = True
    rule: str = ""
    instance: Optional[int] = None
    scope: str = ""
    columns: Tuple[str, ...] = ()
    subject: str = ""


@dataclass
class Verdict:
    criteria: Criteria
    source: str                      # why these criteria are in force
    result_path: str
    checks: List[CheckResult]        # in evaluation order
    reasons: List[Reason] = field(default_factory=list)
    diagnosis: object = None         # diagnose.Diagnosis when the criteria use diagnose

    @property
    def failed(self) -> bool:
        return any(r.failing for r in self.reasons)

    def undecided(self) -> List[CheckResult]:
        """The checks of the criteria's own rules that cannot tell and did not fail: a
        rule the criteria set to judge the fabric could not judge it. (A validity finding
        or a skipped instance is counted in the line but judges no rule by itself; a rule
        that needs the skipped figure says cannot tell here.)"""
        rules = {r.name for r in self.criteria.rules}
        return [c for c in self.checks if c.cannot_tell and not c.messages and c.rule in rules]

    @property
    def status(self) -> str:
        """FAIL when something failed, else CANNOT TELL when a rule could not tell, else PASS:
        a fabric no failure was found on is not shown fit while a rule cannot see its limit."""
        if self.failed:
            return "FAIL"
        return "CANNOT TELL" if self.undecided() else "PASS"

    @property
    def passed(self) -> bool:
        return self.status == "PASS"

    def add_reason(self, reason: Reason) -> None:
        """For other analyses (diagnose): append a reason; a failing one fails the run."""
        self.reasons.append(reason)

    def extra_reasons(self) -> List[Reason]:
        """Reasons that are not one of the checks (accept prints the checks already)."""
        return [r for r in self.reasons if r.kind != "check" and r.rule != "diagnose"]

    def culprits(self) -> List[Reason]:
        """diagnose's culprits (each is also a failed check of the criteria's diagnose)."""
        return [r for r in self.reasons if r.kind == "culprit" and r.rule == "diagnose"]

    def line(self) -> str:
        """The one verdict line, e.g. 'verdict: FAIL (2 of 44 checks failed: ...)'."""
        failed = [c for c in self.checks if not c.passed]
        extra = [r for r in self.extra_reasons() if r.failing]
        culprits = [r.subject for r in self.culprits()]
        # a check that cannot tell, or a skipped instance's, did not pass (said below)
        what = f"{outcome_counts(self.checks)['PASS']} of {len(self.checks)} checks passed"
        if failed:
            rules = list(dict.fromkeys(c.rule if c.rule != "diagnose" or not culprits
                                       else "culprits " + ", ".join(culprits)
                                       for c in failed))
            what = (f"{len(failed)} of {len(self.checks)} checks failed: " + ", ".join(rules[:4])
                    + (f" and {len(rules) - 4} more rules" if len(rules) > 4 else ""))
        if extra:
            what += "; " + "; ".join(r.text for r in extra[:2])
        # Neither pass nor fail by themselves, but never silent.
        skipped = sorted({c.instance for c in self.checks if c.skipped})
        if skipped:
            what += (f"; {len(skipped)} test instance{'s' if len(skipped) > 1 else ''} skipped "
                     f"({', '.join(f'{i:04d}' for i in skipped[:4])})")
        unknown = [c for c in self.checks if c.cannot_tell and not c.messages]
        if unknown:
            what += (f"; {len(unknown)} check{'s' if len(unknown) > 1 else ''} cannot tell "
                     f"({', '.join(dict.fromkeys(c.rule for c in unknown))})")
        return (f"verdict: {self.status} ({what}; criteria "
                f"{self.criteria.path}, {self.source})")

    def highlights(self) -> Dict[Tuple[int, str], Set[str]]:
        """(instance index, scope name) -> the summary columns whose figure failed."""
        out: Dict[Tuple[int, str], Set[str]] = {}
        for reason in self.reasons:
            if reason.failing and reason.instance is not None:
                out.setdefault((reason.instance, reason.scope), set()).update(reason.columns)
        return out


def resolve_criteria_file(name: str, scenario_file: str) -> Optional[str]:
    candidates = [name] if os.path.isabs(name) else [
        os.path.join(os.path.dirname(scenario_file or ""), name),
        os.path.join(CRITERIA_DIR, name), os.path.join(CRITERIA_DIR, os.path.basename(name))]
    return next((c for c in candidates if os.path.isfile(c)), None)


def scenario_criteria(result: ResultFile) -> Optional[str]:
    """The ``criteria:`` the scenario names (from the file's scenario_text), or None."""
    text = result.attrs.get("scenario_text")
    if not text:
        return None
    try:
        doc = yaml.safe_load(str(text))
    except yaml.YAMLError:
        return None
    value = doc.get("criteria") if isinstance(doc, dict) else None
    return str(value) if value else None


def criteria_in_force(result: ResultFile,
                      explicit: Union[None, str, Criteria] = None) -> Tuple[Criteria, str]:
    """(criteria, why) by the order in the module docstring. Raises CriteriaError."""
    if isinstance(explicit, Criteria):
        return explicit, "given"
    if explicit:
        return load_criteria(explicit), "given with --criteria"
    named = scenario_criteria(result)
    if named:
        scenario_file = str(result.attrs.get("scenario_file", "") or "")
        path = resolve_criteria_file(named, scenario_file)
        if path is None:
            raise CriteriaError(scenario_file or result.path, 0,
                                f"the scenario names criteria {named!r}, found neither next to "
                                f"the scenario nor in {CRITERIA_DIR}; pass --criteria FILE")
        return load_criteria(path), f"named by scenario {result.attrs.get('scenario_name', '')}"
    hosts = int(result.attrs.get("nhosts", 1) or 1)
    if hosts <= 1:
        return (load_criteria(os.path.join(CRITERIA_DIR, LOCAL_DEFAULT)),
                "shipped default for a run on one host")
    return (load_criteria(os.path.join(CRITERIA_DIR, RACK_DEFAULT)),
            f"shipped default for a run on {hosts} hosts")


def compute_verdict(result: ResultFile, criteria: Union[None, str, Criteria] = None,
                    baseline: Baselines = None) -> Verdict:
    """Evaluate the criteria in force on the file: THE verdict of every surface.
    ``baseline``: one known-good run or several (tolerance rules need 2+)."""
    chosen, source = criteria_in_force(result, criteria)
    baselines = baseline_list(baseline)
    diagnosis = None
    if chosen.diagnose != "off":
        diagnosis = diagnose(result, baseline=baselines[0] if baselines else None)
    checks = evaluate(result, chosen, baselines, diagnosis=diagnosis)
    verdict = Verdict(chosen, source, result.path, checks, diagnosis=diagnosis)
    for check in checks:
        if check.passed:
            continue
        if check.rule == "diagnose" and diagnosis is not None and diagnosis.culprits:
            verdict.add_reason(Reason("culprit", f"culprit {check.messages[0]}",
                                      rule="diagnose", subject=check.subject))
            continue
        verdict.add_reason(Reason(
            "check", f"{check.rule}: {check.subject}: {check.messages[0]}"
            + (f" (+{len(check.messages) - 1} more)" if len(check.messages) > 1 else ""),
            rule=check.rule, instance=check.instance, scope=check.scope,
            columns=tuple(dict.fromkeys(COLUMN_OF_KEY.get(k, "test") for k in check.failed))))
    return verdict
