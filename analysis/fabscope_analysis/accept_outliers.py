"""accept's family rules: many pairs or ranks judged at once, with false-discovery control.

A rule over N^2 pairs (or N ranks) is N^2 tests. A fixed fraction applied to each fails a
healthy fabric by chance: the slowest of 4,032 healthy pairs is far below the median.
So each unit is tested against a stated noise model, with the false discovery rate
held at q over the family (Benjamini & Hochberg 1995), and only a discovery beyond the
rule's practical margin fails.

The noise model (both rules): the unit's log figure = the family's median + a healthy
unit-to-unit spread tau + the unit's own measurement error se. tau is measured from
the run's own units (pairs: 1.4826 x MAD of their log figures; ranks: Qn, pairwise_sigma;
less the typical se^2); se
from the unit's samples (a median: 1.2533 x its robust sigma / sqrt(n); a p99: the
order-statistic interval, inference.quantile_log_se). z = excess / sqrt(tau^2 + se^2),
one-sided. With fewer than MIN_UNITS_FOR_SPREAD units tau cannot be measured and is 0.

CANNOT TELL: no discovery, but the smallest slowdown the family can flag (the first BH
step, z at q/m, times the typical sd) lies beyond the margin: a unit at the margin
would not have been seen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np
import pandas as pd

from .diagnosis.retest import (CLEARED, CONFIRMED, SELECTION, TRANSIENT, judge_retest_visits,
                               pass_sigma)
from .inference import (MEDIAN_SE_FACTOR, benjamini_hochberg, first_step_z, one_sided_p,
                        quantile_log_se, robust_sigma)
from .accept_result import MAX_NAMED, CheckResult
from .reader import FLAG_CONTROL_PAIR, FLAG_RETEST_SECOND_VISIT, TestInstance
from .run_analysis import format_number
from .stats import group_order, is_bandwidth, pair_values, with_derived, worse_is_higher_times

DEFAULT_FDR = 0.05
MIN_UNITS_FOR_SPREAD = 8


@dataclass
class FamilyTest:
    """One family rule's evidence: per unit log excess over the family's median (time:
    positive is slower), its sd under the noise model, and which units are discoveries."""
    keys: List[Tuple[int, ...]]
    excess: np.ndarray
    sd: np.ndarray
    discovered: np.ndarray
    tau: float
    detectable: float      # smallest time ratio the family can flag (first BH step)
    q: float

    def method(self, what: str) -> str:
        return (f"{len(self.keys)} {what}, Benjamini-Hochberg at q = {self.q:g} under a lognormal "
                f"noise model (unit-to-unit spread {100 * self.tau:.1f} % measured from the run, "
                f"plus each unit's own sampling error); smallest slowdown it can flag "
                f"{self.detectable:.2f}x")


# Qn's consistency factors for small n (Croux & Rousseeuw 1992), n = 2..9; above, n / (n + 1.4)
# for odd n and n / (n + 3.8) for even n
QN_SMALL_N = {2: 0.399, 3: 0.994, 4: 0.512, 5: 0.844, 6: 0.611, 7: 0.857, 8: 0.669, 9: 0.872}


def pairwise_sigma(values: np.ndarray) -> float:
    """Rousseeuw & Croux's Qn: a sigma from the k-th smallest distance between two units
    (k = h(h-1)/2, h = n//2 + 1), consistent for normal data. It needs no centre: a group of
    units a fault moved together (every rank sending to one slow NIC) keeps its distances
    inside the group and moves no reference, where the MAD about the median counts each of
    them as spread once the group nears half the family. O(n^2): for the ranks' family."""
    v = np.sort(np.asarray(values, dtype=np.float64)[np.isfinite(values)])
    n = len(v)
    if n < 2:
        return 0.0
    h = n // 2 + 1
    k = h * (h - 1) // 2
    distances = (v[None, :] - v[:, None])[np.triu_indices(n, 1)]
    kth = float(np.partition(distances, k - 1)[k - 1])
    factor = QN_SMALL_N.get(n, n / (n + 1.4) if n % 2 else n / (n + 3.8))
    return 2.2219 * factor * kth


def family_test(keys: List[Tuple[int, ...]], log_time: np.ndarray, se: np.ndarray,
                q: float, spread=robust_sigma) -> FamilyTest:
    """BH over the units' one-sided z of being slower than the family's median; `spread`
    estimates the units' sigma (the MAD's robust_sigma, or pairwise_sigma)."""
    centre = float(np.median(log_time))
    excess = log_time - centre
    se = np.where(np.isfinite(se), se, np.inf)
    finite_se = se[np.isfinite(se)]
    typical_se2 = float(np.median(finite_se ** 2)) if len(finite_se) else 0.0
    tau = 0.0
    if len(keys) >= MIN_UNITS_FOR_SPREAD:
        tau = math.sqrt(max(spread(log_time) ** 2 - typical_se2, 0.0))
    sd = np.sqrt(tau ** 2 + se ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, excess / sd, np.where(excess > 0, np.inf, 0.0))
    discovered, _ = benjamini_hochberg(one_sided_p(z), q)
    typical_sd = math.sqrt(tau ** 2 + typical_se2)
    detectable = math.exp(first_step_z(len(keys), q) * typical_sd)
    return FamilyTest(keys, excess, sd, discovered, tau, detectable, q)


def _grouped_medians(keys: np.ndarray, values: np.ndarray):
    """(sorted unique keys, counts, median of the values of each key): one sort for all
    groups (numpy.median's midpoint rule within each group)."""
    order = group_order(keys, values)
    k, v = keys[order], values[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    counts = np.diff(np.r_[starts, len(k)])
    median = 0.5 * (v[starts + (counts - 1) // 2] + v[starts + counts // 2])
    return k[starts], counts, median


def pair_log_medians(s: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per directed pair: samples, log median time (per byte for bandwidth, so sizes mix)
    and the standard error of that log median (from the pair's MAD). Two sorts of the
    samples in all, none per pair: at 512 ranks (261,632 pairs) a groupby per pair took
    most of a minute."""
    s = s[s["peer"] >= 0]
    columns = ["rank", "peer", "samples", "log_time", "se"]
    if s.empty:
        return pd.DataFrame(columns=columns)
    t = worse_is_higher_times(s, metric)
    if is_bandwidth(metric):
        t = t / np.maximum(s["bytes"].to_numpy(dtype=np.float64), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        logt = np.log(np.where(t > 0, t, np.nan))
    rank, peer = s["rank"].to_numpy(dtype=np.int64), s["peer"].to_numpy(dtype=np.int64)
    keep = np.isfinite(logt)
    if not keep.any():
        return pd.DataFrame(columns=columns)
    rank, peer, logt = rank[keep], peer[keep], logt[keep]
    width = int(peer.max()) + 1
    key = rank * width + peer
    pair_key, n, median = _grouped_medians(key, logt)
    group = np.searchsorted(pair_key, key)
    _, _, mad = _grouped_medians(key, np.abs(logt - median[group]))
    se = MEDIAN_SE_FACTOR * 1.4826 * mad / np.sqrt(n)
    se = np.where(n < 3, np.inf, se)  # one or two samples: no error estimate
    return pd.DataFrame({"rank": pair_key // width, "peer": pair_key % width, "samples": n,
                         "log_time": median, "se": se}, columns=columns)


def rank_log_p99(s: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per measuring rank: samples, log p99 time and its standard error."""
    rows = []
    times = worse_is_higher_times(s, metric)
    ranks = s["rank"].to_numpy()
    order = group_order(ranks, times)
    t, r = times[order], ranks[order]
    starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]]) if len(r) else np.zeros(0, int)
    ends = np.r_[starts[1:], len(r)]
    for a, b in zip(starts, ends):
        chunk = t[a:b]
        p99 = float(np.percentile(chunk, 99.0))
        rows.append({"rank": int(r[a]), "samples": int(b - a), "p99_time": p99,
                     "log_time": math.log(p99) if p99 > 0 else float("nan"),
                     "se": quantile_log_se(chunk, 99.0)})
    return pd.DataFrame(rows, columns=["rank", "samples", "p99_time", "log_time", "se"])


@dataclass
class RetestPairs:
    """A serial retest's retested pairs judged by the one retest rule (diagnosis.retest)."""
    judgements: Dict[Tuple[int, int], object]   # (rank, peer) -> RetestJudgement
    values: Dict[Tuple[int, int], float]        # the pair's median alone, display units
    control_median: float
    controls: int


def judge_serial_retest(retest: TestInstance, parent_pairs: pd.DataFrame) -> Optional[RetestPairs]:
    """The retest's pairs against its control pairs (flag bit 10), by judge_retest; None
    when the retest has no control pairs. parent_pairs (pair_log_medians of the parallel
    pass it retests): the pool the worst were picked from, and its pair-to-pair spread
    (diagnosis.retest.pass_sigma) as the floor of one pair's noise alone."""
    raw = retest.samples()
    raw = raw[raw["peer"] >= 0]
    control = ((raw["flags"].astype("int64") & FLAG_CONTROL_PAIR) != 0).to_numpy()
    if not control.any():
        return None
    second = ((raw["flags"].astype("int64") & FLAG_RETEST_SECOND_VISIT) != 0).to_numpy()
    s = with_derived(raw.reset_index(drop=True), retest.sample_divisor)
    controls = pair_values(s[control], retest.metric)
    bandwidth = is_bandwidth(retest.metric)
    visits: Dict[Tuple[int, int], List[float]] = {}
    for visit in (~second, second):   # each retested pair's first, then second visit
        for r in pair_values(s[~control & visit], retest.metric).itertuples():
            visits.setdefault((int(r.rank), int(r.peer)), []).append(float(r.median))
    # shown: the less slow visit, the level the rule judges (a fault persists over both)
    values = {k: (max(v) if bandwidth else min(v)) for k, v in visits.items()}
    pool = max(len(parent_pairs), 1)
    floor = pass_sigma(np.exp(parent_pairs["log_time"].to_numpy(dtype=np.float64)),
                       bandwidth=False) if len(parent_pairs) else 0.0
    judged = judge_retest_visits(visits, controls["median"].tolist(), pool=pool,
                                 bandwidth=bandwidth, sigma_floor=floor)
    return RetestPairs({j.pair: j for j in judged}, values,
                       float(np.median(controls["median"])), len(controls))


def not_failed_alone(retest: Optional[RetestPairs]) -> Dict[Tuple[int, int], object]:
    """Pairs the retest found no fault on alone (cleared, slow only by selection, or slow
    on one of its two visits only: a transient)."""
    if retest is None:
        return {}
    return {k: j for k, j in retest.judgements.items()
            if j.outcome in (CLEARED, SELECTION, TRANSIENT)}


def confirmed_alone(retest: RetestPairs) -> List[Tuple[Tuple[int, int], object]]:
    return sorted(((k, j) for k, j in retest.judgements.items() if j.outcome == CONFIRMED),
                  key=lambda kj: -kj[1].ratio)


PAIR_KEY = "pair_min_fraction_of_median"
RANK_KEY = "rank_p99_max_ratio_to_median"


def check_retest_pairs(ev, inst: TestInstance, fraction: float, result: CheckResult) -> bool:
    """A serial retest judges its pairs against its control pairs, never against its own
    median (the suspects'), by the one retest rule. False when it has no controls."""
    parent = next((p for p, r in ev.retest_of.items() if r.index == inst.index), None)
    parent_pairs = ev.parallel_pairs(parent)
    pool = len(parent_pairs)
    judged = judge_serial_retest(inst, parent_pairs)
    if judged is None:
        return False
    unit = " GB/s" if is_bandwidth(inst.metric) else " us"
    result.details.append(f"control pairs' median {format_number(judged.control_median)}{unit} "
                          f"over {judged.controls} control pairs measured alone; serial-retest "
                          f"rule (diagnosis.retest) over a pool of {pool} ranked pairs")
    bad = confirmed_alone(judged)
    _fail_naming(result, PAIR_KEY, [
        f"pair {ev.pair(rank, peer)}: {format_number(judged.values[(rank, peer)])}{unit} "
        f"alone against the control pairs' {format_number(judged.control_median)}{unit}: {j.describe()}"
        for (rank, peer), j in bad], "pairs confirmed slow alone")
    for (rank, peer), j in sorted(judged.judgements.items()):
        if j.outcome != CONFIRMED:
            result.details.append(f"pair {ev.pair(rank, peer)}: {j.describe()}")
    return True


def check_pairs(ev, inst: TestInstance, pairs: pd.DataFrame, fraction: float, q: float,
                result: CheckResult) -> None:
    """pair_min_fraction_of_median on a parallel pass: a pair fails when the noise model
    finds it slow (BH at q) and its median is below `fraction` of the median pair's
    performance. The serial retest measured the worst of them alone: a pair it cleared
    is slow under load only; when it cleared every pair it measured, the other slow pairs
    (less slow than those) are load too, congestion or routing, not a bad link: the
    check cannot tell them apart and says so (a confirmed pair fails)."""
    if len(pairs) < 2:
        return
    test = family_test(list(zip(pairs["rank"], pairs["peer"])), pairs["log_time"].to_numpy(),
                       pairs["se"].to_numpy(dtype=np.float64), q)
    perf = np.exp(-test.excess)  # 1 = the median pair, < 1 slower
    result.details.append(test.method("pairs"))
    retest = ev.retest_of.get(inst.index)
    judged = judge_serial_retest(retest, pairs) if retest is not None else None
    alone = not_failed_alone(judged)
    hit = np.flatnonzero(test.discovered & (perf < fraction))
    ranks, peers = pairs["rank"].to_numpy()[hit].tolist(), pairs["peer"].to_numpy()[hit].tolist()
    slow = [((int(r), int(p)), float(x)) for r, p, x in zip(ranks, peers, perf[hit])]
    for key, rel in slow:
        if key in alone:
            result.details.append(f"pair {ev.pair(*key)}: {100 * rel:.0f}% of the median pair "
                                  f"here, but alone in the serial retest {retest.index:04d} "
                                  f"{alone[key].describe()}: slow under load only, not failed")
    bad = _beyond_cleared(slow, alone, judged, fraction, result)
    _pair_messages(ev, inst, bad, fraction, result)
    if not bad and not result.cannot_tell and test.detectable > 1.0 / fraction:
        result.add_cannot_tell(
            f"{PAIR_KEY}: pairs vary {100 * test.tau:.0f}% among themselves; among {len(pairs)} "
            f"pairs only one below {100 / test.detectable:.0f}% of the median pair can be told "
            f"from that noise, the rule asks {100 * fraction:.0f}%")


def _beyond_cleared(slow, alone, judged: Optional[RetestPairs], fraction: float,
                    result: CheckResult):
    """Slow pairs of the parallel pass that fail: those the retest did not clear, less
    the ones no slower there than a pair the retest cleared alone (the retest measured the
    worst; a pair less slow than one that was fine alone is load as far as anyone
    measured: said as cannot tell, congestion or routing, not a bad link)."""
    rel_of = dict(slow)
    cleared_rel = [rel_of[k] for k in alone if k in rel_of]
    bad = sorted(((k, r) for k, r in slow if k not in alone), key=lambda item: item[1])
    if not cleared_rel or judged is None:
        return bad
    bar = min(cleared_rel)
    load = [(k, r) for k, r in bad if r >= bar and k not in judged.judgements]
    if load:
        result.add_cannot_tell(
            f"{PAIR_KEY}: {len(load)} pair(s) below {100 * fraction:.0f}% of the median pair in "
            f"the parallel pass, not measured alone, no slower than one the serial retest found "
            f"as fast as its controls alone ({100 * bar:.0f}%): slow under load (congestion or "
            f"routing) as far as the retest saw, not a bad link; retest more pairs to tell")
    held = {k for k, _ in load}  # a set: list membership is quadratic over 10^5 pairs
    return [(k, r) for k, r in bad if k not in held]


def _pair_messages(ev, inst: TestInstance, bad, fraction: float, result: CheckResult) -> None:
    if not bad:
        return
    result.failed.append(PAIR_KEY)
    for (rank, peer), rel in bad[:MAX_NAMED]:
        result.messages.append(
            f"pair {ev.pair(rank, peer)}: {100 * rel:.0f}% of the median pair's performance, "
            f"required >= {100 * fraction:.0f}% (a false discovery rate controlled outlier)")
    if len(bad) > MAX_NAMED:
        result.messages.append(f"... and {len(bad) - MAX_NAMED} more slow pairs")


def check_ranks(ev, inst: TestInstance, s: pd.DataFrame, ratio: float, q: float,
                result: CheckResult) -> None:
    """rank_p99_max_ratio_to_median: a rank fails when its p99 time is found slow by the
    noise model (BH at q) and is more than `ratio` x the median rank's p99 time."""
    if s.empty:
        return
    ranks = rank_log_p99(s, inst.metric)
    ranks = ranks[np.isfinite(ranks["log_time"].to_numpy(dtype=np.float64))]
    if len(ranks) < 2:
        return
    # the ranks' spread by pairwise distances: a fault that slows a group of ranks together
    # (all that send to one NIC) would widen a spread about the median and hide itself
    test = family_test([(int(r),) for r in ranks["rank"]], ranks["log_time"].to_numpy(),
                       ranks["se"].to_numpy(dtype=np.float64), q, spread=pairwise_sigma)
    times = np.exp(test.excess)
    unit = " GB/s" if is_bandwidth(inst.metric) else " us"
    median_time = float(np.median(ranks["p99_time"]))
    median_show = _display(inst, median_time)
    result.details.append(f"median rank p99 {format_number(median_show)}{unit}; "
                          + test.method("ranks"))
    bad = sorted(((int(ranks["rank"].iat[i]), float(ranks["p99_time"].iat[i]), times[i])
                  for i in np.flatnonzero(test.discovered & (times > ratio))),
                 key=lambda item: -item[2])
    side = " (slow side)" if is_bandwidth(inst.metric) else ""
    _fail_naming(result, RANK_KEY, [
        f"{ev.rank(rank)}: p99{side} {format_number(_display(inst, p99_time))}{unit} takes "
        f"{x:.1f}x the median rank's p99 time (median rank p99 "
        f"{format_number(median_show)}{unit}), required <= {ratio:g}x"
        for rank, p99_time, x in bad], "slow ranks")
    if not bad and test.detectable > ratio:
        result.add_cannot_tell(
            f"{RANK_KEY}: ranks' p99 vary {100 * test.tau:.0f}% among themselves; among "
            f"{len(ranks)} ranks only one over {test.detectable:.1f}x the median can be told "
            f"from that noise, the rule asks {ratio:g}x")


def _display(inst: TestInstance, time_ns: float) -> float:
    """A p99 time in display units: us, or GB/s of the instance's message size."""
    if not is_bandwidth(inst.metric):
        return time_ns / 1e3
    nbytes = float(inst.get("bytes", 0) or 0)
    return nbytes / time_ns if time_ns > 0 and nbytes > 0 else float("nan")


def _fail_naming(result, key: str, lines, what: str) -> None:
    """Fails `key` when `lines` is not empty, naming the first MAX_NAMED and counting the rest."""
    if not lines:
        return
    result.failed.append(key)
    result.messages.extend(lines[:MAX_NAMED])
    if len(lines) > MAX_NAMED:
        result.messages.append(f"... and {len(lines) - MAX_NAMED} more {what}")
