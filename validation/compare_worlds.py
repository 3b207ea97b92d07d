#!/usr/bin/python3
"""Benchmark: this checkout's validation world against another commit's, same cases and seeds.

Exports `validation/` of the base commit (git archive) beside this checkout's, runs both
worlds on each case and seed (`python3 -m validation run`, one at a time, at nice), and
prints per run: each world's CPU and wall seconds and their ratio; whether the sample
tables are identical; if not, how the per-pair medians of the two parallel passes compare
(latency: one-way ns; bandwidth: GB/s), pair by pair (the fabric, its routes and faults
are the same for a seed in both worlds; only the noise draws may differ); and with
--diagnose, `diagnose`'s verdict and score (validation/sweep.py's) on each file.

    nice python3 validation/compare_worlds.py --base a9867d4 --hosts 8 --gpus 8 \\
        --hosts-per-leaf 2 --seeds 5 6 --cases clean "nic lossy 2e-4/packet" --diagnose
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from validation.sweep import CASES, score  # noqa: E402

EXTRA_CASES = {"nic receive 0.5": ["--fault", "nic-rx-slow:0.5"],
               "nic receive 0.5, bursts 1 %, drift": ["--fault", "nic-rx-slow:0.5", "--bursts", "0.01",
                                                      "--drift"]}


def export(base: str, into: str) -> None:
    """validation/ of commit `base`, extracted under `into` (the directory to run it in)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", base, "validation"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)


def simulate(cwd: str, args, case: List[str], seed: int, out: str) -> Tuple[float, float]:
    """One world run; returns (CPU seconds of the child, wall seconds)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "analysis"))
    command = ["nice", "-n", "10", sys.executable, "-m", "validation", "run", "--quiet",
               "--hosts", str(args.hosts), "--gpus", str(args.gpus),
               "--hosts-per-leaf", str(args.hosts_per_leaf), "--iterations", str(args.iterations),
               "--seed", str(seed), "--out", out] + case
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.time() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{cwd}: {' '.join(command)}: {done.stderr[-800:]}")
    return (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime), wall


def samples(path: str) -> Dict[str, np.ndarray]:
    import h5py
    with h5py.File(path, "r") as h5:
        return {k: h5["tests"][k]["samples"][()] for k in h5["tests"]}


def pair_medians(table: np.ndarray, latency: bool) -> Dict[Tuple[int, int], float]:
    headline = table[(table["flags"] & 0xff00) == 0]
    ns = (headline["t_done_ns"] - headline["t_post_ns"]).astype(np.float64)
    value = ns / 2 if latency else headline["bytes"] / ns
    out: Dict[Tuple[int, int], List[float]] = {}
    for s, d, v in zip(headline["rank"], headline["peer"], value):
        out.setdefault((int(s), int(d)), []).append(float(v))
    return {k: float(np.median(v)) for k, v in out.items()}


def compare(old: str, new: str) -> Dict[str, object]:
    a, b = samples(old), samples(new)
    identical = a.keys() == b.keys() and all(a[k].shape == b[k].shape and (a[k] == b[k]).all()
                                             for k in a)
    result: Dict[str, object] = {"identical": identical}
    if identical:
        return result
    for key, name, latency in (("0000", "latency", True), ("0002", "bandwidth", False)):
        ma, mb = pair_medians(a[key], latency), pair_medians(b[key], latency)
        pairs = sorted(ma.keys() & mb.keys())
        va, vb = np.array([ma[p] for p in pairs]), np.array([mb[p] for p in pairs])
        ratio = vb / va
        result[name] = {
            "pairs": len(pairs),
            "old_p1_p50_p99": [round(float(x), 4) for x in np.percentile(va, [1, 50, 99])],
            "new_p1_p50_p99": [round(float(x), 4) for x in np.percentile(vb, [1, 50, 99])],
            "pair_ratio_p1_p50_p99": [round(float(x), 4) for x in np.percentile(ratio, [1, 50, 99])],
            "pairs_off_by_5pct": int((np.abs(ratio - 1) > 0.05).sum()),
            # a shift of the whole distribution: the mean log ratio and its standard error
            "mean_log_ratio": round(float(np.log(ratio).mean()), 5),
            "mean_log_ratio_se": round(float(np.log(ratio).std(ddof=1) / np.sqrt(len(ratio))), 5)}
    return result


def diagnose(path: str) -> Dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "analysis"))
    report = path[:-3] + ".diagnosis.json"
    subprocess.run(["nice", "-n", "10", sys.executable, "-m", "fabscope_analysis", "diagnose", path,
                    "--json", report], cwd=ROOT, env=env, capture_output=True, text=True)
    with open(report, encoding="utf-8") as f:
        diagnosis = json.load(f)
    with open(path[:-3] + ".truth.json", encoding="utf-8") as f:
        truth = json.load(f)
    s = score(diagnosis, truth)
    return {"verdict": s["verdict"], "faults": s["faults"], "false": s["false"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="the commit whose validation/ is the old world")
    p.add_argument("--hosts", type=int, default=8)
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--hosts-per-leaf", type=int, default=2)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--seeds", type=int, nargs="+", required=True)
    p.add_argument("--cases", nargs="+", default=["clean"],
                   help="case names of validation/sweep.py's CASES, or " + ", ".join(EXTRA_CASES))
    p.add_argument("--diagnose", action="store_true", help="diagnose and score both files")
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args(argv)
    cases = {**CASES, **EXTRA_CASES}
    unknown = [c for c in args.cases if c not in cases]
    if unknown:
        p.error(f"unknown cases {unknown}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="compare-worlds-") as work:
        base_dir = os.path.join(work, "base")
        os.makedirs(base_dir)
        export(args.base, base_dir)
        for case in args.cases:
            for seed in args.seeds:
                old, new = os.path.join(work, f"old-{seed}.h5"), os.path.join(work, f"new-{seed}.h5")
                cpu_old, wall_old = simulate(base_dir, args, cases[case], seed, old)
                cpu_new, wall_new = simulate(str(ROOT), args, cases[case], seed, new)
                row = {"case": case, "seed": seed, "cpu_old_s": round(cpu_old, 2),
                       "cpu_new_s": round(cpu_new, 2), "cpu_ratio": round(cpu_old / cpu_new, 2),
                       "wall_old_s": round(wall_old, 2), "wall_new_s": round(wall_new, 2),
                       **compare(old, new)}
                if args.diagnose:
                    row["diagnose_old"], row["diagnose_new"] = diagnose(old), diagnose(new)
                print(json.dumps(row), flush=True)
                rows.append(row)
    cpu_old = sum(r["cpu_old_s"] for r in rows)
    cpu_new = sum(r["cpu_new_s"] for r in rows)
    print(f"{len(rows)} runs at {args.hosts} x {args.gpus}: CPU {cpu_old:.1f} s old, {cpu_new:.1f} s new, "
          f"ratio {cpu_old / cpu_new:.2f}; identical samples in "
          f"{sum(1 for r in rows if r['identical'])} of {len(rows)}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
