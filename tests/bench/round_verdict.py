"""The verdict of one benchmark row from its per-round ratios (overhead.sh,
compare-builds.sh).

Method: the distribution-free confidence interval of the median of the per-round
ratios, from the sign test's order statistics: with n rounds sorted, the interval
[x(k), x(n+1-k)] holds the true median with probability 1 - 2 P(B <= k-1), B the
binomial(n, 1/2), whatever the distribution of the rounds. k is the largest index
whose interval still reaches the asked confidence.

Why not half the range of the ratios (what overhead.sh used first): on these VMs a
single launch now and then lands its two ranks on cores that share a cache and reads
2-3 times faster. One such round sets the range alone, so 10 or 20 rounds gave no
verdict at all; the order-statistic interval lets the outermost rounds go (one each
side from 9 rounds, two from 12, three from 15) and still says how sure it is.

A row gives a verdict only when
  - the rounds are enough for the confidence (6 for 95 %),
  - half the interval's width (the spread) is within the row's margin (a busy
    machine gives no verdict rather than a wrong one), and
  - the whole interval lies on one side of the target's bound: met when all of it
    meets the target, MISSED when none of it does; otherwise "cannot tell".
"""
from dataclasses import dataclass
from math import comb
from typing import Sequence

CONFIDENCE = 0.95


def _tail(k: int, n: int) -> float:
    """P(B <= k) for B ~ binomial(n, 1/2)."""
    return sum(comb(n, i) for i in range(k + 1)) / 2 ** n


@dataclass(frozen=True)
class Interval:
    median: float
    lo: float
    hi: float
    coverage: float  # the probability that [lo, hi] holds the true median
    dropped: int     # rounds left out at each end

    @property
    def spread(self) -> float:
        return (self.hi - self.lo) / 2


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        raise ValueError("median_interval: no values")
    k = 1  # 1-based order statistic of the lower end
    while k < (n + 1) // 2 and 1 - 2 * _tail(k, n) >= confidence:
        k += 1
    mid = n // 2
    median = xs[mid] if n % 2 else (xs[mid - 1] + xs[mid]) / 2
    return Interval(median, xs[k - 1], xs[n - k], 1 - 2 * _tail(k - 1, n), k - 1)


def rounds_needed(confidence: float = CONFIDENCE) -> int:
    n = 1
    while 1 - 2 * _tail(0, n) < confidence:
        n += 1
    return n


def verdict(ratios: Sequence[float], op: str, bound: float, margin: float,
            confidence: float = CONFIDENCE) -> str:
    """op is "<=" (a ratio at most bound meets) or ">=" (at least bound meets)."""
    if op not in ("<=", ">="):
        raise ValueError(f"verdict: op must be <= or >=, got {op!r}")
    iv = median_interval(ratios, confidence)
    if iv.coverage < confidence:
        return f"cannot tell (rounds: {len(ratios)} < {rounds_needed(confidence)})"
    if iv.spread > margin:
        return "cannot tell (busy)"
    meets = (lambda x: x <= bound) if op == "<=" else (lambda x: x >= bound)
    if meets(iv.lo) and meets(iv.hi):
        return "met"
    if not meets(iv.lo) and not meets(iv.hi):
        return "MISSED"
    return "cannot tell (at bound)"


def method_line(confidence: float = CONFIDENCE) -> str:
    return (f"ratio = median of the per-round ratios; interval = its distribution-free "
            f"{confidence:.0%} confidence interval (sign-test order statistics); spread = half its width")
