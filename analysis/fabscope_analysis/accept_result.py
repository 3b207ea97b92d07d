"""What accept finds, as plain data: one CheckResult per (rule, instance, scope).

Renderers (accept_text: text and JUnit; export: JSON and OpenMetrics; the report and
summary through verdict.Verdict) read these fields and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from .run_analysis import format_number

MAX_NAMED = 5  # responsible ranks/pairs named per failure


@dataclass
class CheckResult:
    rule: str
    subject: str
    messages: List[str] = field(default_factory=list)   # why it failed (empty: not failed)
    details: List[str] = field(default_factory=list)    # values, intervals, methods
    instance: Optional[int] = None     # the test instance checked (None: the whole run)
    scope: str = ""                    # its site scope name
    failed: List[str] = field(default_factory=list)  # criteria keys that failed (p99_us, ...)
    # Neither passed nor failed by itself: the instance was `skipped` (a reference tool not
    # installed; the reason), or the data cannot tell (an interval across the limit, a
    # family rule that cannot see its margin, a skipped reference): why.
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

    def add_cannot_tell(self, text: str) -> None:
        self.cannot_tell = f"{self.cannot_tell}; {text}" if self.cannot_tell else text


def named_list(items, unit: str) -> str:
    """'who value unit, ...' for at most MAX_NAMED items, then 'and N more'."""
    shown = ", ".join(f"{who} {format_number(v)}{unit}" for who, v in items[:MAX_NAMED])
    if len(items) > MAX_NAMED:
        shown += f" and {len(items) - MAX_NAMED} more"
    return shown


# A check's outcomes as accept prints them, and the word each is counted under.
OUTCOMES = (("PASS", "passed"), ("FAIL", "failed"), ("CANNOT TELL", "cannot tell"),
            ("SKIP", "skipped"))


def outcome_counts(checks: Sequence[CheckResult]) -> Dict[str, int]:
    """How many checks end in each outcome, by label: a check that cannot tell, or a
    skipped instance's, did not pass. accept's count line, its JUnit, the verdict line and
    the OpenMetrics export count from this."""
    labels = [c.label for c in checks]
    return {label: labels.count(label) for label, _ in OUTCOMES}
