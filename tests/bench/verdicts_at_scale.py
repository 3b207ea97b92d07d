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
A campaign splits over calls (--first-seed, --jobs, --json rewritten after every run) and
--merge a.json b.json ... prints their tables together (docs/analysis.md, "synth").
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


def _run_until(item):
    """One job (a cell, or an accept run) unless the campaign's deadline passed (then
    "skipped", counted as not started)."""
    deadline, kind, job = item
    if time.monotonic() > deadline:
        return kind, "skipped"
    return kind, (run_cell(*job) if kind == "cell" else accept_run(*job))


def run_jobs(jobs_wanted, jobs, deadline, checkpoint=None):
    """(cells, accept runs, how many were not started): every job in order, `jobs` at once;
    a line per finished job on stderr, and `checkpoint(cells, accepts)` after each, so a
    campaign cut short still leaves what it finished."""
    cells, accepts, skipped = [], [], 0
    items = [(deadline, kind, job) for kind, job in jobs_wanted]
    with multiprocessing.Pool(jobs) if jobs > 1 else contextlib.nullcontext() as pool:
        results = pool.imap(_run_until, items) if pool else map(_run_until, items)
        for done, (kind, out) in enumerate(results, 1):
            if out == "skipped":
                skipped += 1
                continue
            if out is None:
                continue
            if kind == "cell":
                cells.append(out)
                print(f"[{done}/{len(items)}] {out['size']} {out['patterns']} {out['noise']} "
                      f"{out['case']} seed {out['seed']}: {out['verdict']} {out['faults']} "
                      f"false {out['false']}", file=sys.stderr, flush=True)
            else:
                accepts.append(out)
                print(f"[{done}/{len(items)}] accept {out['size']} seed {out['seed']}: "
                      f"{out['verdict']} {out['failing']}", file=sys.stderr, flush=True)
            if checkpoint:
                checkpoint(cells, accepts)
    return cells, accepts, skipped


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


def print_table(rows, columns, stream=None):
    stream = stream or sys.stdout   # at call time: a caller may have redirected it
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in columns}
    print("| " + " | ".join(c.ljust(widths[c]) for c in columns) + " |", file=stream)
    print("|" + "|".join("-" * (widths[c] + 2) for c in columns) + "|", file=stream)
    for r in rows:
        print("| " + " | ".join(str(r[c]).ljust(widths[c]) for c in columns) + " |", file=stream)


def accept_run(tmp, size, seed, fabric_seed, noise, iterations):
    """accept's verdict (the criteria in force) over one healthy run of one fabric."""
    from fabscope_analysis.verdict import compute_verdict
    t0 = time.perf_counter()
    path = os.path.join(tmp, f"accept-{size}-{seed}.h5")
    generate(path, SIZES[size], noise=noise, seed=seed, fabric_seed=fabric_seed,
             iterations=iterations)
    try:
        with open_result(path) as result, contextlib.redirect_stdout(io.StringIO()):
            verdict = compute_verdict(result)
    finally:
        os.remove(path)
    rules = [getattr(r, "rule", "") or getattr(r, "kind", "?")
             for r in getattr(verdict, "reasons", []) if getattr(r, "failing", True)]
    blind = [c.rule for c in verdict.checks if c.label == "CANNOT TELL"]
    return {"size": size, "seed": seed, "noise": noise, "fabric_seed": fabric_seed,
            "verdict": verdict_word(verdict) or "?", "failing": rules, "cannot_tell": blind,
            "seconds": round(time.perf_counter() - t0, 1)}


def summarise_accept(records):
    """One row per size: how often accept gave its most common verdict."""
    rows = []
    for size in sorted({r["size"] for r in records}, key=lambda x: SIZES[x].ranks):
        mine = [r for r in records if r["size"] == size]
        words = Counter(r["verdict"] for r in mine)
        rules = Counter(rule for r in mine for rule in r["failing"])
        # Runs recorded before the field existed count as none.
        blind = Counter(rule for r in mine for rule in dict.fromkeys(r.get("cannot_tell", [])))
        total, modal = len(mine), words.most_common(1)[0][1]
        rows.append({"size": size, "ranks": SIZES[size].ranks, "noise": mine[0]["noise"],
                     "runs": total, "PASS": words.get("PASS", 0), "FAIL": words.get("FAIL", 0),
                     "CANNOT TELL": words.get("CANNOT TELL", 0),
                     "same verdict": f"{100 * modal / total:.0f} %",
                     "failing rules": ", ".join(f"{r} x{n}" for r, n in rules.most_common(4)) or "-",
                     "rules that cannot tell": ", ".join(
                         f"{r} x{n}" for r, n in blind.most_common(4)) or "-",
                     "seconds": round(sum(r["seconds"] for r in mine), 1)})
    return rows


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
    p.add_argument("--sizes", default="6x1,16x8,64x8",
                   help=f"of {', '.join(SIZES)} ('' for none: accept or compare only)")
    p.add_argument("--patterns", default="all-pairs,scale,budget", help=f"of {', '.join(PATTERN_SETS)}")
    p.add_argument("--noise", default="realistic,realistic-quiet", help="noise models, comma-separated")
    p.add_argument("--cases", default=",".join(CASES), help="planted cases, comma-separated")
    p.add_argument("--seeds", type=int, default=3, help="seeds per cell (3)")
    p.add_argument("--first-seed", type=int, default=1, help="the first seed (1): seeds run "
                   "FIRST .. FIRST + SEEDS - 1, so a campaign can be split and its JSON merged")
    p.add_argument("--jobs", type=int, default=1,
                   help="run this many cells (and accept runs) at once, in separate processes (1)")
    p.add_argument("--iterations", type=int, default=20, help="samples per pair (20)")
    p.add_argument("--accept-runs", default="8x8:10,64x8:5",
                   help="healthy runs for accept's stability, SIZE:RUNS,... ('' for none); run "
                        "seeds 1000 + FIRST - 1 onwards (so --first-seed splits them too)")
    p.add_argument("--compare-trials", type=int, default=10,
                   help="trials of compare (8 hosts: 1 vs 1 and 3 vs 3 runs of one fabric, and "
                        "3 vs 3 with side B 10 %% slower); 0 for none (10)")
    p.add_argument("--max-minutes", type=float, default=60.0, help="stop starting runs after this")
    p.add_argument("--json", metavar="OUT", help="write every cell, accept run and row here "
                   "(rewritten after each, so a campaign cut short leaves what it finished)")
    p.add_argument("--merge", nargs="+", metavar="JSON",
                   help="print the tables of these --json files together (runs nothing else)")
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.patterns, args.noise, args.seeds = "6x1,16x8", "all-pairs,scale", "realistic", 1
        args.accept_runs, args.compare_trials = "8x8:3", 1
    for size in [x for x in args.sizes.split(",") if x] + \
            [s.split(":")[0] for s in args.accept_runs.split(",") if s]:
        if size not in SIZES:
            p.error(f"size {size!r}: expected one of {', '.join(SIZES)}")
    for case in args.cases.split(","):
        if case not in CASES:
            p.error(f"case {case!r}: expected one of {', '.join(CASES)}")
    for pattern in args.patterns.split(","):
        if pattern not in PATTERN_SETS:
            p.error(f"patterns {pattern!r}: expected one of {', '.join(PATTERN_SETS)}")
    return args


DIAGNOSE_COLUMNS = ["size", "patterns", "noise", "case", "runs", "fit", "not fit", "cannot tell",
                    "error", "right", "misplaced", "blind", "missed", "false mean", "false max",
                    "ok", "seconds"]


def print_tables(cells, accepts, compare_rows):
    if cells:
        print("## diagnose on synthetic clusters (right = named as the planted component; blind = "
              "not found, and the verdict says it cannot tell that class; ok = clean fit, or "
              "every fault right with at most one false culprit)\n")
        print_table(summarise_cells(cells), DIAGNOSE_COLUMNS)
    if accepts:
        print("\n## accept over healthy runs of one fabric (criteria in force)\n")
        rows = summarise_accept(accepts)
        print_table(rows, list(rows[0]))
    if compare_rows:
        print("\n## compare on 8 hosts, realistic noise (3 % run-to-run): rows called a "
              "difference\n")
        print_table(compare_rows, list(compare_rows[0]))


def merge(paths) -> int:
    """Print the tables of several --json files together. A cell (size, patterns, noise,
    case, seed) or accept run (size, seed) found in more than one file counts once (the
    first); two files that disagree on one are named on stderr (not the same code?)."""
    cells, accepts, compare_rows, seen = [], [], [], {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for kind, records, key in (("cell", data.get("cells", []), ("size", "patterns", "noise",
                                                                    "case", "seed")),
                                   ("accept", data.get("accept_runs", []), ("size", "seed"))):
            for record in records:
                k = (kind,) + tuple(record[x] for x in key)
                if k in seen:
                    if seen[k][1] != record.get("verdict"):
                        print(f"merge: {k[1:]} is {seen[k][1]} in {seen[k][0]}, "
                              f"{record.get('verdict')} in {path}: kept the first",
                              file=sys.stderr)
                    continue
                seen[k] = (path, record.get("verdict"))
                (cells if kind == "cell" else accepts).append(record)
        compare_rows += data.get("compare", [])
    print_tables(cells, accepts, compare_rows)
    print(f"\nmerged {len(paths)} files: {len(cells)} diagnosed runs, {len(accepts)} accept runs")
    return 0


def _write_json(path, cells, accepts, compare_rows, elapsed):
    with open(path + ".tmp", "w") as out:
        json.dump({"cells": cells, "rows": summarise_cells(cells), "accept_runs": accepts,
                   "accept": summarise_accept(accepts), "compare": compare_rows,
                   "seconds": round(elapsed, 1)}, out, indent=1, default=str)
    os.replace(path + ".tmp", path)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.merge:
        return merge(args.merge)
    start = time.monotonic()
    deadline = start + 60 * args.max_minutes
    checkpoint = (lambda c, a: _write_json(args.json, c, a, [], time.monotonic() - start)) \
        if args.json else None
    with tempfile.TemporaryDirectory(prefix="fabscope-bench-") as tmp:
        # seed after seed, so a campaign stopped by --max-minutes has as many seeds in every cell
        wanted = [("cell", (tmp, size, pattern_set, noise, case, seed, args.iterations))
                  for seed in range(args.first_seed, args.first_seed + args.seeds)
                  for size in args.sizes.split(",") if size
                  for pattern_set in args.patterns.split(",")
                  for noise in args.noise.split(",") for case in args.cases.split(",")]
        for item in [x for x in args.accept_runs.split(",") if x]:
            size, runs = item.split(":")
            wanted += [("accept", (tmp, size, 1000 + args.first_seed - 1 + i, 77, "realistic",
                                   args.iterations)) for i in range(int(runs))]
        cells, accepts, skipped = run_jobs(wanted, args.jobs, deadline, checkpoint)
        compare_rows = [compare_rates(tmp, args.compare_trials, n, slow, deadline)
                        for n, slow in ((1, 1.0), (3, 1.0), (3, 1.1))] if args.compare_trials else []
    print_tables(cells, accepts, compare_rows)
    elapsed = time.monotonic() - start
    print(f"\n{len(cells)} runs diagnosed, {len(accepts)} accept runs in {elapsed:.0f} s"
          + (f"; {skipped} not started (--max-minutes {args.max_minutes:g})" if skipped else ""))
    if args.json:
        _write_json(args.json, cells, accepts, compare_rows, elapsed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
