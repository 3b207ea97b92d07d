"""Scores a diagnosis against the ground truth a synthetic file carries.

Reads the diagnosis only in its JSON form (the dict `to_dict()` / `write_json` give, or
`dataclasses.asdict`), and only the fields that name a culprit's subject, so the
scoring survives a rewrite of the diagnosis: `verdict`, and for each entry of
`culprits` whichever of these it has: subject, component, kind, host, peer_host,
hosts, leaf, direction, side, nics, nic, ranks. Symptom and evidence texts are not
read (they mention other hosts as references).

A culprit is
- right: it names the planted component: the host(s) and, for a NIC fault, the NIC
  (or its one rank) and the side; the two hosts of a host pair as one culprit (not as
  GPU links); the GPU pair's two ranks; the leaf;
- misplaced: it touches a planted fault (one of its hosts, or hosts of its leaf) but
  names another component;
- false: it touches no planted fault.

A planted fault no culprit touches is `blind` (not `missed`) when the diagnosis says it
cannot tell that class of fault (`cannot_tell_for`: single GPU pairs, host pairs, lossy
or flapping NICs, leaf uplinks): the pattern did not measure it, and the verdict says so.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Dict, List, Optional

HOST = re.compile(r"\bhost\d+\b")
LEAF = re.compile(r"\bleaf\d+\b")
SUBJECT_KEYS = ("subject", "component", "kind", "host", "peer_host", "hosts", "leaf",
                "direction", "side", "nics", "nic", "ranks", "what", "name")


def diagnosis_json(diagnosis) -> Dict[str, object]:
    """The diagnosis as JSON data, whatever its class."""
    if isinstance(diagnosis, dict):
        return diagnosis
    for name in ("to_dict", "as_dict", "to_json_dict"):
        if hasattr(diagnosis, name):
            return json.loads(json.dumps(getattr(diagnosis, name)(), default=str))
    if dataclasses.is_dataclass(diagnosis):
        return json.loads(json.dumps(dataclasses.asdict(diagnosis), default=str))
    raise TypeError(f"cannot turn a {type(diagnosis).__name__} into JSON")


def _canonical_host(name: str) -> str:
    return "host" + str(int(name[4:]))


def _strings(value) -> List[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return [] if value is None else [str(value)]


def culprit_subject(culprit: Dict[str, object]) -> Dict[str, object]:
    """hosts, leaves, side, nics, ranks and component words of one culprit entry."""
    text = {k: " ".join(_strings(culprit.get(k))) for k in SUBJECT_KEYS if k in culprit}
    words = " ".join(text.values()).lower()
    hosts = {_canonical_host(h) for h in HOST.findall(" ".join(
        text.get(k, "") for k in ("subject", "host", "peer_host", "hosts", "name")))}
    side = "both"
    for key in ("side", "direction", "subject"):
        value = text.get(key, "").lower()
        if re.search(r"\bsend", value):
            side = "send"
            break
        if re.search(r"\breceiv", value):
            side = "receive"
            break
    ranks = culprit.get("ranks") if isinstance(culprit.get("ranks"), list) else []
    return {"hosts": hosts, "leaves": set(LEAF.findall(words)), "side": side,
            "nics": {n for n in _strings(culprit.get("nics", culprit.get("nic"))) if n},
            "ranks": {int(r) for r in ranks if isinstance(r, (int, float))},
            "link": bool(re.search(r"\blink\b", words))
            and not re.search(r"host[- ]?pair|cable|port", words),
            "pair_component": bool(re.search(r"host[- ]?pair|cable|port", words)),
            "words": words}


def _fault_hosts(fault) -> set:
    return {_canonical_host(h) for h in fault["hosts"]}


def _right(sub, fault, leaf_hosts: Dict[str, set]) -> bool:
    kind = fault["component"]
    if kind == "leaf":
        return fault["leaf"] in sub["leaves"]
    if sub["hosts"] != _fault_hosts(fault):
        return False
    if kind in ("nic", "host"):
        side_ok = fault["side"] == "both" or sub["side"] == fault["side"]
        nic_ok = kind == "host" or sub["ranks"] == set(fault["ranks"]) or \
            sub["nics"] == set(fault["nics"])
        return side_ok and nic_ok and not sub["link"]
    if kind == "gpu-pair":
        return sub["ranks"] == set(fault["ranks"])
    if len(fault["ranks"]) == 2:  # one GPU a host: the host pair is one link
        return sub["ranks"] in (set(), set(fault["ranks"]))
    return not sub["link"] and (sub["pair_component"] or len(sub["ranks"]) != 2)  # host-pair


def _touches(sub, fault, leaf_hosts: Dict[str, set]) -> bool:
    if fault["component"] == "leaf":
        inside = leaf_hosts.get(fault["leaf"], set())
        return fault["leaf"] in sub["leaves"] or bool(sub["hosts"] and sub["hosts"] <= inside)
    return bool(sub["hosts"] & _fault_hosts(fault))


def leaf_hosts_of(truth) -> Dict[str, set]:
    c = truth["cluster"]
    per_leaf = c["hosts"] // c["leaves"]
    return {f"leaf{i}": {f"host{h}" for h in range(i * per_leaf, (i + 1) * per_leaf)}
            for i in range(c["leaves"])}


BLIND_WORDS = {"gpu-pair": "single gpu pairs", "host-pair": "host pairs",
               "lossy": "lossy or flapping", "flapping": "lossy or flapping", "leaf": "leaf uplinks"}


def _declared_blind(fault, blind: List[str]) -> bool:
    word = BLIND_WORDS.get(fault["component"]) or BLIND_WORDS.get(fault.get("fault", ""))
    return bool(word) and any(word in b.split(":")[0].lower() for b in blind)


def score(diagnosis, truth) -> Dict[str, object]:
    """{verdict, culprits, per fault: right / misplaced / blind / missed, false culprits}."""
    data = diagnosis_json(diagnosis)
    verdict = str(data.get("verdict", "?"))
    culprits = [c for c in data.get("culprits", []) if isinstance(c, dict)]
    leaf_hosts = leaf_hosts_of(truth)
    subjects = [culprit_subject(c) for c in culprits]
    faults = truth["faults"]
    outcome: List[str] = []
    for fault in faults:
        if any(_right(s, fault, leaf_hosts) for s in subjects):
            outcome.append("right")
        elif any(_touches(s, fault, leaf_hosts) for s in subjects):
            outcome.append("misplaced")
        elif _declared_blind(fault, [str(b) for b in data.get("cannot_tell_for", [])]):
            outcome.append("blind")
        else:
            outcome.append("missed")
    false = [s for s in subjects if not any(_touches(s, f, leaf_hosts) for f in faults)]
    return {"verdict": verdict, "culprits": len(culprits), "faults": outcome,
            "false": len(false), "false_examples": [s["words"][:80] for s in false[:3]]}


def verdict_word(verdict) -> Optional[str]:
    """PASS / FAIL / CANNOT TELL of an accept verdict object, whatever its class."""
    for name in ("outcome", "verdict", "status", "result"):
        value = getattr(verdict, name, None)
        if isinstance(value, str) and value:
            return value.upper().replace("_", " ")
    line = verdict.line() if hasattr(verdict, "line") else str(verdict)
    m = re.search(r"verdict: (PASS|FAIL|CANNOT TELL)", line)
    if m:
        return m.group(1)
    passed = getattr(verdict, "passed", None)
    return None if passed is None else ("PASS" if passed else "FAIL")
