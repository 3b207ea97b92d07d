#!/usr/bin/python3
"""Synthetic fabscope result files at scale, and the analysis timed on them.

Writes files as docs/file-format.md says (via analysis/tests/synthetic.py's run header and
/ranks, with site/pod/leaf labels), one per rank count, with the patterns that scale:
  lat-pairs     latency, pairs (i <-> i+N/2): N/2 pairs
  lat-hier      latency, 4 random matchings between leaves (samples.level set)
  bw-bisection  bandwidth 1 MiB, 2 random bisections
  allreduce     collective, one sample per rank per iteration (peer -1)
then runs `summary`, `report`, `diagnose` and `compare` (the file against itself) on each,
each under /usr/bin/time -v with a deadline: wall time and peak RSS.

Not a unit test (minutes at 16,384 ranks): run by hand, results into docs/scale.md.
    /usr/bin/python3 tests/bench/analysis_scale.py --ranks 1024 4096 16384 --out /tmp/scale
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ANALYSIS = os.path.join(HERE, "..", "..", "analysis")
sys.path.insert(0, os.path.join(ANALYSIS, "tests"))
from synthetic import SAMPLE_DTYPE, SUMMARY_DTYPE, SyntheticRun  # noqa: E402

RANKS_PER_NODE, NODES_PER_LEAF, LEAVES_PER_POD = 8, 4, 8


class LabelledRun(SyntheticRun):
    """SyntheticRun with leaf and pod labels (the topology a rail-optimized cluster has)."""

    def __init__(self, path, nranks):
        sites = {r: "dc1" for r in range(nranks)}
        super().__init__(path, nranks=nranks, ranks_per_host=RANKS_PER_NODE, sites=sites)

    def _write_ranks(self):
        super()._write_ranks()
        ranks = self.file["ranks"][()]
        node = np.arange(self.nranks) // RANKS_PER_NODE
        leaf = node // NODES_PER_LEAF
        ranks["leaf"] = np.char.encode(np.char.add("leaf", leaf.astype(str)))
        ranks["pod"] = np.char.encode(np.char.add("pod", (leaf // LEAVES_PER_POD).astype(str)))
        del self.file["ranks"]
        self.file.create_dataset("ranks", data=ranks)


def levels_of(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    node_a, node_b = a // RANKS_PER_NODE, b // RANKS_PER_NODE
    leaf_a, leaf_b = node_a // NODES_PER_LEAF, node_b // NODES_PER_LEAF
    pod_a, pod_b = leaf_a // LEAVES_PER_POD, leaf_b // LEAVES_PER_POD
    return np.where(node_a == node_b, 1, np.where(leaf_a == leaf_b, 2, np.where(pod_a == pod_b, 3, 4)))


def samples_for(rank, peer, iterations, base_ns, nbytes, rng, start_ns):
    """One row per (pair, iteration), each rank's operations back to back."""
    n = len(rank)
    out = np.zeros(n * iterations, dtype=SAMPLE_DTYPE)
    out["rank"] = np.repeat(rank, iterations)
    out["peer"] = np.repeat(peer, iterations)
    out["iter"] = np.tile(np.arange(iterations), n)
    out["bytes"] = nbytes
    level = levels_of(out["rank"], out["peer"]) if peer[0] >= 0 else np.zeros(len(out), int)
    out["level"] = level
    dur = base_ns * (1 + 0.5 * np.maximum(level - 1, 0)) * rng.lognormal(0.0, 0.1, len(out))
    out["t_post_ns"] = start_ns + out["iter"].astype(np.int64) * int(base_ns * 4)
    out["t_done_ns"] = out["t_post_ns"] + np.maximum(dur.astype(np.int64), 1)
    return out


def per_rank_summary(samples, divisor):
    """The file's /tests/NNNN/summary, vectorised (one sort, not one pass per rank)."""
    order = np.lexsort(((samples["t_done_ns"] - samples["t_post_ns"]), samples["rank"]))
    s = samples[order]
    lat = (s["t_done_ns"] - s["t_post_ns"]).astype(np.float64) / divisor
    ranks, starts, counts = np.unique(s["rank"], return_index=True, return_counts=True)
    out = np.zeros(len(ranks), dtype=SUMMARY_DTYPE)
    out["rank"], out["samples"] = ranks, counts
    ends = starts + counts - 1
    q = lambda p: lat[starts + np.floor(p * (counts - 1)).astype(int)]  # nearest-below: a bench file
    out["min_ns"], out["max_ns"] = lat[starts], lat[ends]
    out["mean_ns"] = np.add.reduceat(lat, starts) / counts
    out["p50_ns"], out["p99_ns"], out["p999_ns"] = q(0.5), q(0.99), q(0.999)
    out["bytes"] = np.add.reduceat(s["bytes"], starts)
    return out


def write_file(path, nranks, iterations, seed=1):
    rng = np.random.default_rng(seed)
    run = LabelledRun(path, nranks)
    # Skip SyntheticRun's per-rank summary loop (quadratic at this scale): write ours.
    run._summary = lambda samples, divisor: per_rank_summary(samples, divisor)
    half = nranks // 2
    tests = []
    tests.append(("lat-pairs", "latency", "pairs", np.arange(half), np.arange(half) + half, 8, 4000.0, 2))
    hier_a, hier_b = [], []
    for _ in range(4):
        order = rng.permutation(nranks)
        hier_a.append(order[:half]), hier_b.append(order[half:])
    tests.append(("lat-hier", "latency", "hierarchical", np.concatenate(hier_a), np.concatenate(hier_b), 8,
                  4000.0, 2))
    bis_a, bis_b = [], []
    for _ in range(2):
        order = rng.permutation(nranks)
        bis_a.append(order[:half]), bis_b.append(order[half:])
    tests.append(("bw-bisection", "bandwidth", "bisection", np.concatenate(bis_a), np.concatenate(bis_b),
                  1 << 20, 100_000.0, 1))
    tests.append(("allreduce", "allreduce", "collective", np.arange(nranks), np.full(nranks, -1), 1 << 20,
                  400_000.0, 1))
    samples_total = 0
    for name, kind, pattern, a, b, nbytes, base, divisor in tests:
        s = samples_for(a, b, iterations, base, nbytes, rng, run.start_ns())
        samples_total += len(s)
        run.add_test(name, kind, s, nbytes=nbytes, divisor=divisor, pattern=pattern,
                     metric="bandwidth" if kind == "bandwidth" else "latency")
    run.close(complete=True, exit_code=0)
    return samples_total


def timed(cmd, deadline_s):
    """(wall s, peak RSS MiB, exit code) of cmd under /usr/bin/time -v."""
    env = dict(os.environ, PYTHONPATH=ANALYSIS)
    t0 = time.monotonic()
    try:
        p = subprocess.run(["/usr/bin/time", "-v", "timeout", str(deadline_s)] + cmd, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           timeout=deadline_s + 30)
    except subprocess.TimeoutExpired:
        return time.monotonic() - t0, float("nan"), "timeout"
    wall = time.monotonic() - t0
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    return wall, (int(m.group(1)) / 1024 if m else float("nan")), p.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ranks", type=int, nargs="+", default=[1024, 4096, 16384])
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--out", default="/tmp/fabscope-analysis-scale")
    ap.add_argument("--deadline", type=int, default=600, help="seconds per command")
    ap.add_argument("--commands", nargs="+", default=["summary", "report", "diagnose", "compare"])
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    py = [sys.executable, "-m", "fabscope_analysis"]
    print("| ranks | samples | file MiB | write s | command | wall s | peak RSS MiB | exit |")
    print("|---:|---:|---:|---:|---|---:|---:|---:|")
    for n in args.ranks:
        path = os.path.join(args.out, f"scale-{n}.h5")
        t0 = time.monotonic()
        samples = write_file(path, n, args.iterations)
        write_s = time.monotonic() - t0
        size = os.path.getsize(path) / 2**20
        for command in args.commands:
            cmd = py + {"summary": ["summary", path],
                        "report": ["report", path, "-o", path + ".html"],
                        "diagnose": ["diagnose", path],
                        "compare": ["compare", path, path]}[command]
            wall, rss, rc = timed(cmd, args.deadline)
            print(f"| {n} | {samples} | {size:.1f} | {write_s:.1f} | {command} | {wall:.1f} | {rss:.0f} | {rc} |",
                  flush=True)


if __name__ == "__main__":
    main()
