"""Text, JSON and HTML of a Diagnosis, and accept's `diagnose` rule."""

from __future__ import annotations

import json
from typing import Optional, TextIO

import pandas as pd

from .. import html as H
from .core import diagnose
from .result import Culprit, Diagnosis


def print_diagnosis(d: Diagnosis, stream: Optional[TextIO] = None):
    for line in d.lines():
        print(line, file=stream)


def write_json(d: Diagnosis, path: str):
    with open(path, "w") as out:
        json.dump(d.to_dict(), out, indent=2)
        out.write("\n")


def culprit_subject(c: Culprit) -> str:
    """How a culprit is named in the verdict, accept and the JUnit test case name."""
    return c.subject()


def culprits_html(d: Diagnosis) -> str:
    """The culprits of the verdict (report, under the verdict block): a table, the notes
    and what diagnose judged. No verdict of its own: the verdict is verdict.py's."""
    parts = []
    if d.culprits:
        rows = [{"culprit": c.subject(), "component": c.component,
                 "ranks": ",".join(map(str, c.ranks)),
                 "gpu": ",".join(str(g) for g in c.gpus if g >= 0) or "-",
                 "nic": ",".join(n for n in c.nics if n) or "-",
                 "direction": c.direction, "symptom": "; ".join(c.symptoms),
                 "evidence": "; ".join(c.evidence),
                 "confidence": f"{c.confidence} ({c.score:.2f})"} for c in d.culprits]
        parts.append(H.table(pd.DataFrame(rows), left=list(rows[0].keys())))
    for finding in d.congestion:
        parts.append(f"<p>{H.esc(finding.line())}</p>")
    for note in d.notes:
        parts.append(f"<p class=\"muted\">{H.esc(note)}</p>")
    parts.append(f"<p class=\"muted\">diagnose: {H.esc(d.first_line())}"
                 + (f"; judged: {H.esc(', '.join(d.tests_used))}" if d.tests_used else "")
                 + " (python3 -m fabscope_analysis diagnose FILE)</p>")
    return "\n".join(parts)


def acceptance_checks(result, baseline, check_type, strict: bool = False,
                      diagnosis: Optional[Diagnosis] = None) -> list:
    """accept's `diagnose` rule: one failed check per culprit, named by its subject (the
    JUnit test case name), or one check saying fit / cannot tell. ``diagnosis``: reuse
    one already computed (the verdict computes it once for every surface)."""
    d = diagnosis if diagnosis is not None else diagnose(result, baseline=baseline)
    if d.culprits:
        return [check_type("diagnose", c.subject(), messages=[c.line()], details=list(d.notes))
                for c in d.culprits]
    if d.verdict == "cannot tell":
        msg = d.first_line()
        return [check_type("diagnose", "(whole run)", messages=[msg] if strict else [],
                           details=[msg + ("" if strict else " (allowed: diagnose is not "
                                                               "'strict')")] + d.notes)]
    return [check_type("diagnose", "(whole run)", details=["fit"] + d.notes)]
