#!/usr/bin/python3
"""Seeded benchmark of the verdicts on synthetic clusters (fabscope_analysis.synth).

A matrix of planted cases x noise models x seeds x sizes x patterns: each cell a synthetic
run, diagnosed by the real `diagnose()`, scored against the planted truth
(synth_scoring.py): found as the right component (leaf, host pair, NIC side), found but
misplaced, missed, and false culprits. Then accept's verdict over healthy runs of one
fabric (64 and 512 ranks): how often it gives the same verdict, and which rules fail.

On demand, not in CI (the full matrix takes tens of minutes at 64 x 8):
    /usr/bin/python3 tests/bench/verdicts_at_scale.py --quick           # under 2 minutes
    /usr/bin/python3 tests/bench/verdicts_at_scale.py --sizes 64x8 --seeds 5 --json out.json
Every option bounds the work; --max-minutes stops starting new runs after that long.
PYTHONPATH=DIR runs it against another copy of fabscope_analysis (e.g. an older commit's).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.join(HERE, "..", "..", "analysis"))  # after PYTHONPATH: it may override

import numpy as np  # noqa: E402

from fabscope_analysis.reader import open_result  # noqa: E402
from fabscope_analysis.synth import Cluster, generate  # noqa: E402
from synth_scoring import score, verdict_word  # noqa: E402

SIZES = {"6x1": Cluster(6, 1, 1), "8x8": Cluster(8, 8, 2), "16x8": Cluster(16, 8, 4),
         "64x8": Cluster(64, 8, 8)}
SCALE_PATTERNS = ["rails", "cross-rail", "ring", "bisection", "hierarchical"]
PATTERN_SETS = {"all-pairs": dict(patterns=["all-pairs"]),
                "budget": dict(patterns=["all-pairs"], budget_keep=0.1),
                "scale": dict(patterns=SCALE_PATTERNS),
                **{p: dict(patterns=[p]) for p in SCALE_PATTERNS}}
CASES = ["clean", "slow-send", "slow-recv", "lossy", "flapping", "bad-pair", "host-pair",
         "slow-uplink", "oversubscribed-uplink", "load-only-nic"]


def plant(case: str, c: Cluster, seed: int):
    """The fault specs of a case on cluster c, placed by the seed; None: not applicable."""
    rng = np.random.default_rng([seed, CASES.index(case)])
    h1, h2 = (int(x) for x in rng.choice(c.hosts, 2, replace=False))
    g1, g2 = (int(x) for x in rng.integers(0, c.gpus, 2))
    nic = f"host{h1}/{g1}" if c.gpus > 1 else f"host{h1}"
    leaf = f"leaf{int(rng.integers(0, c.leaves))}"
    specs = {"clean": [], "slow-send": [f"slow-send:{nic}"], "slow-recv": [f"slow-recv:{nic}"],
             "lossy": [f"lossy:{nic}:0.01"], "flapping": [f"flapping:{nic}"],
             "bad-pair": [f"bad-pair:host{h1}/{g1}-host{h2}/{g2}"],
             "host-pair": [f"host-pair:host{h1}-host{h2}"],
             "slow-uplink": [f"slow-uplink:{leaf}"] if c.leaves > 1 else None,
             "oversubscribed-uplink": [f"oversubscribed-uplink:{leaf}"] if c.leaves > 1 else None,
             "load-only-nic": [f"slow-recv:{nic}@load"]}
    return specs[case]


def diagnose_file(path):
    from fabscope_analysis.diagnose import diagnose
    with open_result(path) as result, contextlib.redirect_stdout(io.StringIO()):
        return diagnose(result)


def run_cell(tmp, size, pattern_set, noise, case, seed, iterations):
    c = SIZES[size]
    specs = plant(case, c, seed)
    if specs is None:
        return None
    path = os.path.join(tmp, f"cell-{size}-{pattern_set}-{noise}-{case}-{seed}.h5")
    options = dict(PATTERN_SETS[pattern_set])
    if c.gpus == 1:  # one GPU a host: no rails to cross
        options["patterns"] = [p for p in options["patterns"] if p != "cross-rail"]
        if not options["patterns"]:
            return None
    t0 = time.perf_counter()
    truth = generate(path, c, noise=noise, faults=specs, seed=seed, iterations=iterations,
                     **options)
    t1 = time.perf_counter()
    try:
        scored = score(diagnose_file(path), truth)
    except Exception as exc:  # a diagnosis that breaks is a result too
        scored = {"verdict": f"error: {type(exc).__name__}: {exc}"[:120], "culprits": 0,
                  "faults": ["missed"] * len(truth["faults"]), "false": 0, "false_examples": []}
    finally:
        os.remove(path)
    scored.update(size=size, patterns=pattern_set, noise=noise, case=case, seed=seed,
                  planted=specs, generate_s=round(t1 - t0, 2),
                  diagnose_s=round(time.perf_counter() - t1, 2))
    return scored


def _run_cell_until(item):
    """run_cell unless the campaign's deadline passed (then None, counted as not started)."""
    deadline, cell = item
    if time.monotonic() > deadline:
        return "skipped"
    return run_cell(*cell)


def run_cells(wanted, jobs, deadline):
    """(cells, how many were not started): every cell of `wanted` in order, `jobs` at once;
    a line per finished cell on stderr, so a long campaign shows where it is."""
    cells, skipped = [], 0
    items = [(deadline, cell) for cell in wanted]
    with multiprocessing.Pool(jobs) if jobs > 1 else contextlib.nullcontext() as pool:
        results = pool.imap(_run_cell_until, items) if pool else map(_run_cell_until, items)
        for done, cell in enumerate(results, 1):
            if cell == "skipped":
                skipped += 1
            elif cell is not None:
                cells.append(cell)
                print(f"[{done}/{len(items)}] {cell['size']} {cell['patterns']} {cell['noise']} "
                      f"{cell['case']} seed {cell['seed']}: {cell['verdict']} {cell['faults']} "
                      f"false {cell['false']}", file=sys.stderr, flush=True)
    return cells, skipped


def summarise_cells(cells):
    """One row per (size, patterns, noise, case) over its seeds."""
    groups = defaultdict(list)
    for cell in cells:
        groups[(cell["size"], cell["patterns"], cell["noise"], cell["case"])].append(cell)
    rows = []
    for key, group in groups.items():
        verdicts = Counter(g["verdict"] if not g["verdict"].startswith("error") else "error"
                           for g in group)
        outcome = Counter(o for g in group for o in g["faults"])
        rows.append({"size": key[0], "patterns": key[1], "noise": key[2], "case": key[3],
                     "runs": len(group), "fit": verdicts.get("fit", 0),
                     "not fit": verdicts.get("not fit", 0),
                     "cannot tell": verdicts.get("cannot tell", 0),
                     "error": verdicts.get("error", 0), "right": outcome.get("right", 0),
                     "misplaced": outcome.get("misplaced", 0), "blind": outcome.get("blind", 0),
                     "missed": outcome.get("missed", 0),
                     "false mean": round(float(np.mean([g["false"] for g in group])), 1),
                     "false max": max(g["false"] for g in group),
                     "ok": sum(1 for g in group if _cell_ok(g)),
                     "seconds": round(sum(g["generate_s"] + g["diagnose_s"] for g in group), 1)})
    return rows


def _cell_ok(cell) -> bool:
    """The target: a clean fabric is fit; a fault is found as the right component with at
    most one false culprit."""
    if cell["case"] == "clean":
        return cell["verdict"] == "fit"
    return all(o == "right" for o in cell["faults"]) and cell["false"] <= 1


def print_table(rows, columns, stream=sys.stdout):
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in columns}
    print("| " + " | ".join(c.ljust(widths[c]) for c in columns) + " |", file=stream)
    print("|" + "|".join("-" * (widths[c] + 2) for c in columns) + "|", file=stream)
    for r in rows:
        print("| " + " | ".join(str(r[c]).ljust(widths[c]) for c in columns) + " |", file=stream)


def accept_stability(tmp, size, runs, fabric_seed, noise, iterations, deadline):
    """accept's verdict (the criteria in force) over healthy runs of one fabric."""
    from fabscope_analysis.verdict import compute_verdict
    words, rules, seconds = Counter(), Counter(), 0.0
    path = os.path.join(tmp, "accept.h5")
    for i in range(runs):
        if time.monotonic() > deadline:
            break
        t0 = time.perf_counter()
        generate(path, SIZES[size], noise=noise, seed=1000 + i, fabric_seed=fabric_seed,
                 iterations=iterations)
        with open_result(path) as result, contextlib.redirect_stdout(io.StringIO()):
            verdict = compute_verdict(result)
        words[verdict_word(verdict) or "?"] += 1
        for reason in getattr(verdict, "reasons", []):
            if getattr(reason, "failing", True):
                rules[getattr(reason, "rule", "") or getattr(reason, "kind", "?")] += 1
        seconds += time.perf_counter() - t0
        os.remove(path)
    total = sum(words.values())
    modal = words.most_common(1)[0][1] if total else 0
    return {"size": size, "ranks": SIZES[size].ranks, "noise": noise, "runs": total,
            "PASS": words.get("PASS", 0), "FAIL": words.get("FAIL", 0),
            "CANNOT TELL": words.get("CANNOT TELL", 0),
            "same verdict": f"{100 * modal / total:.0f} %" if total else "-",
            "failing rules": ", ".join(f"{r} x{n}" for r, n in rules.most_common(4)) or "-",
            "seconds": round(seconds, 1)}


def _compare_rows(paths_a, paths_b):
    """compare's rows for side A vs side B (one comparison, runs as replicates)."""
    from fabscope_analysis.compare import run_compare
    results = [open_result(p) for p in paths_a + paths_b]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            frame = run_compare(results, None, split=len(paths_a), stream=io.StringIO())
    finally:
        for r in results:
            r.close()
    stats = frame["stat"] if "stat" in frame.columns else [""] * len(frame)
    return [(str(stat), str(v).lower()) for stat, v in zip(stats, frame["verdict"])]


def compare_rates(tmp, trials, runs_per_side, slowdown, deadline):
    """Share of compare's rows called a difference (better or worse) over trials of
    runs_per_side vs runs_per_side runs of one fabric; side B `slowdown` times slower.
    Per row, and per trial: any row called a difference (A/A: a false one), every p50 row
    called worse (a slowdown found)."""
    c = Cluster(8, 1, 2)
    rows = different = worse = done = any_difference = p50_worse = 0
    for trial in range(trials):
        if time.monotonic() > deadline:
            break
        paths = {"a": [], "b": []}
        for side, scale in (("a", 1.0), ("b", slowdown)):
            for k in range(runs_per_side):
                path = os.path.join(tmp, f"cmp-{side}{k}.h5")
                seed = 5000 + 100 * trial + 10 * k + (side == "b")
                generate(path, c, noise=f"realistic,scale={scale}", seed=seed,
                         fabric_seed=900 + trial, iterations=50)
                paths[side].append(path)
        rows_of_trial = _compare_rows(paths["a"], paths["b"])
        verdicts = [v for _, v in rows_of_trial]
        rows += len(verdicts)
        different += sum(v.startswith(("better", "worse")) for v in verdicts)
        worse += sum(v.startswith("worse") for v in verdicts)
        any_difference += any(v.startswith(("better", "worse")) for v in verdicts)
        p50 = [v for stat, v in rows_of_trial if stat == "p50"]
        p50_worse += bool(p50) and all(v.startswith("worse") for v in p50)
        done += 1
        for p in paths["a"] + paths["b"]:
            os.remove(p)
    share = (lambda x: f"{100 * x / rows:.0f} %" if rows else "-")  # noqa: E731
    return {"runs per side": f"{runs_per_side} vs {runs_per_side}",
            "side B": "same fabric" if slowdown == 1.0 else f"{100 * (slowdown - 1):.0f} % slower",
            "trials": done, "rows": rows, "called different": share(different),
            "called worse": share(worse), "trials with a difference": f"{any_difference}/{done}",
            "trials with every p50 worse": f"{p50_worse}/{done}"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="6x1 and 16x8, realistic, one seed, all-pairs and scale patterns, "
                        "accept over 3 runs at 64 ranks, one compare trial: under 2 minutes")
    p.add_argument("--sizes", default="6x1,16x8,64x8", help=f"of {', '.join(SIZES)}")
    p.add_argument("--patterns", default="all-pairs,scale,budget", help=f"of {', '.join(PATTERN_SETS)}")
    p.add_argument("--noise", default="realistic,realistic-quiet", help="noise models, comma-separated")
    p.add_argument("--cases", default=",".join(CASES), help="planted cases, comma-separated")
    p.add_argument("--seeds", type=int, default=3, help="seeds per cell (3)")
    p.add_argument("--first-seed", type=int, default=1, help="the first seed (1): seeds run "
                   "FIRST .. FIRST + SEEDS - 1, so a campaign can be split and its JSON merged")
    p.add_argument("--jobs", type=int, default=1,
                   help="diagnose this many cells at once, in separate processes (1)")
    p.add_argument("--iterations", type=int, default=20, help="samples per pair (20)")
    p.add_argument("--accept-runs", default="8x8:10,64x8:5",
                   help="healthy runs for accept's stability, SIZE:RUNS,... ('' for none)")
    p.add_argument("--compare-trials", type=int, default=10,
                   help="trials of compare (8 hosts: 1 vs 1 and 3 vs 3 runs of one fabric, and "
                        "3 vs 3 with side B 10 %% slower); 0 for none (10)")
    p.add_argument("--max-minutes", type=float, default=60.0, help="stop starting runs after this")
    p.add_argument("--json", metavar="OUT", help="write every cell and row here")
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.patterns, args.noise, args.seeds = "6x1,16x8", "all-pairs,scale", "realistic", 1
        args.accept_runs, args.compare_trials = "8x8:3", 1
    for size in args.sizes.split(",") + [s.split(":")[0] for s in args.accept_runs.split(",") if s]:
        if size not in SIZES:
            p.error(f"size {size!r}: expected one of {', '.join(SIZES)}")
    for case in args.cases.split(","):
        if case not in CASES:
            p.error(f"case {case!r}: expected one of {', '.join(CASES)}")
    for pattern in args.patterns.split(","):
        if pattern not in PATTERN_SETS:
            p.error(f"patterns {pattern!r}: expected one of {', '.join(PATTERN_SETS)}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    start = time.monotonic()
    deadline = start + 60 * args.max_minutes
    with tempfile.TemporaryDirectory(prefix="fabscope-bench-") as tmp:
        # seed after seed, so a campaign stopped by --max-minutes has as many seeds in every cell
        wanted = [(tmp, size, pattern_set, noise, case, seed, args.iterations)
                for seed in range(args.first_seed, args.first_seed + args.seeds)
                for size in args.sizes.split(",") for pattern_set in args.patterns.split(",")
                for noise in args.noise.split(",") for case in args.cases.split(",")]
        cells, skipped = run_cells(wanted, args.jobs, deadline)
        rows = summarise_cells(cells)
        print("## diagnose on synthetic clusters (right = named as the planted component; ok = "
              "clean fit, or every fault right with at most one false culprit)\n")
        print_table(rows, ["size", "patterns", "noise", "case", "runs", "fit", "not fit",
                           "cannot tell", "error", "right", "misplaced", "blind", "missed", "false mean",
                           "false max", "ok", "seconds"])
        accept_rows = []
        for item in [s for s in args.accept_runs.split(",") if s]:
            size, runs = item.split(":")
            accept_rows.append(accept_stability(tmp, size, int(runs), 77, "realistic",
                                                args.iterations, deadline))
        if accept_rows:
            print("\n## accept over healthy runs of one fabric (criteria in force)\n")
            print_table(accept_rows, list(accept_rows[0]))
        compare_rows = [compare_rates(tmp, args.compare_trials, n, slow, deadline)
                        for n, slow in ((1, 1.0), (3, 1.0), (3, 1.1))] if args.compare_trials else []
        if compare_rows:
            print("\n## compare on 8 hosts, realistic noise (3 % run-to-run): rows called a "
                  "difference\n")
            print_table(compare_rows, list(compare_rows[0]))
    elapsed = time.monotonic() - start
    print(f"\n{len(cells)} runs diagnosed in {elapsed:.0f} s"
          + (f"; {skipped} not started (--max-minutes {args.max_minutes:g})" if skipped else ""))
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"cells": cells, "rows": rows, "accept": accept_rows, "compare": compare_rows,
                       "seconds": round(elapsed, 1)}, out, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
