#!/usr/bin/python3
"""fabscope's NCCL all-reduce against the reference loop, size by size.

Usage: compare_allreduce.py ALLREDUCE.h5[,ALLREDUCE.h5...] REFERENCE.jsonl [REFERENCE.jsonl ...]

Both sides are reduced the same way: per iteration the slowest rank's own
launch-to-completion time, then the median over iterations; busbw = bytes /
median x 2(n-1)/n. The reference figure is the mean of its runs (run before
and after fabscope on the same GPUs, so drift shows as their spread).
Targets (issue: multi-GPU run): busbw ratio >= 0.98 from 1 MiB up, time
ratio <= 1.05 below. Prints a Markdown table; exit 0 (a benchmark, not a test).
"""
import json
import sys

import h5py
import numpy as np


def fabscope_sizes(path):
    out = {}
    with h5py.File(path, "r") as f:
        nranks = int(f.attrs["nranks"])
        for name, group in f["tests"].items():
            a = group.attrs
            if a["kind"] != "allreduce" or a["status"] != "passed":
                continue
            s = group["samples"][()]
            iters = np.unique(s["iter"])
            slowest = [float(np.max((s["t_done_ns"] - s["t_post_ns"])[s["iter"] == i])) for i in iters]
            ranks = len(np.unique(s["rank"]))
            out[int(a["bytes"])] = (float(np.median(slowest)), ranks, float(a.get("busbw_gbps", float("nan"))))
    return out, nranks


def reference_sizes(paths):
    runs = {}
    for p in paths:
        for line in open(p):
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            if not r["verified"]:
                raise SystemExit(f"{p}: reference result at {r['bytes']} B not verified")
            runs.setdefault(r["bytes"], []).append((r["p50_ns"], r["ranks"]))
    return runs


def human(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    runs = [fabscope_sizes(p)[0] for p in argv[1].split(",")]
    # Several fabscope runs: the median of their per-size medians.
    fab = {}
    for size in set.intersection(*(set(r) for r in runs)):
        values = sorted(r[size] for r in runs)
        fab[size] = values[len(values) // 2]
    ref = reference_sizes(argv[2:])
    print("| size | ranks | reference p50 (spread) | fabscope p50 | time ratio | reference busbw | fabscope busbw | busbw ratio | fabscope busbw (global clock) | target |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    met = True
    for size in sorted(set(fab) & set(ref)):
        p50s = [p for p, _ in ref[size]]
        ranks = ref[size][0][1]
        r50 = float(np.mean(p50s))
        spread = (max(p50s) - min(p50s)) / r50 if r50 else 0.0
        f50, franks, fglobal = fab[size]
        factor = 2.0 * (ranks - 1) / ranks if ranks > 1 else 1.0
        rbus, fbus = size / r50 * factor, size / f50 * factor
        if size >= 1 << 20:
            ok = fbus / rbus >= 0.98
            target = "busbw >= 0.98: " + ("met" if ok else "NOT met")
        else:
            ok = f50 / r50 <= 1.05
            target = "time <= 1.05: " + ("met" if ok else "NOT met")
        met &= ok
        print(f"| {human(size)} | {franks} | {r50 / 1e3:.1f} us (±{spread * 50:.1f}%) | {f50 / 1e3:.1f} us | {f50 / r50:.3f} | "
              f"{rbus:.1f} GB/s | {fbus:.1f} GB/s | {fbus / rbus:.3f} | {fglobal:.1f} GB/s | {target} |")
    print()
    print("all targets met" if met else "some targets NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
