"""Evidence besides the pair tests: listed with a culprit, never naming one by itself,
except physical error counters whose count on a host stands out of the other hosts'
(counter_tests.py)."""

from __future__ import annotations

import re
from typing import Dict, List, Sequence, Tuple

import numpy as np
import pandas as pd

from ..reader import FLAG_AUXILIARY_MASK, ResultFile, TestInstance
from ..inference import robust_sigma
from ..kinds import analysis_of
from ..kinds.base import ARRIVAL_EVIDENCE, PAIR_EVIDENCE, SENDER_EVIDENCE
from . import counter_tests
from .evidence import MARGIN, Q
from .model import Layout
from .result import Finding

# Counter names that mean a damaged packet, a port error or a drop on the host itself.
ERROR_COUNTER = re.compile(r"(err|crc|symbol|discard|drop|link_?down|downed|integrity|"
                           r"excessive|overrun|carrier)", re.IGNORECASE)


def _name(inst: TestInstance) -> str:
    return f"{inst.index:04d} {inst.get('name')}"


def pairs_tests(instances: Sequence[TestInstance], layout: Layout) -> List[Finding]:
    """A pairs test (every measuring rank has one peer: the pattern `pairs`, the example's
    ring) cannot separate a rank from its pair: a pair MARGIN x slower than the median
    pair supports both its ends. Tests of several peers per rank feed the pair model."""
    out = []
    for inst in instances:
        if PAIR_EVIDENCE not in analysis_of(inst.get("kind")).evidence:
            continue
        if inst.get("condition", "quiet") != "quiet":
            continue
        s = inst.samples()
        s = s[(s["peer"] >= 0) & ((s["flags"] & FLAG_AUXILIARY_MASK) == 0)]
        if s.empty:
            continue
        if s.groupby("rank")["peer"].nunique().max() != 1:
            continue
        bandwidth = inst.metric == "bandwidth"
        med = s.assign(t=(s["t_done_ns"] - s["t_post_ns"]).astype(np.float64)) \
            .groupby(["rank", "peer"])["t"].median()
        if len(med) < 3:
            continue
        centre = float(np.median(med))
        for (r, p), v in med.items():
            if v / centre < MARGIN:
                continue
            for rank, side in ((int(r), "send" if bandwidth else "both"),
                               (int(p), "receive" if bandwidth else "both")):
                out.append(Finding(rank, side, inst.index, str(inst.get("name")), "pairs",
                                   f"pairs test {_name(inst)}: pair {layout.host_of(int(r))} -> "
                                   f"{layout.host_of(int(p))} {v / centre:.1f}x the median pair's time",
                                   v / centre, 0.0, primary=False))
    return out


def incast(instances: Sequence[TestInstance]) -> Tuple[List[Finding], List[str]]:
    findings, notes = [], []
    for inst in instances:
        if SENDER_EVIDENCE not in analysis_of(inst.get("kind")).evidence:
            continue
        s = inst.samples()
        s = s[(s["peer"] >= 0) & ((s["flags"] & FLAG_AUXILIARY_MASK) == 0)]
        if s.empty:
            continue
        t = (s["t_done_ns"] - s["t_post_ns"]).astype(np.float64)
        rate = s.assign(g=s["bytes"] / t).groupby("rank")["g"].median()
        if len(rate) < 3:
            continue
        centre = float(np.median(rate))
        for r, g in rate.items():
            if g > 0 and centre / g >= 2.0:
                findings.append(Finding(int(r), "send", inst.index, str(inst.get("name")), "incast",
                                        f"incast {_name(inst)}: sends at {100 * g / centre:.0f}% of "
                                        "the median sender", centre / g, 0.0, primary=False))
        probe = inst.get("probe_p99_ns")
        if probe is not None and np.isfinite(float(probe)) and float(probe) > 0:
            notes.append(f"incast {_name(inst)}: latency probe p99 {float(probe) / 1e3:.1f} us while "
                         "the incast ran (a congestion figure, not blamed on a host)")
    return findings, notes


def collectives(instances: Sequence[TestInstance]) -> List[Finding]:
    out = []
    for inst in instances:
        if ARRIVAL_EVIDENCE not in analysis_of(inst.get("kind")).evidence:
            continue
        s = inst.samples()
        s = s[(s["peer"] < 0) & ((s["flags"] & FLAG_AUXILIARY_MASK) == 0)]
        if s.empty or s["rank"].nunique() < 3:
            continue
        first = s.groupby("iter")["t_post_ns"].transform("min")
        per_rank = s.assign(late=(s["t_post_ns"] - first).astype(np.float64)) \
            .groupby("rank")["late"].median()
        spread = max(float(np.median(per_rank)), 1.0)
        last = s.loc[s.groupby("iter")["t_post_ns"].idxmax(), "rank"].value_counts(normalize=True)
        iters = s["iter"].nunique()
        for r, frac in last.items():
            if frac >= 0.75 and iters >= 10 and per_rank[r] > 4 * spread:
                out.append(Finding(int(r), "both", inst.index, str(inst.get("name")), "collective",
                                   f"collective {_name(inst)}: arrives last in {100 * frac:.0f}% of "
                                   f"{iters} iterations (median {per_rank[r] / 1e3:.1f} us after the "
                                   "first rank)", per_rank[r] / spread, 0.0, primary=False))
    return out


def counters(result: ResultFile, layout: Layout, q_family: float = Q) -> Tuple[List[Finding], List[str]]:
    """Error counters that moved: supporting evidence on the hosts they moved on (when
    few hosts), naming a host by themselves only when a physical error counter's count
    there stands out of the other hosts' (counter_tests.standing_out)."""
    c = result.all_counters()
    if c.empty:
        return [], []
    c = c.assign(host=c["rank"].map(lambda r: layout.host_of(int(r))))
    # one reader per host: the same counter read by several ranks would count several times
    c = c.drop_duplicates(["test", "host", "source", "name"])
    lowest = {}
    for r in range(layout.n):
        lowest.setdefault(layout.host_of(r), r)
    findings = _retransmissions(c, lowest)
    moved = c[c["name"].map(lambda x: bool(ERROR_COUNTER.search(str(x))))] \
        .groupby(["host", "source", "name"])["delta"].sum()
    deltas: Dict[Tuple[str, str], Dict[str, int]] = {}
    for (h, source, name), delta in moved.items():
        deltas.setdefault((str(source), str(name)), {})[str(h)] = int(delta)
    named = counter_tests.standing_out(deltas, q_family)
    rows = [(h, f"{source} {name}", int(delta), _side_of(str(name)))
            for (h, source, name), delta in moved.items() if delta > 0]
    rows += _ip_local_drops(c)
    by_host: Dict[str, List[Tuple[str, int, str]]] = {}
    for h, what, delta, side in rows:
        by_host.setdefault(h, []).append((what, delta, side))
    # listed with a culprit when they moved on a few hosts; one every host shows is the
    # fabric's unless its count on a host stands out of the others'
    many = len(by_host) * 3 > len(layout.host_names)
    notes = [f"error/drop counters moved on {len(by_host)} of {len(layout.host_names)} hosts: "
             "not blamed on any beyond those whose physical error counts stand out of the other "
             "hosts'"] if many else []
    for h, items in by_host.items():
        if many and h not in named:
            continue
        sides = {s for _, _, s in items}
        side = sides.pop() if len(sides) == 1 else "both"
        text = ", ".join(f"{w} +{d}" for w, d, _ in items[:4])
        why = (f" ({', '.join(named[h])} beyond the other hosts' rate)" if h in named else "")
        findings.append(Finding(lowest.get(h, -1), side, -1, "counters", "counters",
                                f"errors: {text}{why}", 1.0, 0.0, primary=h in named))
    return findings, notes


def _retransmissions(c: pd.DataFrame, lowest: Dict[str, int]) -> List[Finding]:
    tcp = c[c["source"] == "snmp:Tcp"].pivot_table(index="host", columns="name", values="delta",
                                                    aggfunc="sum")
    if not {"RetransSegs", "OutSegs"} <= set(tcp.columns) or len(tcp) < 4:
        return []
    rate = (tcp["RetransSegs"] / tcp["OutSegs"].clip(lower=1)).fillna(0.0)
    centre = float(np.median(rate))
    sigma = max(robust_sigma(rate.to_numpy()), 1e-4)
    return [Finding(lowest.get(h, -1), "send", -1, "counters", "counters",
                    f"retransmissions {100 * v:.2f}% of its segments (median host {100 * centre:.2f}%)",
                    v / max(centre, 1e-6), (v - centre) / sigma, primary=False)
            for h, v in rate.items() if v >= 5 * centre and (v - centre) / sigma >= 4.0 and v > 0]


def _ip_local_drops(c: pd.DataFrame) -> List[Tuple[str, str, int, str]]:
    """Packets the host's own IP layer received but did not deliver, or was asked to
    send but did not transmit: a host dropping its own traffic (supporting only)."""
    ip = c[c["source"] == "snmp:Ip"].pivot_table(index="host", columns="name", values="delta",
                                                  aggfunc="sum")
    out = []
    for h, row in ip.iterrows():
        for a, b, what, side in (("InReceives", "InDelivers", "ip local drops in", "receive"),
                                 ("OutRequests", "OutTransmits", "ip local drops out", "send")):
            if {a, b} <= set(row.index):
                lost = int(row[a] - row[b])
                if lost > 0 and lost >= 0.002 * max(row[a], 1):
                    out.append((str(h), what, lost, side))
    return out


def _side_of(name: str) -> str:
    n = name.lower()
    if n.startswith("rx") or "rcv" in n or "_in" in n or n.startswith("in"):
        return "receive"
    if n.startswith("tx") or "xmit" in n or "_out" in n or n.startswith("out"):
        return "send"
    return "both"
