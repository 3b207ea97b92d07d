"""compare's error rates by seeded simulation: same-fabric false differences and the power
to find a planted slowdown, at k runs per side.

    python3 analysis/tests/compare_rates.py [--trials 400] [--runs 3] [--resamples 200]

Model, per trial: one fabric (8 ranks, each with a persistent host factor), two sides of
`runs` runs each. Every run draws its own level (the noise model's run-to-run figures:
lognormal `run_spread`, and with probability 1/2 a step up by `bimodal_step`), every
sample its jitter (`sample_spread`) and rare millisecond hiccups (`hiccup_rate`). The
figures come from the synthetic cluster generator's presets (synth.noise): "realistic"
(3 % run-to-run spread) and "realistic+bimodal" (runs also on two levels 10 % apart).
Side B is slowed by `slowdown` (1.0: an A/A trial). Each trial goes through the real
compare_stats.compare_figures (the run-level model: t on the runs' log figures, the
within-run block bootstrap as the floor of their variance, and at 4 vs 4 runs or more
the runs' permutation test) for p50 and p99. compare_bound.py gives what any decision
can do at 3 vs 3 when runs fall on two levels.

Rates are printed with their 95 % Wilson interval (over trials).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Dict, List, Tuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from fabscope_analysis.compare_stats import (archive_spread, compare_figures,  # noqa: E402
                                             run_log_figures)
from fabscope_analysis.resampling import Unit  # noqa: E402
from fabscope_analysis.synth.noise import noise_model  # noqa: E402

RANKS = 8
ITERATIONS = 250          # 8 ranks x 250 = 2,000 samples a run: p99 is not a thin tail
BASE_NS = 20_000.0
STATS = ("p50", "p99")
MODELS = ("realistic", "realistic+bimodal")


def wilson(k: int, n: int, z: float = 1.96) -> Tuple[float, float]:
    """95 % Wilson score interval of a rate k / n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _run(rng: np.random.Generator, host: np.ndarray, model, slowdown: float) -> List[List[Unit]]:
    level = math.exp(rng.normal(0.0, model.run_spread)) if model.run_spread else 1.0
    if model.bimodal_step and rng.random() < 0.5:
        level *= 1.0 + model.bimodal_step
    ranks = []
    for factor in host:
        t = BASE_NS * factor * level * slowdown * rng.lognormal(0.0, model.sample_spread, ITERATIONS)
        hiccup = rng.random(ITERATIONS) < model.hiccup_rate
        t[hiccup] += rng.uniform(*model.hiccup_ms, int(hiccup.sum())) * 1e6
        ranks.append(Unit(t, np.full(ITERATIONS, 8.0)))
    return [ranks]  # one repeat


def trial(seed: int, spec: str, runs: int, slowdown: float, resamples: int,
          archive_runs: int = 0) -> Dict[str, str]:
    """One comparison of `runs` vs `runs` runs of one fabric: stat -> verdict. With
    archive_runs, that many more A/A runs of the fabric stand for run-to-run spread
    (compare --aa-archive)."""
    model = noise_model(spec)
    rng = np.random.default_rng(seed)
    host = np.exp(rng.normal(0.0, model.host_spread, RANKS))
    a = [_run(rng, host, model, 1.0) for _ in range(runs)]
    b = [_run(rng, host, model, slowdown) for _ in range(runs)]
    archive = None
    if archive_runs:
        logs = run_log_figures("latency", [_run(rng, host, model, 1.0)
                                           for _ in range(archive_runs)], STATS)
        archive = {stat: archive_spread(logs[:, i], "simulated A/A runs")
                   for i, stat in enumerate(STATS)}
    rows = compare_figures("latency", a, b, STATS, resamples=resamples, seed=seed,
                           archive=archive)
    return {r.stat: r.verdict for r in rows}


def rates(spec: str, runs: int, trials: int, resamples: int, seed: int = 1,
          archive_runs: int = 0) -> Dict[str, tuple]:
    """{'aa p50': (claims, trials), 'power p50': (worse, trials), ...}."""
    out: Dict[str, list] = {}
    for i in range(trials):
        aa = trial(seed * 100_000 + i, spec, runs, 1.0, resamples, archive_runs)
        slow = trial(seed * 100_000 + 50_000 + i, spec, runs, 1.10, resamples, archive_runs)
        for stat in STATS:
            out.setdefault(f"aa {stat}", [0, 0])
            out.setdefault(f"power {stat}", [0, 0])
            out[f"aa {stat}"][0] += aa[stat] in ("better", "worse")
            out[f"aa {stat}"][1] += 1
            out[f"power {stat}"][0] += slow[stat] == "worse"
            out[f"power {stat}"][1] += 1
    return {k: tuple(v) for k, v in out.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=400)
    p.add_argument("--runs", type=int, nargs="+", default=[3])
    p.add_argument("--resamples", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--archive", type=int, default=0, metavar="K",
                   help="also pool the spread of K simulated A/A runs (compare --aa-archive)")
    p.add_argument("--models", nargs="+", default=list(MODELS))
    args = p.parse_args(argv)
    print("| noise model | runs a side | figure | same-fabric false difference | "
          "planted 10 % slowdown found |")
    print("|---|---|---|---|---|")
    for spec in args.models:
        for runs in args.runs:
            r = rates(spec, runs, args.trials, args.resamples, args.seed, args.archive)
            for stat in STATS:
                cells = []
                for what in ("aa", "power"):
                    k, n = r[f"{what} {stat}"]
                    lo, hi = wilson(k, n)
                    cells.append(f"{k}/{n} = {100 * k / n:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}]")
                where = f"{runs}" + (f" + A/A archive of {args.archive}" if args.archive else "")
                print(f"| {spec} | {where} | {stat} | {cells[0]} | {cells[1]} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
