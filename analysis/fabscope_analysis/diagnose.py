"""`diagnose FILE [--json OUT] [--baseline B.h5]`: is the fabric fit, and if not, who to fix.

The answer names culprits (host, ranks, GPU, NIC, direction, symptom, evidence,
confidence), never victims. The core is a robust two-way decomposition of every
all-pairs matrix (docs/analysis.md, "diagnose"):

    log t[s][d] = mu + a[s] + b[d] + e[s][d]

fitted by Tukey's median polish, where t is a pair's time (latency, or 1 / bandwidth),
s the measuring rank (the sender of a bandwidth test) and d its peer (the receiver).
A rank whose sender effect a[s] or receiver effect b[d] stands far above the others
(in units of the median absolute deviation, and by a practical margin) is a culprit on
that side; a pair whose residual e[s][d] stands out while neither end does is a bad
link. A host whose only slow pairs are with a culprit keeps a small effect of its own
and is not named: that is what makes victims fall out.

Each all-pairs instance is read twice: its centre (the median per pair, the file's
pair_matrix) and its tail (the p99 per pair from the raw samples), so a lossy host
whose medians are fine but whose retransmission timeouts make tails shows up too.
Everything else that relates ranks to each other (pairs tests, incast per-sender rates
and the latency probe, a collective's per-rank arrival, per-host counter deltas) is
supporting evidence: it is listed with a culprit and raises or lowers the confidence,
and counters of hardware errors can name a host by themselves.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import asdict, dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, TextIO, Tuple

import numpy as np
import pandas as pd

from . import reader as _reader
from .reader import FLAG_AUXILIARY_MASK, ResultFile, TestInstance

# A rank (side) is a culprit when its effect is this many robust standard deviations
# above the median effect AND the pairs it touches are at least this much slower than
# the healthy population (bandwidth below 80 %, latency above 1.25x). The two together
# keep noise alone (large z on a tiny spread, or a big ratio on a noisy matrix) from
# naming anyone.
Z_CULPRIT = 4.0
# A tail (the p99 of a pair's ~100 samples) is set by one or two events: a process
# descheduled on a shared machine makes 2-4x on its own, a lost packet's
# retransmission timeout makes 10-100x; so a tail needs a much larger margin.
MIN_RATIO = {"centre": 1.25, "tail": 5.0}
# Once a host is a culprit on one side, its other side counts at a lower bar: a lossy
# port slows both directions and one of them may land just under the first bar.
Z_OTHER_SIDE = 2.5
MIN_RATIO_OTHER_SIDE = {"centre": 1.12, "tail": 2.5}
# A bad link: residual this many residual-deviations above zero, and this much slower.
Z_LINK = 5.0
# A rank whose finding is at least this many times the healthy pairs' time makes a
# control pair through it no reference for a serial retest.
CONTROL_TAINT_RATIO = 2.0
# A few of the kernel scheduler's slices (CFS periods are a few ms): on CPUs shared by
# more ranks than CPUs, or with other work, a latency tail can grow by that much
# without any fault on the path. A lossy link's retransmission timeouts (200 ms and
# up in TCP; ~27 ms p99 on the emulated cluster at 2 % loss) are far above it.
SCHEDULER_SLICES_NS = 5e6
# With other work on the machine (validity busy_host) a process that does not yield
# holds a CPU for whole slices (CFS's period is 12-24 ms on 2-4 CPUs), so a rank can
# wait longer: seen with one spinning process on the 2-core emulated cluster, clean
# hosts' latency tails ~8 ms over the healthy pairs (70x), named. A lossy port's
# tails there were 120-220 ms, still far above.
BUSY_SLICES_NS = 25e6
# On shared CPUs one pair's median, even measured alone, moves by 1.6-1.7x between
# measurements (seen on the emulated cluster: clean links at 58-61 % of the healthy
# bandwidth, one confirmed alone at 72 % of the controls): a single link is named
# there only from this ratio on. Hosts (every pair of theirs) are not affected.
SHARED_CPU_LINK_RATIO = 2.0
# Hosts too, on shared CPUs: a rank descheduled in its rounds slows every pair it
# takes part in. Seen on the clean emulated cluster (6 ranks on 2 CPUs, nothing
# planted): one host's receive pairs at a median 63 % of the healthy bandwidth
# (1.59x), two of them confirmed alone at 79 % and 44 % of the control pairs. So a
# host's median (centre) finding on shared CPUs names it only from this ratio on;
# below, diagnose cannot tell (a planted slow port reads 2 % there, 50x).
SHARED_CPU_HOST_RATIO = 2.0
MIN_LINK_RATIO = {"centre": 1.5, "tail": 10.0}
# A fault at a rank's end (its NIC, port, cable, PCIe path) is on every path it
# takes, so it slows most of its pairs: a rank named from the matrix needs at least
# this share of its pairs (on the finding's side) slow. A rank whose effect rests on
# a minority of its pairs (seen: 2/5 at 1.2x on 6 ranks sharing 2 CPUs) is carried
# by a few noisy pairs, not by its own end.
MIN_SLOW_SHARE = 0.5
# Below this many ranks in a matrix a slow pair cannot be pinned on one end.
MIN_RANKS = 4
# Pair-to-pair spread (robust sigma of log pair time) above which a matrix is "all
# noise": if nothing stands out either, diagnose says it cannot tell.
NOISY_SIGMA = math.log(1.5)
# Serial-retest rows that are control pairs (measured alone, like the retested ones,
# but drawn from the middle of the parallel pass): reader.FLAG_CONTROL_PAIR.
FLAG_CONTROL_PAIR = _reader.FLAG_CONTROL_PAIR
# Counter names that mean a damaged packet, a port error or a drop on the host itself.
ERROR_COUNTER = re.compile(r"(err|crc|symbol|discard|drop|link_?down|downed|integrity|"
                           r"excessive|overrun|carrier)", re.IGNORECASE)
MIN_SAMPLES_PER_PAIR_FOR_TAIL = 20


# ---------------------------------------------------------------------------------------
# median polish

@dataclass
class Decomposition:
    mu: float
    row: np.ndarray          # sender (measuring rank) effect per rank
    col: np.ndarray          # receiver (peer) effect per rank
    resid: np.ndarray        # residual per pair (NaN where not measured)


def median_polish(y: np.ndarray, max_iter: int = 20, tol: float = 1e-9) -> Decomposition:
    """Tukey's median polish of a matrix with NaN holes (the diagonal, unmeasured pairs)."""
    r = np.array(y, dtype=np.float64, copy=True)
    n_rows, n_cols = r.shape
    row = np.zeros(n_rows)
    col = np.zeros(n_cols)
    mu = 0.0
    have_row = np.any(np.isfinite(r), axis=1)
    have_col = np.any(np.isfinite(r), axis=0)
    for _ in range(max_iter):
        with np.errstate(all="ignore"):
            rmed = np.where(have_row, np.nanmedian(np.where(have_row[:, None], r, 0.0), axis=1),
                            0.0)
        r -= rmed[:, None]
        row += rmed
        delta = float(np.median(col[have_col])) if have_col.any() else 0.0
        col -= delta
        mu += delta
        with np.errstate(all="ignore"):
            cmed = np.where(have_col, np.nanmedian(np.where(have_col[None, :], r, 0.0), axis=0),
                            0.0)
        r -= cmed[None, :]
        col += cmed
        delta = float(np.median(row[have_row])) if have_row.any() else 0.0
        row -= delta
        mu += delta
        if np.nanmax(np.abs(rmed)) < tol and np.nanmax(np.abs(cmed)) < tol:
            break
    return Decomposition(mu, row, col, r)


def robust_sigma(values: Iterable[float]) -> float:
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=np.float64)
    if len(v) < 2:
        return 0.0
    return 1.4826 * float(np.median(np.abs(v - np.median(v))))


# ---------------------------------------------------------------------------------------
# results

@dataclass
class Finding:
    """One measurement that points at one rank (or one link)."""
    rank: int
    side: str                 # send | receive | both (round trip: cannot tell)
    test: int
    test_name: str
    measure: str              # centre | tail | incast | pairs | collective | counters
    symptom: str
    ratio: float              # how many times slower than the healthy population (>1)
    z: float
    slow_touching: Tuple[int, int] = (0, 0)   # slow / all pairs touching it on that side
    slow_elsewhere: Tuple[int, int] = (0, 0)  # slow / all pairs touching no culprit
    primary: bool = True      # can name a culprit by itself
    # pairs touching it on that side at least the practical margin (MIN_RATIO) slower
    # than the healthy median / all of them: the quorum MIN_SLOW_SHARE counts these
    # (the "slow" bar also needs 2 sigma, which a noisy matrix lifts above a real fault)
    over_margin: Tuple[int, int] = (0, 0)


@dataclass
class Culprit:
    host: str
    ranks: List[int]
    gpus: List[int]
    nics: List[str]
    direction: str            # receive | send | both | link
    symptoms: List[str]
    evidence: List[str]
    confidence: str           # high | medium | low
    score: float
    peer_host: str = ""       # for a bad link: the other end

    def line(self) -> str:
        if self.direction == "link":
            who = f"link {self.host} -> {self.peer_host} (ranks {self.ranks[0]} -> {self.ranks[1]})"
        else:
            ranks = ",".join(str(r) for r in self.ranks)
            gpus = ",".join(str(g) for g in self.gpus if g >= 0) or "-"
            nics = ",".join(n for n in self.nics if n) or "-"
            who = f"{self.host} (rank {ranks}, gpu {gpus}, nic {nics}) {self.direction}"
        return (f"{who}: {'; '.join(self.symptoms)} | evidence: {'; '.join(self.evidence)}"
                f" | confidence {self.confidence} ({self.score:.2f})")


@dataclass
class Diagnosis:
    verdict: str              # fit | not fit | cannot tell
    culprits: List[Culprit] = field(default_factory=list)
    reasons: List[str] = field(default_factory=list)   # why it cannot tell
    notes: List[str] = field(default_factory=list)
    tests_used: List[str] = field(default_factory=list)

    @property
    def fit(self) -> bool:
        return self.verdict == "fit"

    def first_line(self) -> str:
        if self.verdict == "not fit":
            n = len(self.culprits)
            return f"not fit: {n} culprit{'s' if n != 1 else ''}"
        if self.verdict == "cannot tell":
            return "cannot tell: " + "; ".join(self.reasons)
        return "fit"

    def lines(self) -> List[str]:
        out = [self.first_line()]
        out.extend(c.line() for c in self.culprits)
        out.extend(f"note: {n}" for n in self.notes)
        if self.tests_used:
            out.append("judged from: " + ", ".join(self.tests_used))
        return out

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "first_line": self.first_line(),
                "culprits": [asdict(c) for c in self.culprits], "reasons": self.reasons,
                "notes": self.notes, "tests_used": self.tests_used}


# ---------------------------------------------------------------------------------------
# the all-pairs decomposition

@dataclass
class _Matrix:
    inst: TestInstance
    measure: str              # centre | tail
    logt: np.ndarray          # log pair time (higher = worse), NaN where not measured
    symmetric: bool
    what: str                 # e.g. "bandwidth", "latency p99"
    bandwidth: bool


def _log_time(values: np.ndarray, bandwidth: bool) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(values > 0, values, np.nan)
        return -np.log(v) if bandwidth else np.log(v)


def _tail_matrix(inst: TestInstance, n: int, samples: pd.DataFrame) -> Optional[np.ndarray]:
    """p99 pair time (the slow side) from the raw samples; None with too few samples."""
    s = samples[(samples["peer"] >= 0) & ((samples["flags"] & FLAG_AUXILIARY_MASK) == 0)]
    if s.empty:
        return None
    t = (s["t_done_ns"].to_numpy(np.int64) - s["t_post_ns"].to_numpy(np.int64)).astype(np.float64)
    rank = s["rank"].to_numpy(np.int64)
    peer = s["peer"].to_numpy(np.int64)
    ok = (rank >= 0) & (rank < n) & (peer >= 0) & (peer < n) & (t > 0)
    key = rank[ok] * n + peer[ok]
    t = t[ok]
    if not len(key):
        return None
    order = np.lexsort((t, key))
    key, t = key[order], t[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    counts = np.diff(np.r_[starts, len(key)])
    if np.median(counts) < MIN_SAMPLES_PER_PAIR_FOR_TAIL:
        return None
    # linear-interpolated 99th percentile within each (sorted) group
    pos = starts + 0.99 * (counts - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, starts + counts - 1)
    frac = pos - lo
    p99 = t[lo] * (1 - frac) + t[hi] * frac
    m = np.full(n * n, np.nan)
    m[key[starts]] = p99
    m = m.reshape(n, n)
    if inst.metric == "bandwidth":
        # a time, turned into a "rate" so _log_time treats it like the pair matrix
        nbytes = float(inst.get("bytes", 1) or 1) * float(inst.get("window", 1) or 1)
        with np.errstate(divide="ignore"):
            m = nbytes / m
    return m


def _matrices(inst: TestInstance, n: int) -> List[_Matrix]:
    bandwidth = inst.metric == "bandwidth"
    out = []
    pm = inst.pair_matrix()
    if pm is not None and pm.shape == (n, n):
        logt = _log_time(pm, bandwidth)
        np.fill_diagonal(logt, np.nan)
        sym = _is_symmetric(logt)
        out.append(_Matrix(inst, "centre", logt, sym, "bandwidth" if bandwidth else "latency",
                           bandwidth))
    tail = _tail_matrix(inst, n, inst.samples())
    if tail is not None:
        logt = _log_time(tail, bandwidth)
        np.fill_diagonal(logt, np.nan)
        # A ping-pong pair is measured by one end only: mirror it, like the pair matrix.
        if out and out[0].symmetric:
            logt = np.where(np.isfinite(logt), logt, logt.T)
        out.append(_Matrix(inst, "tail", logt, _is_symmetric(logt),
                           "slow-side bandwidth (p99)" if bandwidth else "latency tail (p99)",
                           bandwidth))
    return out


def _is_symmetric(logt: np.ndarray) -> bool:
    both = np.isfinite(logt) & np.isfinite(logt.T)
    if both.sum() < 2:
        return False
    return bool(np.allclose(logt[both], logt.T[both], atol=1e-9))


@dataclass
class _SideEffect:
    rank: int
    side: str
    effect: float
    z: float
    ratio: float


def _describe(m: _Matrix, ratio: float) -> str:
    if m.bandwidth:
        return f"{m.what} {100.0 / ratio:.0f}% of the healthy population"
    return f"{m.what} {ratio:.1f}x the healthy population"


class _Analyser:
    def __init__(self, result: ResultFile):
        self.result = result
        self.ranks = result.ranks()
        self.n = int(result.attrs.get("nranks", len(self.ranks)) or len(self.ranks))
        self.host = {int(r): str(h) for r, h in zip(self.ranks["rank"], self.ranks["host"])}
        self.gpu = {int(r): int(g) for r, g in zip(self.ranks["rank"], self.ranks["gpu"])} \
            if "gpu" in self.ranks else {}
        self.nic = {int(r): str(x) for r, x in zip(self.ranks["rank"], self.ranks["nic"])} \
            if "nic" in self.ranks else {}
        self.findings: List[Finding] = []
        self.links: List[Tuple[int, int, Finding]] = []
        self.notes: List[str] = []
        self.cleared_pairs: set = set()  # (rank, peer) cleared alone by a serial retest
        # parallel pass index -> {(rank, peer): cleared?} for every pair its retest measured
        # per test: (rank, peer) -> True cleared alone, False confirmed slow alone, None
        # inconclusive (on shared CPUs, slower but under SHARED_CPU_LINK_RATIO)
        self.retested: Dict[int, Dict[Tuple[int, int], Optional[bool]]] = {}
        # (test index, measure) -> each pair's time relative to the healthy pairs' median
        self.pair_ratio: Dict[Tuple[int, str], np.ndarray] = {}
        # (test index, measure) -> the healthy pairs' median time (ns), latency only
        self.healthy_ns: Dict[Tuple[int, str], float] = {}
        # hosts whose CPUs were shared (a /validity oversubscribed or busy_host row;
        # "*" = every host): their latency tails hold the kernel scheduler's slices
        self.scheduled_hosts: set = set()
        self.busy_hosts: set = set()   # a /validity busy_host row ("*" = every host)
        self.cannot: List[str] = []
        self.used: List[str] = []
        self.matrices_judged = 0
        self.noisy: List[str] = []
        # slow links that cannot be judged (shared CPUs, not retested alone): "cannot tell"
        self.unconfirmed: List[str] = []
        # pairs the serial retest confirmed slow alone: (parent test, rank, peer, figures)
        self.confirmed_slow: List[Tuple[str, int, int, str]] = []

    def name(self, inst: TestInstance) -> str:
        return f"{inst.index:04d} {inst.get('name')}"

    # -- all-pairs --------------------------------------------------------------------
    def all_pairs(self, instances: Sequence[TestInstance]):
        for inst in instances:
            if str(inst.get("pattern")) != "all-pairs" or str(inst.get("pass")) == "serial-retest":
                continue
            if inst.get("condition", "quiet") != "quiet":
                continue  # congested by design: neighbour traffic is not a host's fault
            for m in _matrices(inst, self.n):
                self._judge(m)

    def _judge(self, m: _Matrix):
        y = m.logt
        measured = np.isfinite(y)
        ranks_in = np.flatnonzero(measured.any(axis=0) | measured.any(axis=1))
        label = f"{self.name(m.inst)} ({m.measure})"
        if len(ranks_in) < MIN_RANKS:
            self.cannot.append(f"{label}: {len(ranks_in)} ranks measured; naming a culprit "
                               f"from pairs needs at least {MIN_RANKS}")
            return
        if measured.sum() < len(ranks_in) * (len(ranks_in) - 1) // 2:
            self.notes.append(f"{label}: only {int(measured.sum())} pairs measured; not used")
            return
        self.matrices_judged += 1
        if label.split(" (")[0] not in self.used:
            self.used.append(label.split(" (")[0])
        d = median_polish(y)
        sides: List[Tuple[str, np.ndarray]]
        if m.symmetric:
            # a round trip: both ends' effects are one (row = column), direction unknown
            sides = [("both", d.row + d.col)]
        else:
            sides = [("send", d.row), ("receive", d.col)]
        resid_sigma = robust_sigma(d.resid[measured])
        # the noise an effect inherits from the residuals (median of ~n-1 pairs)
        inherited = resid_sigma * 1.2533 / math.sqrt(max(len(ranks_in) - 1, 1))
        flagged: Dict[Tuple[int, str], _SideEffect] = {}
        candidates: Dict[Tuple[int, str], _SideEffect] = {}
        for side, eff in sides:
            e = eff[ranks_in]
            centre = float(np.median(e))
            spread = robust_sigma(e)
            if len(e) < 10:
                # the MAD of a handful of effects is itself a noisy number: lean on the
                # spread the residuals predict for an effect as much as on it
                spread = 0.5 * (spread + inherited)
            sigma = max(spread, inherited, 0.01)
            for r, value in zip(ranks_in, e):
                z = (value - centre) / sigma
                ratio = math.exp(value - centre)
                se = _SideEffect(int(r), side, float(value - centre), float(z), ratio)
                candidates[(int(r), side)] = se
                if z >= Z_CULPRIT and ratio >= MIN_RATIO[m.measure]:
                    flagged[(int(r), side)] = se
        # the other side of a flagged rank, at the lower bar
        for (r, side), se in list(flagged.items()):
            other = {"send": "receive", "receive": "send"}.get(side)
            if other and (r, other) not in flagged:
                o = candidates.get((r, other))
                if o and o.z >= Z_OTHER_SIDE and o.ratio >= MIN_RATIO_OTHER_SIDE[m.measure]:
                    flagged[(r, other)] = o
        bad_ranks = {r for r, _ in flagged}
        # healthy population: pairs touching no flagged rank
        healthy = measured.copy()
        for r in bad_ranks:
            healthy[r, :] = False
            healthy[:, r] = False
        healthy_vals = y[healthy]
        if len(healthy_vals) < 3:
            healthy_vals = y[measured]
        ref = float(np.median(healthy_vals))
        pair_sigma = robust_sigma(healthy_vals)
        # slow pair: outside ~95 % of the healthy pairs and slower by the practical margin
        slow_bar = max(2.0 * pair_sigma, math.log(MIN_RATIO[m.measure]))
        slow = measured & (y - ref > slow_bar)
        self.pair_ratio[(m.inst.index, m.measure)] = np.exp(y - ref)
        if m.inst.metric == "latency":
            self.healthy_ns[(m.inst.index, m.measure)] = math.exp(ref)
        slow_elsewhere = (int((slow & healthy).sum()), int(healthy.sum()))
        if not flagged and pair_sigma > NOISY_SIGMA:
            self.noisy.append(f"{label}: pair-to-pair spread {math.exp(pair_sigma):.2f}x "
                              f"(robust sigma of log time) with no rank standing out")
        for (r, side), se in flagged.items():
            margin = measured & (y - ref >= math.log(MIN_RATIO[m.measure]))
            if side == "send":
                touching = measured[r, :]
                vals = y[r, touching]
                k = int(slow[r, :].sum())
                over = int(margin[r, :].sum())
            elif side == "receive":
                touching = measured[:, r]
                vals = y[touching, r]
                k = int(slow[:, r].sum())
                over = int(margin[:, r].sum())
            else:
                touching = measured[r, :] | measured[:, r]
                vals = np.r_[y[r, measured[r, :]], y[measured[:, r], r]]
                k = int((slow[r, :] | slow[:, r]).sum())
                over = int((margin[r, :] | margin[:, r]).sum())
            ratio = math.exp(float(np.median(vals)) - ref)
            self.findings.append(Finding(
                rank=r, side=side, test=m.inst.index, test_name=str(m.inst.get("name")),
                measure=m.measure, symptom=_describe(m, ratio), ratio=ratio, z=se.z,
                slow_touching=(k, int(touching.sum())), slow_elsewhere=slow_elsewhere,
                over_margin=(over, int(touching.sum()))))
        # bad links: large residual, neither end explains it
        if True:  # bad links
            link_sigma = max(resid_sigma, 0.01)
            for s, p in zip(*np.nonzero(measured)):
                if m.symmetric and s > p:
                    continue
                e = d.resid[s, p]
                if not np.isfinite(e):
                    continue
                total = y[s, p] - ref
                # also slow against the healthy pairs (the bar the evidence counts):
                # a residual that stands out of a tight fit but not out of the pairs'
                # own spread is noise, not a cable
                if e / link_sigma >= Z_LINK and math.exp(total) >= MIN_LINK_RATIO[m.measure] \
                        and slow[s, p] \
                        and int(s) not in bad_ranks and int(p) not in bad_ranks:
                    ratio = math.exp(total)
                    self.links.append((int(s), int(p), Finding(
                        rank=int(s), side="link", test=m.inst.index,
                        test_name=str(m.inst.get("name")), measure=m.measure,
                        symptom=_describe(m, ratio), ratio=ratio, z=float(e / link_sigma),
                        slow_elsewhere=slow_elsewhere)))

    # -- serial retests ---------------------------------------------------------------
    def retests(self, instances: Sequence[TestInstance]):
        by_index = {i.index: i for i in instances}
        for inst in instances:
            if str(inst.get("pass")) != "serial-retest":
                continue
            s = inst.samples()
            s = s[s["peer"] >= 0]
            if s.empty:
                continue
            bandwidth = inst.metric == "bandwidth"
            t = (s["t_done_ns"] - s["t_post_ns"]).astype(np.float64)
            s = s.assign(v=(s["bytes"] / t) if bandwidth else t / inst.sample_divisor)
            control = (s["flags"].to_numpy() & FLAG_CONTROL_PAIR) != 0
            pairs = s[~control].groupby(["rank", "peer"])["v"].median()
            parent = by_index.get(int(inst.get("retest_of", -1)))
            names = ", ".join(f"{self.host.get(r, r)} -> {self.host.get(p, p)} "
                              f"{_fmt(v, bandwidth)}" for (r, p), v in pairs.items())
            if not control.any():
                self.notes.append(
                    f"serial retest {self.name(inst)} re-measured {len(pairs)} pair(s) alone "
                    f"({names}) but has no control pairs measured the same way: it can neither "
                    f"clear nor confirm them; the parallel pass "
                    f"{self.name(parent) if parent else '?'} is what was judged")
                continue
            # Controls are the reference only while they are healthy themselves: a control
            # pair through a rank the parallel pass found grossly slow (drawn from the
            # middle of a matrix where many pairs touch a culprit) would make a slow pair
            # look normal. Mild findings (under CONTROL_TAINT_RATIO) are what the retest
            # is there to judge: they do not disqualify a control.
            suspects = {f.rank for f in self.findings
                        if parent is not None and f.test == parent.index
                        and f.ratio >= CONTROL_TAINT_RATIO}
            ctrl_rows = s[control]
            clean = ctrl_rows[~ctrl_rows["rank"].isin(suspects) & ~ctrl_rows["peer"].isin(suspects)]
            if clean.empty:
                self.notes.append(
                    f"serial retest {self.name(inst)}: every control pair touches a host the "
                    f"parallel pass found at least {CONTROL_TAINT_RATIO:g}x slow "
                    f"({', '.join(self.host.get(r, str(r)) for r in sorted(suspects))}):"
                    f" it can neither clear nor confirm {names}")
                continue
            ctrl = float(clean["v"].median())
            for (r, p), v in pairs.items():
                rel = v / ctrl if bandwidth else ctrl / v
                cleared: Optional[bool] = rel >= 1 / MIN_RATIO["centre"]
                if cleared:
                    self.cleared_pairs.add((int(r), int(p)))
                    word = "cleared (interference in the parallel pass, not a bad link)"
                elif (rel > 1 / SHARED_CPU_LINK_RATIO
                      and self._shared_cpus([self.host.get(int(r), str(r)),
                                             self.host.get(int(p), str(p))])):
                    # One pair alone moves by 1.6-1.7x on shared CPUs (SHARED_CPU_LINK_RATIO):
                    # a retest under that bar neither clears nor confirms (None). Seen: a
                    # clean link "confirmed" at 143 % of the controls' time while other work
                    # kept a CPU busy, and named.
                    cleared = None
                    word = (f"inconclusive (slower than the controls, but under the "
                            f"{SHARED_CPU_LINK_RATIO:g}x one pair moves by alone on CPUs the run "
                            f"shared (validity))")
                else:
                    word = "confirmed slow alone"
                if parent is not None:
                    self.retested.setdefault(parent.index, {})[(int(r), int(p))] = cleared
                    if cleared is False:
                        self.confirmed_slow.append(
                            (self.name(parent), int(r), int(p),
                             f"{_fmt(v, bandwidth)}, {100 * v / ctrl:.0f}% of the control "
                             f"pairs' {_fmt(ctrl, bandwidth)}"))
                # said in the measure's own terms: a time as a share of the controls'
                # time, a bandwidth as a share of their bandwidth
                self.notes.append(f"serial retest {self.name(inst)}: {self.host.get(r, r)} -> "
                                  f"{self.host.get(p, p)} {_fmt(v, bandwidth)} is "
                                  f"{100 * v / ctrl:.0f}% of the control pairs' "
                                  f"{_fmt(ctrl, bandwidth)}: {word}")

    # -- supporting evidence ----------------------------------------------------------
    def pairs_tests(self, instances: Sequence[TestInstance]):
        for inst in instances:
            if str(inst.get("pattern")) != "pairs" or inst.get("kind") not in ("latency",
                                                                                "bandwidth"):
                continue
            if inst.get("condition", "quiet") != "quiet":
                continue
            s = inst.samples()
            s = s[(s["peer"] >= 0) & ((s["flags"] & FLAG_AUXILIARY_MASK) == 0)]
            if s.empty:
                continue
            bandwidth = inst.metric == "bandwidth"
            t = (s["t_done_ns"] - s["t_post_ns"]).astype(np.float64)
            med = s.assign(t=t).groupby(["rank", "peer"])["t"].median()
            if len(med) < 3:
                continue
            centre = float(np.median(med))
            for (r, p), v in med.items():
                ratio = v / centre
                if ratio >= MIN_RATIO["centre"]:
                    for rank, side in ((int(r), "send" if bandwidth else "both"),
                                       (int(p), "receive" if bandwidth else "both")):
                        self.findings.append(Finding(
                            rank=rank, side=side, test=inst.index,
                            test_name=str(inst.get("name")), measure="pairs",
                            symptom=f"pairs test {self.name(inst)}: pair "
                                    f"{self.host.get(int(r), r)} -> {self.host.get(int(p), p)} "
                                    f"{ratio:.1f}x the median pair's time",
                            ratio=ratio, z=0.0, primary=False))

    def incast(self, instances: Sequence[TestInstance]):
        for inst in instances:
            if inst.get("kind") != "incast":
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
                    self.findings.append(Finding(
                        rank=int(r), side="send", test=inst.index, test_name=str(inst.get("name")),
                        measure="incast",
                        symptom=f"incast {self.name(inst)}: sends at {100 * g / centre:.0f}% of "
                                f"the median sender", ratio=centre / g, z=0.0, primary=False))
            probe = inst.get("probe_p99_ns")
            if probe is not None and np.isfinite(float(probe)) and float(probe) > 0:
                self.notes.append(f"incast {self.name(inst)}: latency probe p99 "
                                  f"{float(probe) / 1e3:.1f} us while the incast ran (a "
                                  f"congestion figure, not blamed on a host)")

    def collectives(self, instances: Sequence[TestInstance]):
        for inst in instances:
            if inst.get("kind") not in ("allreduce", "alltoall"):
                continue
            s = inst.samples()
            s = s[(s["peer"] < 0) & ((s["flags"] & FLAG_AUXILIARY_MASK) == 0)]
            if s.empty or s["rank"].nunique() < 3:
                continue
            first = s.groupby("iter")["t_post_ns"].transform("min")
            late = (s["t_post_ns"] - first).astype(np.float64)
            per_rank = s.assign(late=late).groupby("rank")["late"].median()
            spread = float(np.median(per_rank))
            last = s.loc[s.groupby("iter")["t_post_ns"].idxmax(), "rank"].value_counts(
                normalize=True)
            iters = s["iter"].nunique()
            for r, frac in last.items():
                if frac >= 0.75 and iters >= 10 and per_rank[r] > 4 * max(spread, 1.0):
                    self.findings.append(Finding(
                        rank=int(r), side="both", test=inst.index, test_name=str(inst.get("name")),
                        measure="collective",
                        symptom=f"collective {self.name(inst)}: arrives last in "
                                f"{100 * frac:.0f}% of {iters} iterations (median "
                                f"{per_rank[r] / 1e3:.1f} us after the first rank)",
                        ratio=per_rank[r] / max(spread, 1.0), z=0.0, primary=False))

    def counters(self, result: ResultFile):
        c = result.all_counters()
        if c.empty:
            return
        c = c.assign(host=c["rank"].map(lambda r: self.host.get(int(r), str(r))))
        # one reader per host: the same counter read by several ranks of a host would
        # count several times, so take each (test, host, source, name) once
        c = c.drop_duplicates(["test", "host", "source", "name"])
        hosts = sorted(set(self.host.values()))
        lowest_rank = {}
        for r, h in sorted(self.host.items()):
            lowest_rank.setdefault(h, r)
        # retransmissions per segment sent
        tcp = c[c["source"] == "snmp:Tcp"].pivot_table(index="host", columns="name",
                                                        values="delta", aggfunc="sum")
        if {"RetransSegs", "OutSegs"} <= set(tcp.columns) and len(tcp) >= MIN_RANKS:
            rate = (tcp["RetransSegs"] / tcp["OutSegs"].clip(lower=1)).fillna(0.0)
            centre = float(np.median(rate))
            sigma = max(robust_sigma(rate), 1e-4)
            for h, v in rate.items():
                if v >= 0.005 and v >= 5 * centre and (v - centre) / sigma >= Z_CULPRIT:
                    self.findings.append(Finding(
                        rank=lowest_rank.get(h, -1), side="send", test=-1, test_name="counters",
                        measure="counters",
                        symptom=f"retransmissions {100 * v:.2f}% of its segments (median host "
                                f"{100 * centre:.2f}%)", ratio=v / max(centre, 1e-6),
                        z=(v - centre) / sigma, primary=False))
        # errors and drops: per host sum over every test
        err = c[c["name"].map(lambda x: bool(ERROR_COUNTER.search(str(x))))]
        derived = self._ip_local_drops(c)
        rows = []
        for (h, source, name), delta in err.groupby(["host", "source", "name"])["delta"].sum().items():
            if delta > 0:
                rows.append((h, f"{source} {name}", int(delta), _side_of(str(name))))
        rows += derived
        if not rows:
            return
        by_host: Dict[str, List[Tuple[str, int, str]]] = {}
        for h, what, delta, side in rows:
            by_host.setdefault(h, []).append((what, delta, side))
        # an error only one or two hosts show points at them; one every host shows is the
        # fabric's (or the counter's) habit
        if len(by_host) * 3 > len(hosts):
            self.notes.append("error/drop counters moved on "
                              f"{len(by_host)} of {len(hosts)} hosts: not blamed on any")
            return
        for h, items in by_host.items():
            sides = {s for _, _, s in items}
            side = sides.pop() if len(sides) == 1 else "both"
            text = ", ".join(f"{w} +{d}" for w, d, _ in items[:4])
            hardware = any(not w.startswith("ip local") for w, _, _ in items)
            self.findings.append(Finding(
                rank=lowest_rank.get(h, -1), side=side, test=-1, test_name="counters",
                measure="counters", symptom=f"errors: {text}", ratio=1.0, z=0.0,
                primary=hardware))

    @staticmethod
    def _ip_local_drops(c: pd.DataFrame) -> List[Tuple[str, str, int, str]]:
        """Packets the host's own IP layer received but did not deliver, or was asked to
        send but did not transmit (filters, discards): a host dropping its own traffic."""
        ip = c[c["source"] == "snmp:Ip"].pivot_table(index="host", columns="name",
                                                      values="delta", aggfunc="sum")
        out = []
        for h, row in ip.iterrows():
            parts = []
            if {"InReceives", "InDelivers"} <= set(row.index):
                lost_in = int(row["InReceives"] - row["InDelivers"])
                if lost_in > 0 and lost_in >= 0.002 * max(row["InReceives"], 1):
                    parts.append(("ip local drops in", lost_in, "receive"))
            if {"OutRequests", "OutTransmits"} <= set(row.index):
                lost_out = int(row["OutRequests"] - row["OutTransmits"])
                if lost_out > 0 and lost_out >= 0.002 * max(row["OutRequests"], 1):
                    parts.append(("ip local drops out", lost_out, "send"))
            out += [(str(h), w, d, s) for w, d, s in parts]
        return out

    # -- putting it together ----------------------------------------------------------
    def _within_scheduler_slices(self, hosts: Sequence[str], f: Finding,
                                 measures: Sequence[str] = ("tail",)) -> Optional[float]:
        """The extra time (ns) of a latency finding (of `measures`) when its hosts
        shared their CPUs (validity) and the extra is within a few scheduler slices
        (SCHEDULER_SLICES_NS): the kernel's, not the fabric's. None otherwise."""
        if f.measure not in measures or (f.test, f.measure) not in self.healthy_ns:
            return None
        if not self._shared_cpus(hosts):
            return None
        extra = self.healthy_ns[(f.test, f.measure)] * (f.ratio - 1.0)
        bound = BUSY_SLICES_NS if self._busy(hosts) else SCHEDULER_SLICES_NS
        return extra if extra < bound else None

    def _cleared_by_retest(self, host: str, f: Finding) -> bool:
        """A centre (median) finding whose every retested pair on the finding's side was as
        fast alone as the control pairs: the parallel pass's interference, not the host.
        Tail findings stand: the retest compares medians, and a lossy link's median is
        normal while its tail is not."""
        pairs = self.retested.get(f.test)
        if f.measure != "centre" or not pairs:
            return False
        mine = [ok for (r, p), ok in pairs.items()
                if (f.side in ("send", "both") and r == f.rank)
                or (f.side in ("receive", "both") and p == f.rank)]
        if not mine or not all(mine):
            return False
        self.notes.append(f"{host} looked slow in {f.test:04d} {f.test_name} ({f.symptom}) but "
                          f"all {len(mine)} of its retested pair(s) were as fast alone as the "
                          "control pairs: not named")
        return True

    def _host_within_slices(self, host: str, f: Finding) -> bool:
        """A host's latency finding (median or tail) on CPUs the run shared whose extra
        time is within the scheduler's slices: on the emulated cluster a clean host's
        pairs sat at ~4 ms medians (96x) in one run, ~15 us in the next. It cannot be
        told from the scheduler: "cannot tell", not a culprit. (A lossy port's
        retransmission timeouts are far above it and still name the host.)"""
        extra = self._within_scheduler_slices([host], f, ("centre", "tail"))
        if extra is None:
            return False
        self.unconfirmed.append(
            f"{host}: {f.symptom} in {f.test:04d} {f.test_name}, {extra / 1e6:.2f} ms more: "
            "within the kernel scheduler's slices on CPUs the run shared (validity), so "
            "it cannot be told from the scheduler (run one rank per CPU)")
        return True

    def _host_within_cpu_share(self, host: str, f: Finding) -> bool:
        """A host's median (centre) finding on CPUs the run shared (validity) that is
        under SHARED_CPU_HOST_RATIO: CPU sharing alone moves a host's pairs that much,
        so it cannot be told from the scheduler: "cannot tell", not a culprit."""
        if f.measure != "centre" or f.ratio >= SHARED_CPU_HOST_RATIO or not self._shared_cpus([host]):
            return False
        self.unconfirmed.append(
            f"{host}: {f.symptom} in {f.test:04d} {f.test_name}: under the "
            f"{SHARED_CPU_HOST_RATIO:g}x that sharing CPUs alone moves a host's pairs (validity), "
            "so it cannot be told from the scheduler (run one rank per CPU)")
        return True

    def _minority_of_pairs(self, host: str, f: Finding) -> bool:
        """A matrix finding resting on fewer than MIN_SLOW_SHARE of the rank's pairs (each
        at least the practical margin slower than the healthy median)."""
        k, n = f.over_margin
        if n == 0 or k >= MIN_SLOW_SHARE * n:
            return False
        self.notes.append(f"{host} looked slow in {f.test:04d} {f.test_name} ({f.symptom}) but "
                          f"only {k}/{n} pairs {_touching(f.side)} were "
                          f"{MIN_RATIO[f.measure]:g}x slower than the healthy pairs (a fault at its "
                          "end slows most of them): not named")
        return True

    def _confirmed_alone(self, test: int, s: int, p: int) -> bool:
        """The serial retest measured s -> p (or p -> s) alone and found it slow."""
        pairs = self.retested.get(test, {})
        return pairs.get((s, p)) is False or pairs.get((p, s)) is False

    def _shared_cpus(self, hosts: Sequence[str]) -> bool:
        return "*" in self.scheduled_hosts or all(h in self.scheduled_hosts for h in hosts)

    def _busy(self, hosts: Sequence[str]) -> bool:
        """Other work held CPUs of any of these hosts (validity busy_host)."""
        return "*" in self.busy_hosts or any(h in self.busy_hosts for h in hosts)

    def _scheduler_note(self, who: str, hosts: Sequence[str], f: Finding) -> bool:
        extra = self._within_scheduler_slices(hosts, f)
        if extra is None:
            return False
        self.notes.append(f"{who}: p99 {f.ratio:.1f}x the healthy pairs' in {f.test:04d} "
                          f"{f.test_name}, {extra / 1e6:.2f} ms more: within the kernel "
                          f"scheduler's slices on CPUs the run shared (validity), not named")
        return True

    def _worst_cleared(self, f: Finding) -> float:
        """The slowest (time relative to the healthy pairs) pair of f's test and measure
        that the serial retest cleared; 0 when none was."""
        if f.measure != "centre":
            return 0.0  # the retest compares medians: it clears no tail
        ratio = self.pair_ratio.get((f.test, f.measure))
        cleared = [float(ratio[r, p]) for (r, p), ok in self.retested.get(f.test, {}).items()
                   if ok and ratio is not None and np.isfinite(ratio[r, p])]
        return max(cleared, default=0.0)

    def culprits(self) -> List[Culprit]:
        by_host: Dict[str, List[Finding]] = {}
        for f in self.findings:
            by_host.setdefault(self.host.get(f.rank, f"rank {f.rank}"), []).append(f)
        out: List[Culprit] = []
        for h, fs in by_host.items():
            first_note = len(self.notes)
            primary = [f for f in fs if f.primary and not self._cleared_by_retest(h, f)
                       and not self._minority_of_pairs(h, f)
                       and not self._host_within_slices(h, f)
                       and not self._host_within_cpu_share(h, f)]
            if not primary:
                continue  # supporting evidence alone names nobody
            # The host is named on its other findings: the notes on the findings set
            # aside must not say "not named" next to its name.
            self.notes[first_note:] = [
                n.removesuffix(": not named") + ": that finding set aside (named on the others)"
                if n.endswith(": not named") else n for n in self.notes[first_note:]]
            directed = {f.side for f in primary if f.side in ("send", "receive")}
            if directed == {"send", "receive"} or (not directed and primary):
                direction = "both"
            else:
                direction = directed.pop()
            ranks = sorted({f.rank for f in primary if f.rank >= 0})
            symptoms, evidence = [], []
            for f in sorted(primary, key=lambda f: -f.ratio):
                where = f"{f.test:04d} {f.test_name}" if f.test >= 0 else f.test_name
                side = "" if f.side in ("both", direction) else f"{f.side}: "
                symptoms.append(f"{side}{f.symptom} [{where}]" if f.measure != "counters"
                                else f.symptom)
                if f.slow_touching[1]:
                    # The naming counts pairs over the practical margin; "slow" also needs
                    # 2 sigma of the healthy pairs, which a noisy matrix lifts above a real
                    # fault. When the two counts differ both are said, so a named host
                    # never stands on a bare "0/5 slow".
                    over = ""
                    if f.over_margin[1] and f.over_margin[0] != f.slow_touching[0]:
                        over = (f", {f.over_margin[0]}/{f.over_margin[1]} at least "
                                f"{MIN_RATIO[f.measure]:g}x slower than the healthy median")
                    evidence.append(
                        f"{where} ({f.measure}): {f.slow_touching[0]}/{f.slow_touching[1]} "
                        f"pairs {_touching(f.side)} slow vs {f.slow_elsewhere[0]}/"
                        f"{f.slow_elsewhere[1]} not touching a culprit{over}, z={f.z:.1f}")
            supporting = [f for f in fs if not f.primary]
            for f in supporting:
                evidence.append(f.symptom)
            score = max(_score(f) for f in primary)
            tests = {(f.test, f.measure) for f in primary}
            if len(tests) >= 2:
                score = min(1.0, score + 0.15)
            if supporting:
                score = min(1.0, score + 0.05)
            confidence = "high" if score >= 0.75 else "medium" if score >= 0.5 else "low"
            out.append(Culprit(host=h, ranks=ranks, gpus=[self.gpu.get(r, -1) for r in ranks],
                               nics=[self.nic.get(r, "") for r in ranks], direction=direction,
                               symptoms=symptoms, evidence=evidence, confidence=confidence,
                               score=round(score, 3)))
        culprit_hosts = {c.host for c in out}
        seen_links = set()
        directions = {(s, p) for s, p, _ in self.links}
        for s, p, f in self.links:
            hs, hp = self.host.get(s, str(s)), self.host.get(p, str(p))
            if hs in culprit_hosts or hp in culprit_hosts or frozenset((s, p)) in seen_links:
                continue
            if (s, p) in self.cleared_pairs or (p, s) in self.cleared_pairs:
                # Slow in the parallel pass, as fast as the controls alone: interference.
                self.notes.append(f"link {hs} -> {hp} was slow in {f.test:04d} {f.test_name} "
                                  "but cleared by the serial retest: not named")
                continue
            if self._scheduler_note(f"link {hs} -> {hp}", [hs, hp], f):
                continue
            if (f.measure == "centre" and f.ratio < SHARED_CPU_LINK_RATIO
                    and self._shared_cpus([hs, hp])):
                self.notes.append(f"link {hs} -> {hp}: {f.ratio:.2f}x the healthy pairs' time in "
                                  f"{f.test:04d} {f.test_name}, under the {SHARED_CPU_LINK_RATIO:g}x "
                                  "one pair can be resolved to on CPUs the run shared (validity): "
                                  "not named")
                continue
            cleared_worst = self._worst_cleared(f)
            if f.ratio <= cleared_worst:
                # The retest measured the worst pairs alone and found them healthy; a link
                # no slower than those in the same pass is the same interference.
                self.notes.append(f"link {hs} -> {hp} was slow in {f.test:04d} {f.test_name} "
                                  f"({f.ratio:.2f}x the healthy pairs' time) but no slower than "
                                  f"a pair the serial retest cleared ({cleared_worst:.2f}x): "
                                  "not named")
                continue
            if (f.measure == "centre" and self._shared_cpus([hs, hp])
                    and not self._confirmed_alone(f.test, s, p)):
                # On shared CPUs the parallel pass put clean links at 7-9 % of the healthy
                # bandwidth (emulated cluster, 6 ranks on 2 CPUs): one pair's median there
                # is the scheduler's as much as the link's. Only the pair measured alone
                # can say which; until then the answer is "cannot tell", not a culprit.
                self.unconfirmed.append(
                    f"link {hs} -> {hp} ({f.symptom}) in {f.test:04d} {f.test_name} "
                    "was not measured alone by the serial retest, and on CPUs the run shared "
                    "(validity) the parallel pass cannot tell a link from the scheduler "
                    "(raise all_pairs.retest_worst, or run one rank per CPU)")
                continue
            seen_links.add(frozenset((s, p)))
            if (p, s) in directions and s != p:
                f.symptom += " (both directions)"
            out.append(Culprit(host=hs, ranks=[s, p], gpus=[self.gpu.get(s, -1),
                                                            self.gpu.get(p, -1)],
                               nics=[self.nic.get(s, ""), self.nic.get(p, "")],
                               direction="link", symptoms=[f"{f.symptom} [{f.test:04d} "
                                                           f"{f.test_name}]"],
                               evidence=[f"residual z={f.z:.1f} after both ends' effects; "
                                         f"{f.slow_elsewhere[0]}/{f.slow_elsewhere[1]} pairs "
                                         "slow in the matrix (this link's included)"],
                               confidence="medium" if f.z >= 2 * Z_LINK else "low",
                               score=round(min(1.0, f.z / (3 * Z_LINK)), 3), peer_host=hp))
        out.sort(key=lambda c: (-c.score, c.host))
        return out


def _unexplained_confirmed(a: "_Analyser", culprits: Sequence[Culprit]) -> List[str]:
    """Pairs the serial retest confirmed slow alone that no named culprit explains (its
    sender named on the send side, its receiver on the receive side, or the link). Seen
    on a loaded emulated cluster: a planted slow receiver's pair confirmed alone at 18 %
    of the controls, while the receiver did not stand out of a matrix whose healthy
    pairs spread 15x; without this line it was missed in silence."""
    sends = {r for c in culprits if c.direction in ("send", "both") for r in c.ranks}
    receives = {r for c in culprits if c.direction in ("receive", "both") for r in c.ranks}
    links = {tuple(c.ranks) for c in culprits if c.direction == "link"}
    out = []
    for test, r, p, figures in a.confirmed_slow:
        if r in sends or p in receives or (r, p) in links or (p, r) in links:
            continue
        out.append(f"{a.host.get(r, r)} -> {a.host.get(p, p)} in {test} was confirmed slow "
                   f"alone ({figures}) but neither end stands out in the matrix and no culprit "
                   "named explains it: a fault on that path is not localized (run on quiet, "
                   "unshared CPUs, or retest more pairs: all_pairs.retest_worst)")
    return out


def _touching(side: str) -> str:
    return {"send": "sent by it", "receive": "into it"}.get(side, "with it")


def _side_of(name: str) -> str:
    n = name.lower()
    if n.startswith("rx") or "rcv" in n or "_in" in n or n.startswith("in"):
        return "receive"
    if n.startswith("tx") or "xmit" in n or "_out" in n or n.startswith("out"):
        return "send"
    return "both"


def _score(f: Finding) -> float:
    k, n = f.slow_touching
    touching = k / n if n else 0.5
    o_k, o_n = f.slow_elsewhere
    elsewhere = o_k / o_n if o_n else 0.0
    strength = min(1.0, f.z / (2 * Z_CULPRIT)) if f.z > 0 else 0.5
    return (0.3 + 0.7 * touching) * (1.0 - elsewhere) * (0.5 + 0.5 * strength)


def _fmt(v: float, bandwidth: bool) -> str:
    return f"{v:.3g} GB/s" if bandwidth else f"{v / 1e3:.3g} us"


def _baseline_notes(result: ResultFile, baseline: ResultFile) -> Tuple[List[str], List[Culprit]]:
    """Whole-fabric comparison: a fabric that is uniformly slower has no culprit host
    inside the run, only against a known-good run of the same scenario."""
    notes, fabric = [], []
    base = {(str(i.get("case")), str(i.get("condition")), str(i.get("pass"))): i
            for i in baseline.instances()}
    for inst in result.instances():
        if str(inst.get("pattern")) != "all-pairs" or str(inst.get("pass")) == "serial-retest":
            continue
        key = (str(inst.get("case")), str(inst.get("condition")), str(inst.get("pass")))
        b = base.get(key)
        pm = inst.pair_matrix()
        bm = b.pair_matrix() if b is not None else None
        if pm is None or bm is None:
            if b is None:
                notes.append(f"baseline has no instance like {inst.index:04d} {inst.get('name')}")
            continue
        bandwidth = inst.metric == "bandwidth"
        now, before = np.nanmedian(pm), np.nanmedian(bm)
        if not (np.isfinite(now) and np.isfinite(before)) or before <= 0 or now <= 0:
            continue
        slower = before / now if bandwidth else now / before
        notes.append(f"{inst.index:04d} {inst.get('name')}: median pair {slower:.2f}x the "
                     f"baseline's time")
        if slower >= MIN_RATIO["centre"]:
            fabric.append(Culprit(host="(all hosts)", ranks=[], gpus=[], nics=[],
                                  direction="both",
                                  symptoms=[f"the whole fabric: median pair {slower:.2f}x the "
                                            f"baseline's time [{inst.index:04d} "
                                            f"{inst.get('name')}]"],
                                  evidence=[f"baseline {baseline.path}, same case"],
                                  confidence="medium", score=0.5))
    return notes, fabric


def diagnose(result: ResultFile, baseline: Optional[ResultFile] = None) -> Diagnosis:
    a = _Analyser(result)
    validity = _validity_rows(result)
    a.scheduled_hosts = {h for h, what, _ in validity if what in ("oversubscribed", "busy_host")}
    a.busy_hosts = {h for h, what, _ in validity if what == "busy_host"}
    instances = [i for i in result.instances()]
    a.all_pairs(instances)
    a.retests(instances)
    a.pairs_tests(instances)
    a.incast(instances)
    a.collectives(instances)
    a.counters(result)
    culprits = a.culprits()
    notes = list(a.notes)
    if baseline is not None:
        extra, fabric = _baseline_notes(result, baseline)
        notes += extra
        culprits += fabric
    culprits, withheld = _apply_validity(culprits, validity)
    a.unconfirmed += _unexplained_confirmed(a, culprits)
    if culprits:
        verdict = "not fit"
        reasons = []
        notes += withheld + a.unconfirmed
    elif withheld:
        # Someone stood out and only validity explains it: not "fit".
        verdict = "cannot tell"
        reasons = withheld + a.unconfirmed
    elif a.matrices_judged == 0:
        verdict = "cannot tell"
        reasons = a.cannot or ["no quiet all-pairs test in the file: nothing relates every "
                               "rank to every other (add a test with pattern: all-pairs)"]
    elif a.unconfirmed:
        verdict = "cannot tell"
        reasons = a.unconfirmed
    elif a.noisy and len(a.noisy) * 2 >= a.matrices_judged:
        verdict = "cannot tell"
        reasons = ["pairs are all equally noisy: " + "; ".join(a.noisy)]
    else:
        verdict = "fit"
        reasons = []
        notes += a.cannot + a.noisy
    return Diagnosis(verdict=verdict, culprits=culprits, reasons=reasons, notes=notes,
                     tests_used=a.used)


# Validity findings that make one host's own ranks slow (its CPUs are shared,
# clocked down or busy): a host that stands out only through them is not a
# fabric culprit. Clock uncertainty does not slow anyone.
HOST_SLOWING_VALIDITY = ("oversubscribed", "busy_host", "cpu_governor")


def _apply_validity(culprits: List[Culprit], validity: List[Tuple[str, str, str]]):
    """Don't blame a host for what validity explains (issue 16).

    A finding on that host alone (not "*") that slows its ranks explains a culprit
    found from timings: it is not named, and a note says why. A culprit with error
    counters of its own stays named (the CPUs do not make packets bad). A finding
    on every host ("*") explains no one host standing out: it is shown with each
    culprit as evidence, the diagnosis stands (issue 16: oversubscription with
    yielding waits bounds resolution, it does not withhold a diagnosis; other work
    on every host widens the scheduler's bound, BUSY_SLICES_NS). Returns (kept,
    withheld): one line per culprit not named, saying why (the diagnosis is then
    'cannot tell', never 'fit')."""
    kept, withheld = [], []
    every = [v for v in validity if v[0] in ("", "*")]
    for c in culprits:
        own = [v for v in validity if v[0] == c.host and v[1] in HOST_SLOWING_VALIDITY]
        # counter findings' symptoms (see counters()): errors or retransmissions
        from_counters = any(s.startswith(("errors:", "retransmissions")) for s in c.symptoms)
        if own and c.direction != "link" and not from_counters:
            withheld.append(f"{c.host} stands out ({'; '.join(c.symptoms)}) but its validity "
                            f"finding explains it: " +
                            "; ".join(f"{w} ({e})" for _, w, e in own) +
                            ": not named; fix the placement or load and run again")
            continue
        why = own + every
        if why:
            c.evidence.append("validity: " + "; ".join(f"{w} ({e})" for _, w, e in why))
        kept.append(c)
    return kept, withheld


def _validity_rows(result: ResultFile) -> List[Tuple[str, str, str]]:
    """/validity (docs/file-format.md): host, what, effect."""
    if result._file is None:
        return []
    t = result.validity()
    return [(str(r["host"]), str(r["what"]), str(r["effect"])) for r in t.to_dict("records")]


def print_diagnosis(d: Diagnosis, stream: Optional[TextIO] = None):
    for line in d.lines():
        print(line, file=stream)


def write_json(d: Diagnosis, path: str):
    with open(path, "w") as out:
        json.dump(d.to_dict(), out, indent=2)
        out.write("\n")


# ---------------------------------------------------------------------------------------
# used by `report` and `accept`

def culprits_html(d: "Diagnosis") -> str:
    """The culprits of the verdict (report, under the verdict block): a table, the notes
    and what diagnose judged. No verdict of its own: the verdict is verdict.py's."""
    from . import html as H
    parts = []
    if d.culprits:
        rows = [{"culprit": culprit_subject(c), "ranks": ",".join(map(str, c.ranks)),
                 "gpu": ",".join(str(g) for g in c.gpus if g >= 0) or "-",
                 "nic": ",".join(n for n in c.nics if n) or "-",
                 "direction": c.direction, "symptom": "; ".join(c.symptoms),
                 "evidence": "; ".join(c.evidence),
                 "confidence": f"{c.confidence} ({c.score:.2f})"} for c in d.culprits]
        parts.append(H.table(pd.DataFrame(rows), left=["culprit", "ranks", "gpu", "nic",
                                                       "direction", "symptom", "evidence",
                                                       "confidence"]))
    for note in d.notes:
        parts.append(f"<p class=\"muted\">{H.esc(note)}</p>")
    parts.append(f"<p class=\"muted\">diagnose: {H.esc(d.first_line())}"
                 + (f"; judged: {H.esc(', '.join(d.tests_used))}" if d.tests_used else "")
                 + " (python3 -m fabscope_analysis diagnose FILE)</p>")
    return "\n".join(parts)


def culprit_subject(c: Culprit) -> str:
    """How a culprit is named in the verdict, accept and the JUnit test case name."""
    return c.host if c.direction != "link" else f"link {c.host} -> {c.peer_host}"


def acceptance_checks(result: ResultFile, baseline: Optional[ResultFile], check_type,
                      strict: bool = False, diagnosis: Optional["Diagnosis"] = None) -> list:
    """accept's `diagnose` rule: one failed check per culprit, named by its host (the
    JUnit test case name), or one check saying fit / cannot tell. ``diagnosis``: reuse
    one already computed (the verdict computes it once for every surface)."""
    d = diagnosis if diagnosis is not None else diagnose(result, baseline=baseline)
    if d.culprits:
        checks = []
        for c in d.culprits:
            checks.append(check_type("diagnose", culprit_subject(c), messages=[c.line()],
                                     details=list(d.notes)))
        return checks
    if d.verdict == "cannot tell":
        msg = d.first_line()
        return [check_type("diagnose", "(whole run)", messages=[msg] if strict else [],
                           details=[msg + ("" if strict else " (allowed: diagnose is not "
                                                               "'strict')")] + d.notes)]
    return [check_type("diagnose", "(whole run)", details=["fit"] + d.notes)]
