"""Outages and flaps inside a run, dated from the samples' own timestamps.

A NIC port or link that goes down for a while does not slow a pair: it stops it. Every
message over it waits (retries) until the port is back, so the sample in flight when it
went down lasts the whole outage, and in a pass of rounds every other pair waits for
that sample at the round's end without a sample of its own. What the file holds is
therefore one or a few samples far longer than anything else in the run, each spanning
[t_post_ns, t_done_ns] on the run's global clock (file-format.md: samples carry global
times), and the outage lies inside that span.

The rule, per run, over the samples of every quiet pair test (parallel passes and their
serial retests):

1. a sample's stall is its time beyond the median of its own (rank, peer, bytes) pair;
2. the CANDIDATES largest stalls of the run, each at least MIN_STALL_S, are tested against
   the run's own tail of stalls: a Pareto tail (Hill estimate of its index, no lighter
   than ALPHA_CEILING) fitted to the REFERENCE stalls ranked just below the candidates,
   and a candidate's p is the number of samples that tail expects at or beyond it (a
   Bonferroni bound over the run's samples); one Benjamini-Hochberg over the candidates,
   one family of the run's false-discovery budget (core.RUN_FAMILIES). The floor keeps an
   OS hiccup, a retransmission timeout or a burst (milliseconds) from being called a port
   down whatever the tail says; the tail test keeps a run whose stalls are all long (a
   lossy TCP path with 200 ms retransmission timeouts) from calling its largest one an
   outage;
   A hole in a test's timeline, a span with no sample in flight on any rank beyond the
   test's median hole, is a stall too (rank -1): a port down while the ranks synchronise
   between rounds, or a rank stopped there, stops the run without stalling a sample (a
   real rank frozen for 3 s inside a pass left no sample longer than 77 ms);
3. significant stalls that share a rank and lie within FLAP_GAP_S of each other are one
   event; the event's window runs from the first stall's t_post to the last one's
   t_done, on the run clock (seconds after the first test started). Several stalls in
   one event, apart in time, are a flap.

The component: the rank every stall of the event shares, when the stalls have several
peers (its NIC port); with one stall, or one pair, the two ends cannot be told apart (a
schedule pairs each rank with one peer at a time) and the finding names the pair's path
(either NIC, or the links between them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from ..inference import benjamini_hochberg
from ..reader import (FLAG_AUXILIARY_MASK, FLAG_CONTROL_PAIR, FLAG_RETEST_SECOND_VISIT, ResultFile,
                      TestInstance)
from .model import Layout, fitted_instances
from .result import FABRIC, LINK, NIC, Culprit

MIN_STALL_S = 0.05      # below this a stall is an OS hiccup, a retransmission timeout, a burst
CANDIDATES = 8          # largest stalls tested
REFERENCE = 32          # stalls below them that the tail is fitted to
ALPHA_CEILING = 3.0     # the tail is taken no lighter than a Pareto of this index (finite variance)
FLAP_GAP_S = 10.0       # stalls of one rank further apart than this are separate events


@dataclass
class Stall:
    rank: int
    peer: int
    t_post_ns: int
    t_done_ns: int
    excess_s: float       # beyond the pair's median sample time
    typical_s: float      # the pair's median sample time
    test: str
    seen_up_ns: int       # the last completion of a sample of either rank before t_post
    p: float = 1.0


def _pair_instances(result: ResultFile) -> List[TestInstance]:
    """The quiet pair tests diagnose fits, and their serial retests."""
    fitted = fitted_instances(result)
    indexes = {inst.index for inst in fitted}
    retests = [inst for inst in result.instances()
               if str(inst.get("pass")) == "serial-retest" and inst.get("retest_of", -1) in indexes]
    return fitted + retests


def stalls_of(result: ResultFile) -> Tuple[List[Stall], int, Optional[int]]:
    """Every sample's stall beyond its pair's median, as Stall rows sorted by excess
    (largest first), the number of samples, and the run clock's zero (the earliest test
    start, ns; None when no test has one)."""
    out: List[Stall] = []
    zero: Optional[int] = None
    count = 0
    for inst in _pair_instances(result):
        start = inst.get("t_start_ns")
        if start is not None:
            zero = int(start) if zero is None else min(zero, int(start))
        s = inst.samples()
        if s.empty or "t_post_ns" not in s:
            continue
        # control pairs and second visits of a retest are measurements too: only other
        # auxiliary samples go
        aux = FLAG_AUXILIARY_MASK & ~(FLAG_CONTROL_PAIR | FLAG_RETEST_SECOND_VISIT)
        s = s[(s["peer"] >= 0) & ((s["flags"].to_numpy() & aux) == 0)]
        if s.empty:
            continue
        post, done = s["t_post_ns"].to_numpy(np.int64), s["t_done_ns"].to_numpy(np.int64)
        zero = int(post.min()) if zero is None else min(zero, int(post.min()))
        d = (done - post).astype(np.float64) / 1e9
        # one int64 key per (rank, peer, bytes): a MultiIndex groupby takes seconds at 2M samples
        ranks, peers = s["rank"].to_numpy(np.int64), s["peer"].to_numpy(np.int64)
        size_code, sizes = pd.factorize(s["bytes"].to_numpy())
        key = (ranks * (int(peers.max()) + 1) + peers) * len(sizes) + size_code
        typical = pd.Series(d).groupby(key).transform("median").to_numpy()
        excess = d - typical
        count += len(d)
        label = f"{inst.index:04d} {inst.get('name')}"
        keep = min(CANDIDATES + REFERENCE + 1, len(excess))
        top = np.argpartition(-excess, keep - 1)[:keep]
        top = top[np.argsort(-excess[top], kind="stable")]
        begun = int(start) if start is not None else int(post.min())
        # a retest's second visits wait on purpose (at least 100 ms after each pair's first
        # visit): the wait before them is no hole, so each visit's timeline is searched alone
        second = (s["flags"].to_numpy() & FLAG_RETEST_SECOND_VISIT) != 0
        gaps = [g for part in (~second, second) if part.any()
                for g in _gaps(post[part], done[part], label, begun)]
        count += len(gaps)
        out.extend(gaps)
        for k, i in enumerate(top):
            seen_up = int(post[i])
            if k < CANDIDATES:  # only a candidate's window is reported: when its ends were last up
                ends = (ranks == ranks[i]) | (peers == ranks[i]) | (ranks == peers[i]) | (peers == peers[i])
                before = done[ends & (done <= post[i])]
                seen_up = int(before.max()) if len(before) else min(begun, int(post[i]))
            out.append(Stall(int(ranks[i]), int(peers[i]), int(post[i]), int(done[i]),
                             float(excess[i]), float(typical[i]), label, seen_up))
    out.sort(key=lambda x: -x.excess_s)
    return out[:CANDIDATES + REFERENCE + 1], count, zero


def _gaps(post: np.ndarray, done: np.ndarray, label: str, begun: int) -> List[Stall]:
    """Holes in a test's timeline: spans where no sample was in flight on any rank (the
    ranks waiting for each other between rounds), each as a Stall of rank -1 beyond the
    test's median hole. A port down while the ranks synchronise, or a rank stopped there,
    stops the whole run without stalling any sample."""
    order = np.argsort(post, kind="stable")
    p, d = post[order], np.maximum.accumulate(done[order])
    hole = p[1:] - d[:-1]
    where = np.flatnonzero(hole > 0)
    if not len(where):
        return []
    typical = float(np.median(hole[where])) / 1e9
    keep = min(CANDIDATES + REFERENCE + 1, len(where))
    biggest = where[np.argpartition(-hole[where], keep - 1)[:keep]]
    return [Stall(-1, -1, int(d[i]), int(p[i + 1]), hole[i] / 1e9 - typical, typical, label,
                  int(d[i])) for i in biggest]


def tail_p(stalls: Sequence[float], samples: int) -> np.ndarray:
    """p of each of the CANDIDATES largest stalls (sorted, largest first) against a Pareto
    tail fitted (Hill) to the REFERENCE stalls below them: the number of samples such a
    tail expects at or beyond the stall, capped at 1. NaN where there is no tail to fit."""
    x = np.asarray(stalls, dtype=float)
    m = min(CANDIDATES, len(x))
    out = np.full(m, np.nan)
    ref = x[m:m + REFERENCE + 1]
    if len(ref) < REFERENCE + 1 or samples <= len(x):
        return out
    u = ref[-1]
    if not u > 0:  # more than the reference stalls are at or below the pair median
        u = np.finfo(float).tiny
    logs = np.log(np.maximum(ref[:-1], u) / u)
    alpha = REFERENCE / logs.sum() if logs.sum() > 0 else ALPHA_CEILING
    alpha = min(alpha, ALPHA_CEILING)
    with np.errstate(over="ignore", divide="ignore"):
        out = np.minimum(1.0, (m + REFERENCE) * np.power(np.maximum(x[:m], u) / u, -alpha))
    return out


def _events(stalls: List[Stall]) -> List[List[Stall]]:
    """Significant stalls grouped: those sharing a rank within FLAP_GAP_S of each other."""
    groups: List[List[Stall]] = []
    for st in sorted(stalls, key=lambda x: x.t_post_ns):
        for g in groups:
            ranks = set.intersection(*({x.rank, x.peer} for x in g))
            if ranks & {st.rank, st.peer} and \
                    st.t_post_ns - max(x.t_done_ns for x in g) <= FLAP_GAP_S * 1e9:
                g.append(st)
                break
        else:
            groups.append([st])
    return groups


def _utc(ns: int, epoch_offset_ns: Optional[int]) -> str:
    if epoch_offset_ns is None:
        return ""
    t = pd.Timestamp(ns + int(epoch_offset_ns), unit="ns", tz="UTC")
    return t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def outages(result: ResultFile, layout: Layout, q_family: float) -> Tuple[List[Culprit], List[str]]:
    """Culprits for the outages and flaps the run's timestamps show (module docstring),
    and notes."""
    stalls, samples, zero = stalls_of(result)
    if not stalls or zero is None:
        return [], []
    p = tail_p([x.excess_s for x in stalls], samples)
    if not len(p) or np.all(np.isnan(p)):
        return [], []
    for st, value in zip(stalls, p):
        st.p = float(value)
    rejected, _ = benjamini_hochberg(p, q_family)
    found = [st for st, ok in zip(stalls, rejected) if ok and st.excess_s >= MIN_STALL_S]
    epoch = result.attrs.get("epoch_offset_ns")
    return [_event_culprit(event, layout, zero, epoch) for event in _events(found)], []


def _event_symptom(event, zero: int, epoch) -> Tuple[str, float, float, float]:
    """The finding's words, its window (run seconds) and the window's error."""
    start = min(x.t_post_ns for x in event)
    end = max(x.t_done_ns for x in event)
    t0, t1 = (start - zero) / 1e9, (end - zero) / 1e9
    # the port was last seen up when a sample of these ranks last completed before the
    # first stalled one was posted, and was down before that sample would have completed
    # on its own (its pair's typical time): the start is known to that span; the end to
    # the transport's retry interval before t_done
    first = min(event, key=lambda x: x.t_post_ns)
    error = (first.t_post_ns - first.seen_up_ns) / 1e9 + first.typical_s
    what = "flapping" if len(event) > 1 else "down"
    pieces = ", ".join(f"+{(x.t_post_ns - zero) / 1e9:.4f} to +{(x.t_done_ns - zero) / 1e9:.4f} s"
                       for x in sorted(event, key=lambda x: x.t_post_ns)[:5])
    utc = _utc(start, epoch)
    symptom = (f"{what} from +{t0:.4f} s to +{t1:.4f} s of the run (run clock: seconds after "
               f"the first test started{'; ' + utc if utc else ''}), {len(event)} sample"
               f"{'s' if len(event) != 1 else ''} stalled ({pieces}), longest "
               f"{max(x.excess_s for x in event):.3f} s beyond its pair's median; window "
               f"error: the start between +{(first.seen_up_ns - zero) / 1e9:.4f} s (last seen up) "
               f"and +{t0 + first.typical_s:.4f} s, "
               f"the end at most one transport retry interval before +{t1:.4f} s")
    return symptom, t0, t1, error


def _event_culprit(event, layout: Layout, zero: int, epoch) -> Culprit:
    """One event: the whole run (no sample in flight), a NIC (stalls on several peers of one
    rank) or a link (one stalled pair: which end, the samples cannot tell)."""
    symptom, t0, t1, error = _event_symptom(event, zero, epoch)
    common = set.intersection(*({x.rank, x.peer} for x in event))
    peers = {(x.rank, x.peer) for x in event}
    first = min(event, key=lambda x: x.t_post_ns)
    evidence = [f"{x.test}: " + (f"rank {x.rank} -> {x.peer} stalled" if x.rank >= 0 else
                                 "no sample in flight for")
                + f" {x.excess_s:.3f} s (p {x.p:.2g} against the run's tail of stalls)"
                for x in event[:5]]
    window = dict(window_s=[t0, t1], window_error_s=error)
    if common == {-1}:
        return Culprit(host="the whole run", ranks=[], gpus=[], nics=[], direction="both",
                       symptoms=[symptom.replace(" sample", " hole")
                                 + "; no sample was in flight on any rank: the ranks waited "
                                 "for each other between rounds (a port or host down while "
                                 "they synchronised, or a rank stopped); which one the "
                                 "samples cannot tell"],
                       evidence=evidence, confidence="medium", score=0.5, component=FABRIC, **window)
    if len(common) == 1 and len(peers) > 1:
        r = next(iter(common))
        return Culprit(host=layout.host_of(r), ranks=[r], gpus=[layout.gpu.get(r, -1)],
                       nics=[layout.nic.get(r, "")], direction="both", symptoms=[symptom],
                       evidence=evidence, confidence="high", score=0.9, component=NIC, **window)
    a, b = first.rank, first.peer
    return Culprit(host=layout.host_of(a), ranks=[a, b],
                   gpus=[layout.gpu.get(a, -1), layout.gpu.get(b, -1)],
                   nics=[layout.nic.get(a, ""), layout.nic.get(b, "")],
                   direction="link", peer_host=layout.host_of(b),
                   symptoms=[symptom + "; which end (either NIC, or a link between them) the "
                             "samples cannot tell: each rank meets one peer at a time"],
                   evidence=evidence, confidence="medium", score=0.7, component=LINK, **window)
