"""compare's false differences on real A/A runs: every split of N files of one unchanged
fabric into two sides of k runs goes through the real compare (compare_sides), and each
comparison is counted as a whole, over all its rows.

    python3 analysis/tests/compare_aa_files.py --runs 4 [--resamples 100] FILE.h5 ...

For each split (side A: k files, side B: k others; a split and its mirror counted once)
it prints how many rows were called different by their own 95 % interval alone (the
per-row rate) and after the comparison's Benjamini-Hochberg over all its rows (the verdict
compare prints), and whether any row's difference lies outside its own interval. Every
difference here is false: the files are runs of one fabric.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from fabscope_analysis.compare import Side, compare_sides  # noqa: E402
from fabscope_analysis.compare_stats import DIFFERENT  # noqa: E402
from fabscope_analysis.reader import open_result  # noqa: E402
from fabscope_analysis.run_analysis import RunAnalysis  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--runs", type=int, default=4, help="runs a side (k)")
    parser.add_argument("--resamples", type=int, default=100)
    parser.add_argument("--max-splits", type=int, default=35)
    args = parser.parse_args()
    if 2 * args.runs > len(args.files):
        parser.error(f"--runs {args.runs} needs {2 * args.runs} files, got {len(args.files)}")
    results = [open_result(p, warn_incomplete=False) for p in args.files]
    analyses = [RunAnalysis(r) for r in results]
    n, k = len(results), args.runs
    seen, rows_total, splits = set(), [], 0
    print(f"{n} files, {k} vs {k} runs, every split of them (at most {args.max_splits})")
    for a in itertools.combinations(range(n), k):
        rest = [i for i in range(n) if i not in a]
        for b in itertools.combinations(rest, k):
            key = frozenset([a, b])
            if key in seen or splits >= args.max_splits:
                continue
            seen.add(key)
            splits += 1
            side_a = Side("A", [results[i] for i in a], [analyses[i] for i in a])
            side_b = Side("B", [results[i] for i in b], [analyses[i] for i in b])
            frame, _ = compare_sides(side_a, side_b, args.resamples, 12345 + splits)
            alone = int(frame["row_verdict"].astype(str).str.startswith(DIFFERENT).sum())
            whole = int(frame["verdict"].astype(str).str.startswith(DIFFERENT).sum())
            finite = np.isfinite(frame["ci_low"]) & np.isfinite(frame["ci_high"])
            outside = int((finite & ~((frame["ci_low"] <= frame["diff"])
                                      & (frame["diff"] <= frame["ci_high"]))).sum())
            tested = int(np.isfinite(frame["p"]).sum())
            rows_total.append((len(frame), tested, alone, whole, outside))
            print(f"A={[i + 1 for i in a]} B={[i + 1 for i in b]}: {len(frame)} rows, {tested} "
                  f"testable; different alone {alone}, over all rows {whole}; "
                  f"point outside its interval {outside}")
    t = np.array(rows_total)
    print(f"{splits} comparisons: rows {t[:, 0].sum()}, testable {t[:, 1].sum()}; "
          f"false differences per row alone {t[:, 2].sum()} in {(t[:, 2] > 0).sum()} comparisons; "
          f"over all rows (Benjamini-Hochberg) {t[:, 3].sum()} in {(t[:, 3] > 0).sum()} comparisons; "
          f"points outside their interval {t[:, 4].sum()}")
    for r in results:
        r.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
