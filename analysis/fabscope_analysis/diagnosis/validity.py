"""What the run's /validity findings do to a diagnosis.

- CPUs shared between ranks, or other work on them, put the kernel scheduler into
  every time: pairs, controls and effects all move more than on a quiet machine.
  Every noise figure the diagnosis measures from the run itself (residual sigma,
  tau, the controls' spread) is widened by WIDEN_PER_FINDING for each such kind of
  finding on every host. This is a stated design factor, not a measurement: the
  emulated cluster (6 ranks on 2 CPUs) is where it was checked, and the seeded
  benchmark's shared-CPU noise model where its error rates are measured.
- A finding on one host that slows its own ranks explains that host standing out:
  it is not named (unless hardware error counters of its own name it), and with
  nothing else named the answer is "cannot tell", never "fit".
"""

from __future__ import annotations

from typing import List, Tuple

from ..reader import ResultFile
from .result import LINK, Culprit

HOST_SLOWING_VALIDITY = ("oversubscribed", "busy_host", "cpu_governor")
SHARED_CPU_VALIDITY = ("oversubscribed", "busy_host")
WIDEN_PER_FINDING = 1.5

Row = Tuple[str, str, str]


def rows(result: ResultFile) -> List[Row]:
    """/validity (docs/file-format.md): host, what, effect."""
    if result._file is None:
        return []
    t = result.validity()
    return [(str(r["host"]), str(r["what"]), str(r["effect"])) for r in t.to_dict("records")]


def widen(validity: List[Row]) -> float:
    """The factor on every noise figure: shared CPUs on every host ('*')."""
    kinds = {what for host, what, _ in validity if host in ("", "*") and what in SHARED_CPU_VALIDITY}
    return WIDEN_PER_FINDING ** len(kinds)


def apply(culprits: List[Culprit], validity: List[Row]) -> Tuple[List[Culprit], List[str]]:
    """(kept, withheld): a culprit whose own host's finding explains it is withheld,
    with a line saying why; findings on every host are listed with each culprit."""
    kept, withheld = [], []
    every = [v for v in validity if v[0] in ("", "*")]
    for c in culprits:
        own = [v for v in validity if v[0] == c.host and v[1] in HOST_SLOWING_VALIDITY]
        from_counters = any(s.startswith(("errors:", "retransmissions")) for s in c.symptoms)
        if own and c.component != LINK and c.direction != "link" and not from_counters:
            withheld.append(f"{c.host} stands out ({'; '.join(c.symptoms)}) but its validity "
                            "finding explains it: " + "; ".join(f"{w} ({e})" for _, w, e in own)
                            + ": not named; fix the placement or load and run again")
            continue
        why = own + every
        if why:
            c.evidence.append("validity: " + "; ".join(f"{w} ({e})" for _, w, e in why))
        kept.append(c)
    return kept, withheld
