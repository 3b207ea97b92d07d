"""accept's output: every check as a line, the verdict line, and JUnit XML for CI.

This module renders; it decides nothing (accept evaluates, verdict.compute_verdict
makes the one verdict every surface shows).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import List, Optional, Sequence, TextIO, Union

from .accept_result import OUTCOMES, CheckResult, outcome_counts
from .reader import ResultFile
from .verdict import compute_verdict

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


def print_checks(verdict, result_path: str, stream: Optional[TextIO] = None) -> None:
    """Every check (label, rule, subject, why), extra reasons, the count and the verdict line."""
    for check in verdict.checks:
        print(f"{check.label}  {check.rule}: {check.subject}", file=stream)
        for msg in check.messages or [m for m in (check.cannot_tell, check.skipped) if m][:1]:
            print(f"      {msg}", file=stream)
    for reason in verdict.extra_reasons():
        print(f"{'FAIL' if reason.failing else 'NOTE'}  {reason.text}", file=stream)
    print(f"\naccept: {count_text(verdict.checks)} ({verdict.criteria.path} on {result_path}) -> "
          f"{verdict.status}", file=stream)
    print(verdict.line(), file=stream)


def count_text(checks: Sequence[CheckResult]) -> str:
    """'N of M checks passed' and, apart, those that failed, cannot tell or were skipped
    (outcome_counts). The JUnit counts the same checks (tests, failures, and skipped for
    the last two)."""
    counts = outcome_counts(checks)
    apart = [f"{counts[label]} {words}" for label, words in OUTCOMES[1:] if counts[label]]
    return ", ".join([f"{counts['PASS']} of {len(checks)} checks passed"] + apart)


def run_accept(result: ResultFile, criteria=None,
               baseline: Union[None, ResultFile, Sequence[ResultFile]] = None,
               junit_path: Optional[str] = None, stream: Optional[TextIO] = None) -> bool:
    """Print every check of the criteria in force and the verdict; True when it passes.

    ``criteria``: a Criteria, a path, or None for the criteria in force
    (verdict.criteria_in_force). The closing line is verdict.Verdict.line(): the same
    line `verdict`, `summary` and the report show.
    """
    verdict = compute_verdict(result, criteria, baseline=baseline)
    print_checks(verdict, result.path, stream)
    if junit_path:
        write_junit(verdict.checks, junit_path, f"fabscope accept {result.name}")
    return verdict.passed
