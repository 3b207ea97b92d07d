"""How well can any test do at 3 vs 3 runs when runs fall on two levels? Bounds by
seeded simulation of the runs' log figures (the level that compare's run-level model
tests; compare_rates.py runs the real compare on whole simulated runs).

    python3 analysis/tests/compare_bound.py [--trials 100000] [--seed 1] [--runs 3]

Model (the synthetic cluster generator's presets, synth.noise): a run's log figure is
normal with the run-to-run spread (`realistic`: 3 %); `realistic+bimodal` adds a step of
log 1.10 with probability 1/2 to each run. Side B of a power trial is 10 % slower.

Printed, each as same-fabric false differences (realistic, bimodal) and the planted
slowdown found (`worse`; realistic, bimodal):

- candidate decisions that measure the spread from the runs themselves: the pooled t
  (compare's), Welch's t, "cannot tell" unless the difference clears the spread's upper
  confidence bound, a leave-one-run-out t, the larger side's own variance;
- two oracles, the most powerful tests of "a 10 % step" against "runs on two levels" that
  are allowed to know the model (Neyman-Pearson on the likelihood of the runs' pattern,
  the unknown common level integrated out): one knows the spread exactly, one knows the
  model's shape but not its scale (the spread integrated out, dsigma / sigma). Their
  threshold is set so that exactly 5 % of bimodal same-fabric trials are called
  different; the slowdown they then find is the most any decision of that kind can find.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from typing import Callable, Dict

import numpy as np
from scipy import stats
from scipy.special import logsumexp

SPREAD = 0.03
STEP = math.log(1.10)
NEGLIGIBLE = 0.05
CELLS = (("realistic", 0, 0.0), ("realistic", 0, STEP), ("bimodal", 1, 0.0), ("bimodal", 1, STEP))


def levels(rng: np.random.Generator, n: int, k: int, bimodal: int) -> np.ndarray:
    """[trial][run] log figures of k runs: normal run spread, plus the step at even odds."""
    return rng.normal(0.0, SPREAD, (n, k)) + (rng.random((n, k)) < 0.5) * STEP * bimodal


def _ss(x: np.ndarray) -> np.ndarray:
    return ((x - x.mean(1, keepdims=True)) ** 2).sum(1)


def _claimed(d: np.ndarray, se: np.ndarray, df) -> np.ndarray:
    """An interval of d that excludes 0, and a difference not negligible (compare's rule)."""
    return (np.abs(d / se) > stats.t.ppf(0.975, df)) & (np.abs(np.expm1(d)) >= NEGLIGIBLE)


def candidates(a: np.ndarray, b: np.ndarray) -> Dict[str, np.ndarray]:
    """Decisions that take the spread from the 2k runs: name -> [trial] difference claimed."""
    k = a.shape[1]
    d, ssa, ssb = b.mean(1) - a.mean(1), _ss(a), _ss(b)
    df = 2 * k - 2
    pooled = _claimed(d, np.sqrt((ssa + ssb) / df * 2 / k), df)
    va, vb = ssa / (k - 1) / k, ssb / (k - 1) / k
    welch_df = (va + vb) ** 2 / (va ** 2 / (k - 1) + vb ** 2 / (k - 1))
    out = {"pooled t (compare)": pooled,
           "Welch t": _claimed(d, np.sqrt(va + vb), welch_df)}
    for q in (0.75, 0.90):  # the spread's upper confidence bound q, else cannot tell
        upper = np.sqrt((ssa + ssb) / stats.chi2.ppf(1 - q, df))
        out[f"t, and the difference beyond 1.96 x the spread's {q:.0%} upper bound"] = \
            pooled & (np.abs(d) > 1.96 * upper * math.sqrt(2 / k))
    larger = np.maximum(ssa, ssb) / (k - 1)
    out[f"t with the larger side's variance, {df} df"] = _claimed(d, np.sqrt(larger * 2 / k), df)
    out["t, and t again without any one run"] = pooled & _leave_one_out(a, b, d)
    out["t, and the runs' permutation test (compare at 4+ runs a side)"] = \
        pooled & (_permutation_p(a, b) <= 0.05)
    return out


def _permutation_p(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[trial] two-sided permutation p of the pooled t over every split of the 2k runs
    (compare_stats.runs_permutation_p, for many trials at once)."""
    x, k = np.hstack([a, b]), a.shape[1]
    in_b = np.zeros((math.comb(2 * k, k), 2 * k))
    for i, chosen in enumerate(itertools.combinations(range(2 * k), k)):
        in_b[i, list(chosen)] = 1.0
    mean_b = x @ in_b.T / k
    mean_a = x.sum(1, keepdims=True) / k - mean_b
    sq_b = (x * x) @ in_b.T
    ss = sq_b - k * mean_b ** 2 + (x * x).sum(1, keepdims=True) - sq_b - k * mean_a ** 2
    t = np.abs(mean_b - mean_a) / np.sqrt(np.maximum(ss, 1e-300) / (2 * k - 2) * 2 / k)
    observed = t[:, -1:]   # combinations() lists the split B = the last k runs last
    return np.mean(t >= observed * (1 - 1e-9), axis=1)


def _leave_one_out(a: np.ndarray, b: np.ndarray, d: np.ndarray) -> np.ndarray:
    ok = np.ones(len(d), dtype=bool)
    for side, j in itertools.product((0, 1), range(a.shape[1])):
        aa = np.delete(a, j, 1) if side == 0 else a
        bb = np.delete(b, j, 1) if side == 1 else b
        df = aa.shape[1] + bb.shape[1] - 2
        dd = bb.mean(1) - aa.mean(1)
        se = np.sqrt((_ss(aa) + _ss(bb)) / df * (1 / aa.shape[1] + 1 / bb.shape[1]))
        ok &= (np.abs(dd / se) > stats.t.ppf(0.975, df)) & (np.sign(dd) == np.sign(d))
    return ok


def _pattern_loglik(x: np.ndarray, mean: np.ndarray, log_sigmas) -> np.ndarray:
    """log likelihood of the runs x ([trial][2k]) with means `mean` (in units of STEP) about
    an unknown common level (integrated out); the spread known (log_sigmas None) or
    integrated out over a grid of log sigma with dsigma / sigma."""
    xc, mc = x - x.mean(1, keepdims=True), mean - mean.mean()
    if log_sigmas is None:
        return -((xc - STEP * mc) ** 2).sum(1) / (2 * SPREAD ** 2)
    # the model's shape without its scale: the step is STEP / SPREAD spreads
    sg = np.exp(log_sigmas)[None, :]
    delta = STEP / SPREAD
    q = ((xc ** 2).sum(1)[:, None] - 2 * delta * sg * (xc @ mc)[:, None]
         + delta ** 2 * sg ** 2 * (mc @ mc)) / (2 * sg ** 2)
    n = x.shape[1]
    return logsumexp(-(n - 1) * np.log(sg) - q, axis=1)


def oracle_statistic(x: np.ndarray, k: int, log_sigmas) -> np.ndarray:
    """log likelihood ratio of 'B 10 % slower or faster' to 'one fabric, runs on two levels'."""
    patterns = np.array(list(itertools.product((0.0, 1.0), repeat=2 * k)))
    step = np.r_[np.zeros(k), np.ones(k)]
    out = []
    for lo in range(0, len(x), 4000):
        part = x[lo:lo + 4000]
        null = logsumexp(np.stack([_pattern_loglik(part, p, log_sigmas) for p in patterns]), axis=0)
        alt = logsumexp(np.stack([_pattern_loglik(part, s, log_sigmas) for s in (step, -step)]),
                        axis=0)
        out.append(alt - np.log(2) - (null - np.log(len(patterns))))
    return np.concatenate(out)


def rows(trials: int, seed: int, k: int) -> Dict[str, list]:
    """rule -> [claim rate in each of CELLS]."""
    rng = np.random.default_rng(seed)
    out: Dict[str, list] = {}
    for _, bimodal, shift in CELLS:
        a, b = levels(rng, trials, k, bimodal), levels(rng, trials, k, bimodal) + shift
        for name, claimed in candidates(a, b).items():
            out.setdefault(name, []).append(float(claimed.mean()))
    grid = np.linspace(math.log(SPREAD / 15), math.log(SPREAD * 15), 120)
    oracles = (("oracle, spread known", None), ("oracle, spread unknown", grid)) if k == 3 else ()
    for name, log_sigmas in oracles:
        stat: Callable = lambda x: oracle_statistic(x, k, log_sigmas)  # noqa: E731
        null = np.hstack([levels(rng, trials, k, 1), levels(rng, trials, k, 1)])
        threshold = float(np.quantile(stat(null), 0.95))
        for _, bimodal, shift in CELLS:
            x = np.hstack([levels(rng, trials, k, bimodal),
                           levels(rng, trials, k, bimodal) + shift])
            out.setdefault(name, []).append(float(np.mean(stat(x) > threshold)))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--runs", type=int, default=3, help="runs a side (the oracles: at 3 only)")
    args = p.parse_args(argv)
    print(f"| decision ({args.runs} vs {args.runs} runs, {args.trials} trials a cell) | "
          "realistic: false | realistic: 10 % found | bimodal: false | bimodal: 10 % found |")
    print("|---|---|---|---|---|")
    for name, rates in rows(args.trials, args.seed, args.runs).items():
        print(f"| {name} | " + " | ".join(f"{100 * r:.1f} %" for r in rates) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
