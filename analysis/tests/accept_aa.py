"""accept's A/A reproducibility on synthetic clusters: the same verdict on healthy runs of
one fabric (one fabric seed, a new run seed each time).

    python3 analysis/tests/accept_aa.py --hosts 8 --gpus 8 --runs 20 [--criteria FILE]
        [--noise realistic] [--diagnose]

Prints each run's verdict line, the CPU seconds accept took on it (the wall time on a
shared machine says more about the other jobs), and the share of runs with the most common verdict and
with PASS, with their 95 % Wilson interval. Without --diagnose the criteria's diagnose
rule is switched off (this measures accept's own rules).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from compare_rates import wilson  # noqa: E402
from fabscope_analysis import open_result  # noqa: E402
from fabscope_analysis.criteria import load_criteria  # noqa: E402
from fabscope_analysis.synth import Cluster, generate  # noqa: E402
from fabscope_analysis.verdict import CRITERIA_DIR, compute_verdict  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hosts", type=int, default=8)
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--leaves", type=int, default=2)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--iterations", type=int, default=20)
    p.add_argument("--noise", default="realistic")
    p.add_argument("--criteria", default=os.path.join(CRITERIA_DIR, "rack-acceptance.yaml"))
    p.add_argument("--diagnose", action="store_true")
    p.add_argument("--fabric-seed", type=int, default=7)
    p.add_argument("--first", type=int, default=0, help="first run seed (to split a series)")
    args = p.parse_args(argv)
    criteria = load_criteria(args.criteria)
    if not args.diagnose:
        criteria = dataclasses.replace(criteria, diagnose="off")
    words = collections.Counter()
    with tempfile.TemporaryDirectory() as d:
        for seed in range(args.first, args.first + args.runs):
            path = os.path.join(d, "run.h5")
            generate(path, Cluster(args.hosts, args.gpus, args.leaves), noise=args.noise,
                     iterations=args.iterations, seed=1000 + seed, fabric_seed=args.fabric_seed)
            started, cpu = time.time(), time.process_time()
            with open_result(path) as result:
                verdict = compute_verdict(result, criteria)
            cpu = time.process_time() - cpu
            word = verdict.status
            words[word] += 1
            print(f"run {seed}: accept {cpu:.1f} s CPU ({time.time() - started:.1f} s wall)  "
                  f"{verdict.line()[:220]}", flush=True)
            os.unlink(path)
    common, k = words.most_common(1)[0]
    print(f"verdicts: {dict(words)}")
    lo, hi = wilson(k, args.runs)
    lo_p, hi_p = wilson(words["PASS"], args.runs)
    print(f"{args.hosts}x{args.gpus} ranks, noise {args.noise}: same verdict ({common}) in {k}/"
          f"{args.runs} = {100 * k / args.runs:.0f} % [{100 * lo:.0f}, {100 * hi:.0f}]; PASS "
          f"{words['PASS']}/{args.runs} [{100 * lo_p:.0f}, {100 * hi_p:.0f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
