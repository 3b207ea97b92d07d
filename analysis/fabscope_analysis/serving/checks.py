"""One check of a serving verdict and its three outcomes: what fit composes and the
congestion rule (cif.py) returns alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List

PASS, FAIL, CANNOT_TELL = "PASS", "FAIL", "CANNOT TELL"
ORDER = {PASS: 0, CANNOT_TELL: 1, FAIL: 2}


@dataclass
class Check:
    name: str                  # itl_p99, ttft_p50, cif_p99
    status: str
    text: str
    condition: str = ""
    figures: Dict[str, object] = field(default_factory=dict)
    missing: List[str] = field(default_factory=list)


def worst_status(statuses) -> str:
    statuses = list(statuses)
    return max(statuses, key=lambda s: ORDER[s]) if statuses else CANNOT_TELL
