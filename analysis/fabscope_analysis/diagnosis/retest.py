"""The serial-retest rule: is a pair that was slow in the parallel pass slow alone?

A serial retest measures the worst pairs of a parallel pass alone, one at a time,
alternated with control pairs drawn from the middle of the same ranking and
measured the same way (sample flag bit 10). Two facts shape the rule:

- The controls are the only reference measured like the retested pairs. Their
  spread (robust sigma of their log medians) is the noise one pair alone shows:
  pair-to-pair differences that persist plus measurement noise. It is measured from
  the run, never a constant; validity findings (shared CPUs) widen it by a factor the
  caller gives.
- The retested pairs were *picked* as the worst of `pool` pairs. On a healthy fabric
  the worst of 10^5 pairs stays slower than random controls when measured alone,
  because part of what made it worst persists (its hosts' and its own spread). So the
  bar is the (1 - alpha) quantile of the largest of `pool` draws from the controls'
  distribution: z_sel = Phi^-1((1 - alpha)^(1 / pool)) controls' sigmas (plus the
  standard error of the controls' median), not a fixed ratio.

A retested pair is then
- ``confirmed``: slower than the controls by more than that bar AND by more than the
  practical margin: a fault on that path that persists alone;
- ``cleared``: within the practical margin of the controls (what made it slow was the
  parallel pass: load, congestion or routing);
- ``selection``: slower than the margin, but no slower than the worst of `pool`
  healthy pairs would be under the controls' noise: no evidence of a fault, and the
  note says how slow it would have had to be (the minimum detectable ratio);
- ``inconclusive``: fewer than MIN_CONTROLS_USABLE controls: nothing to compare with.

Persistence over two visits (:func:`judge_retest_visits`). The runner measures each
retested pair twice (sample flag bit 15 marks the second visit), the second time after
every other pair of the retest and at least 100 ms after the first. Another tenant's
burst or a pause on a link the pair crosses can outlast one visit (the pair then reads
slow alone all through it); a fault persists over both. A pair is ``confirmed`` only
when its *less slow* visit is over the bar and the margin; a pair whose slower visit is
over them and whose other visit is not is a ``transient``: reported with its visit and
time, never a culprit. The false-discovery budget is unchanged: "slow on both visits"
is an intersection of two tests each at the retest's level alpha against the same bar,
and an intersection-union test is at level alpha (Berger 1982): a healthy pair is
confirmed on both visits no more often than on one, so the retest's own 5 % holds, and
a burst in one visit no longer spends any of it. Files from before the second visit
(one visit a pair) are judged as before, and their confirmed pairs say that one visit
cannot tell a burst that lasted through it from a fault.

accept and diagnose both call :func:`judge_retest_visits` (one retest rule).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Dict, Hashable, List, Mapping, Sequence, Tuple

import numpy as np
from scipy.stats import chi2

from ..inference import PRACTICAL_MARGIN as MARGIN
from ..inference import robust_sigma
from ..tail_null import tail_isf

# The runner measures at least this many control pairs (where the parallel pass has
# them): the controls' spread is the rule's noise, and a robust spread of fewer pairs
# is itself too uncertain to set an extreme-value bar on.
MIN_CONTROLS = 10
# With fewer controls than this the rule says nothing (files written before the
# runner measured MIN_CONTROLS): their spread is not an estimate at all.
MIN_CONTROLS_USABLE = 3
# Family-wise error over the pool the worst pairs were picked from: a healthy fabric's
# worst pair is "confirmed" in at most this share of runs.
ALPHA = 0.05

CONFIRMED, CLEARED, SELECTION, INCONCLUSIVE = "confirmed", "cleared", "selection", "inconclusive"
TRANSIENT = "transient"


@dataclass(frozen=True)
class RetestJudgement:
    """One retested pair against its controls. Ratios are times (alone / controls'
    median): above 1 is slower, whatever the metric."""
    pair: Hashable
    outcome: str               # confirmed | cleared | selection | inconclusive
    ratio: float               # the pair's time alone / the controls' median time
    bar_ratio: float           # slower than this (and than MARGIN) is confirmed
    controls: int              # control pairs used
    sigma: float               # controls' robust sigma of log time (after widening)
    # what the ratio is of: the control pairs' times, or (diagnose) each pair's time
    # alone over what the parallel pass's model predicts for it, against the controls'
    reference: str = "the control pairs' time"
    # visits of the pair judged (2: the runner's two visits; 1: a file from before them)
    visits: int = 1
    visit_ratios: Tuple[float, ...] = ()   # each visit's ratio, in visit order
    slow_visit: int = 0                     # transient: the visit (1-based) that was slow
    slow_when: str = ""                     # transient: when that visit ran, in words

    @property
    def slow(self) -> bool:
        return self.outcome == CONFIRMED

    def describe(self) -> str:
        if self.outcome == TRANSIENT:
            other = [r for k, r in enumerate(self.visit_ratios, 1) if k != self.slow_visit]
            slow = self.visit_ratios[self.slow_visit - 1] if self.visit_ratios else float("nan")
            when = f" ({self.slow_when})" if self.slow_when else ""
            return (f"slow alone on visit {self.slow_visit} of {self.visits} only{when}: "
                    f"{slow:.2f}x {self.reference}, {', '.join(f'{r:.2f}x' for r in other)} on the "
                    f"other, under the {self.bar_ratio:.2f}x bar: a transient (another tenant's "
                    "burst or a pause on its path), not a fault")
        visits = ""
        if self.outcome == CONFIRMED:
            visits = (f" on both visits ({', '.join(f'{r:.2f}x' for r in self.visit_ratios)})"
                      if self.visits > 1 else
                      " (one visit: a burst that lasted through it would read the same; "
                      "this file's runner did not measure the pair again)")
        word = {CONFIRMED: "confirmed slow alone" + visits,
                CLEARED: "cleared (as fast as the controls alone: the parallel pass slowed it)",
                SELECTION: (f"not confirmed (slower than the controls, but under the "
                            f"{self.bar_ratio:.2f}x the worst of the ranked pairs reaches "
                            f"alone under the controls' noise: selection, not a fault)"),
                INCONCLUSIVE: (f"inconclusive ({self.controls} control pair(s); the rule "
                               f"needs {MIN_CONTROLS_USABLE})")}[self.outcome]
        return f"{self.ratio:.2f}x {self.reference}: {word}"


def selection_z(pool: int, alpha: float = ALPHA, tail_df: float = math.inf) -> float:
    """The (1 - alpha) quantile of the largest of `pool` draws of the null, in its robust
    sigmas: standard normal draws, or the tail null's (tail_null.py) with tail_df."""
    pool = max(int(pool), 1)
    # (1 - alpha)^(1/pool) computed in logs: 1 - it underflows for big pools
    upper_tail = -math.expm1(math.log1p(-alpha) / pool)
    return tail_isf(upper_tail, tail_df)


def judge_retest(retested: Dict[Hashable, float], controls: Sequence[float], *, pool: int,
                 bandwidth: bool, widen: float = 1.0, margin: float = MARGIN,
                 alpha: float = ALPHA, sigma_floor: float = 0.0, tail_df: float = math.inf,
                 reference: str = "the control pairs' time") -> List[RetestJudgement]:
    """Judge each retested pair's value alone against the control pairs' values.

    retested: pair -> its median alone (GB/s when `bandwidth`, else a time);
    controls: each control pair's median alone, same unit; pool: how many pairs the
    retested ones were picked from (the parallel pass's ranked pairs); widen: factor on
    the controls' noise from validity findings (1 = none); sigma_floor: a lower bound
    on the noise of one pair alone (log units) known from elsewhere in the run;
    tail_df: the degrees of freedom of the healthy pairs' tail (tail_null.fast_side_df
    of the parallel pass: a healthy pair effect persists alone, and the worst of a
    heavy-tailed pool sits far out); reference: what the ratio is of, in words.
    """
    logs = np.log(np.asarray([c for c in controls if c > 0 and math.isfinite(c)],
                             dtype=np.float64))
    if bandwidth:
        logs = -logs
    m = len(logs)
    out = []
    if m < MIN_CONTROLS_USABLE:
        centre_log = float(np.median(logs)) if m else float("nan")
        for pair, value in retested.items():
            ratio = _time_ratio(value, centre_log, bandwidth)
            out.append(RetestJudgement(pair, INCONCLUSIVE, ratio, float("inf"), m, float("nan"),
                                       reference))
        return out
    centre = float(np.median(logs))
    sigma = _noise(logs, sigma_floor, alpha) * widen
    # the pair's own draw plus the uncertainty of the controls' median (1.2533 / sqrt(m))
    spread = sigma * math.sqrt(1.0 + (1.2533 ** 2) / m)
    bar = selection_z(pool, alpha, tail_df) * spread
    for pair, value in retested.items():
        if not (value > 0 and math.isfinite(value)):
            out.append(RetestJudgement(pair, INCONCLUSIVE, float("nan"), math.exp(bar), m, sigma,
                                       reference))
            continue
        excess = (-math.log(value) if bandwidth else math.log(value)) - centre
        if excess <= math.log(margin):
            outcome = CLEARED
        elif excess <= bar:
            outcome = SELECTION
        else:
            outcome = CONFIRMED
        out.append(RetestJudgement(pair, outcome, math.exp(excess),
                                   math.exp(max(bar, math.log(margin))), m, sigma, reference))
    return out


def judge_retest_visits(visits: Mapping[Hashable, Sequence[float]], controls: Sequence[float], *,
                        bandwidth: bool, when: Mapping[Hashable, Sequence[str]] = None,
                        **rule) -> List[RetestJudgement]:
    """Judge each retested pair over its visits (module docstring): `visits` maps a pair to
    its value alone on each visit, in visit order (one or two; same unit as judge_retest);
    `when` maps a pair to each visit's time in words (for a transient's report); `rule`:
    judge_retest's other arguments (pool, widen, sigma_floor, tail_df, reference, ...).

    Each visit is judged against the same controls and bar; the pair's outcome is its less
    slow visit's (a fault persists over both). A pair whose slower visit is confirmed and
    less slow one is not is TRANSIENT."""
    when = when or {}
    per_visit: Dict[Hashable, List[RetestJudgement]] = {pair: [] for pair in visits}
    for k in range(max((len(v) for v in visits.values()), default=0)):
        values = {pair: v[k] for pair, v in visits.items() if k < len(v)}
        for j in judge_retest(values, controls, bandwidth=bandwidth, **rule):
            per_visit[j.pair].append(j)
    out = []
    for pair, judged in per_visit.items():
        if not judged:
            continue
        ratios = tuple(j.ratio for j in judged)
        # a visit with no valid time says nothing: the pair counts as visited once
        usable = [j for j in judged if math.isfinite(j.ratio)] or judged
        persisting = min(usable, key=lambda j: j.ratio)   # the less slow visit
        slowest = max(usable, key=lambda j: j.ratio)
        combined = replace(persisting, visits=len(usable), visit_ratios=ratios)
        if len(usable) > 1 and slowest.outcome == CONFIRMED and persisting.outcome != CONFIRMED:
            k = judged.index(slowest)
            times = list(when.get(pair, ()))
            combined = replace(combined, outcome=TRANSIENT, slow_visit=k + 1,
                               slow_when=times[k] if k < len(times) else "")
        out.append(combined)
    return out


def pass_sigma(pair_values: Sequence[float], bandwidth: bool) -> float:
    """The parallel pass's pair-to-pair spread (sigma of log pair medians over every
    pair it measured, from their fast half): pass it as judge_retest's sigma_floor. It bounds what of
    a pair's slowness can persist alone, and comes from thousands of pairs where the
    controls are ten."""
    v = np.asarray(pair_values, dtype=np.float64)
    v = v[np.isfinite(v) & (v > 0)]
    if len(v) < 4:
        return 0.0
    logs = -np.log(v) if bandwidth else np.log(v)
    # from the fast half only: slow pairs (faults, collisions under load) lie on one
    # side, and would widen a symmetric estimate; the fast half is the healthy spread
    return float(np.median(logs) - np.percentile(logs, 25)) / 0.6745


def _noise(logs: np.ndarray, sigma_floor: float, alpha: float) -> float:
    """One pair's noise alone (log units). From the controls alone their robust sigma is
    raised to its one-sided (1 - alpha) upper confidence bound (chi-square, m - 1 df):
    the bar sits far in the tail, where a spread under-estimated from ~10 pairs would
    confirm healthy pairs (a healthy pool's worst pair, 10 controls: 38 % of runs
    without the bound). A floor known from the whole run (the parallel pass's pair
    spread over every pair: an upper bound on what persists alone) replaces the bound."""
    sigma = robust_sigma(logs)
    if sigma_floor > 0:
        return max(sigma, sigma_floor)
    df = len(logs) - 1
    return sigma * math.sqrt(df / chi2.ppf(alpha, df))


def _time_ratio(value: float, control_log: float, bandwidth: bool) -> float:
    """value against exp(control_log) (a log time: minus log bandwidth), as a time ratio."""
    if not (value > 0 and math.isfinite(control_log)):
        return float("nan")
    return math.exp((-math.log(value) if bandwidth else math.log(value)) - control_log)
