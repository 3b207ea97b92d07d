"""What diagnose answers, as plain data: the verdict, the culprits (components to fix),
congestion findings, and why it cannot tell. Rendering is render.py's."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import List, Tuple

# A culprit's component: the smallest part of the fabric that explains what was seen.
NIC, HOST, HOST_PAIR, LINK, LEAF, FABRIC = "nic", "host", "host-pair", "link", "leaf", "fabric"
# a leaf's links to the spine: its uplinks (out of the leaf, or both ways), or the spine
# -> leaf links into it (paths.py)
UPLINK, SPINE_LINK = "uplink", "spine-link"
# one local rank slow on most hosts: a placement, not each host (systemic.py)
LOCAL_RANK = "local-rank"


@dataclass
class Finding:
    """One measurement that points at one rank side (supporting evidence, counters)."""
    rank: int
    side: str                 # send | receive | both (round trip: cannot tell)
    test: int
    test_name: str
    measure: str              # centre | tail | incast | pairs | collective | counters
    symptom: str
    ratio: float              # how many times slower than the healthy population (>1)
    z: float
    primary: bool = True      # can name a culprit by itself
    slow_touching: Tuple[int, int] = (0, 0)   # slow / all pairs touching it on that side


@dataclass
class Culprit:
    host: str                 # the host; for a leaf, the leaf's label
    ranks: List[int]
    gpus: List[int]
    nics: List[str]
    direction: str            # receive | send | both | link
    symptoms: List[str]
    evidence: List[str]
    confidence: str           # high | medium | low
    score: float
    peer_host: str = ""       # for a link or host pair: the other end
    component: str = HOST     # nic | host | host-pair | link | leaf | fabric
    # an outage or flap (outages.py): its window on the run clock (seconds after the first
    # test started) and the width of the span its start is known to (last seen up to
    # window_s[0] plus the pair's typical sample time); empty otherwise
    window_s: List[float] = field(default_factory=list)
    window_error_s: float = 0.0

    def subject(self) -> str:
        """How the culprit is named in the verdict, accept and the JUnit test case name."""
        if self.component == LEAF:
            return f"leaf {self.host}"
        if self.component == LOCAL_RANK:
            return self.host
        if self.component == UPLINK:
            return f"uplinks of leaf {self.host}"
        if self.component == SPINE_LINK:
            return f"spine links into leaf {self.host}"
        if self.component == HOST_PAIR:
            return f"host pair {self.host} <-> {self.peer_host}"
        if self.direction == "link":
            return f"link {self.host} -> {self.peer_host}"
        return self.host

    def line(self) -> str:
        if self.component == LINK:
            who = f"link {self.host} -> {self.peer_host} (ranks {self.ranks[0]} -> {self.ranks[1]})"
        elif self.component in (HOST_PAIR, LEAF, UPLINK, SPINE_LINK, LOCAL_RANK):
            who = self.subject()
        elif not self.ranks:  # the whole fabric against a baseline: no rank to name
            who = self.host
        else:
            ranks = ",".join(str(r) for r in self.ranks)
            gpus = ",".join(str(g) for g in self.gpus if g >= 0) or "-"
            nics = ",".join(n for n in self.nics if n) or "-"
            what = "" if self.component in (HOST, FABRIC) else f" {self.component}"
            who = f"{self.host} (rank {ranks}, gpu {gpus}, nic {nics}){what} {self.direction}"
        evidence = "; ".join(x for x in self.evidence if x)
        evidence = f" | evidence: {evidence}" if evidence else ""
        return (f"{who}: {'; '.join(self.symptoms)}{evidence}"
                f" | confidence {self.confidence} ({self.score:.2f})")


@dataclass
class Congestion:
    """Many pairs slow with no component to blame: congestion or routing (e.g. ECMP
    collisions), not culprits. Pairs measured alone say whether it needs load."""
    test: str
    slow_pairs: int
    pairs: int
    cross_leaf_share: float   # of the slow pairs, the share between two leaves
    cleared_alone: int        # retested pairs not slow alone (cleared, or within selection)
    retested: int
    examples: List[str] = field(default_factory=list)
    transient_alone: int = 0  # retested pairs slow alone on one of their two visits only

    def line(self) -> str:
        alone = (f"; {self.cleared_alone}/{self.retested} retested alone were not slow "
                 "(as fast as the controls, or within their noise)" if self.retested else "")
        if self.retested and self.cleared_alone == self.retested:
            alone += ": slow only under load"
        if self.transient_alone:
            alone += (f"; {self.transient_alone} slow alone on one visit only (a transient, "
                      "not a fault)")
        return (f"congestion or routing in {self.test}: {self.slow_pairs}/{self.pairs} pairs "
                f"({100.0 * self.slow_pairs / max(self.pairs, 1):.2f}%) significantly slow with no "
                f"component explaining them ({100 * self.cross_leaf_share:.0f}% of them between "
                f"leaves){alone}; e.g. {', '.join(self.examples[:3])}")


@dataclass
class Diagnosis:
    verdict: str              # fit | not fit | cannot tell
    culprits: List[Culprit] = field(default_factory=list)
    reasons: List[str] = field(default_factory=list)   # why it cannot tell
    notes: List[str] = field(default_factory=list)
    tests_used: List[str] = field(default_factory=list)
    congestion: List[Congestion] = field(default_factory=list)
    # classes of fault the run could not see (a pattern's blind spot, too little power):
    # "cannot tell" for them, with the reason, whatever the verdict on the others
    cannot_tell_for: List[str] = field(default_factory=list)

    @property
    def fit(self) -> bool:
        return self.verdict == "fit"

    def first_line(self) -> str:
        if self.verdict == "not fit":
            n = len(self.culprits)
            return f"not fit: {n} culprit{'s' if n != 1 else ''}"
        if self.verdict == "cannot tell":
            return "cannot tell: " + "; ".join(self.reasons)
        if self.cannot_tell_for:
            return "fit; cannot tell for " + "; ".join(self.cannot_tell_for)
        return "fit"

    def lines(self) -> List[str]:
        out = [self.first_line()]
        out.extend(c.line() for c in self.culprits)
        out.extend(c.line() for c in self.congestion)
        if self.verdict != "fit":
            out.extend(f"cannot tell for {b}" for b in self.cannot_tell_for)
        out.extend(f"note: {n}" for n in self.notes)
        if self.tests_used:
            out.append("judged from: " + ", ".join(self.tests_used))
        return out

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "first_line": self.first_line(),
                "culprits": [dict(asdict(c), subject=c.subject()) for c in self.culprits],
                "congestion": [asdict(c) for c in self.congestion], "reasons": self.reasons,
                "notes": self.notes, "tests_used": self.tests_used,
                "cannot_tell_for": self.cannot_tell_for}
