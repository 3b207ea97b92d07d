"""A/A and exit codes of compare on files the real binary writes on this machine.

Six runs of one small 2-rank scenario (same build, same machine, nothing changed) are
compared three runs against three (the 10 ways to split them), in process; two against
two (the 3 splits of runs 0-3) is printed. A row can only claim a difference
(`better`/`worse`) when its tail is not thin (compare's MIN_TAIL_SAMPLES), so the rate
counts those rows only ("live" rows): the 9 cases x p50/p99 of each comparison (p99.9
needs 10,000 samples per side: always thin here).

The assertion is a one-sided binomial test of "the false-difference rate is at most
5 %" at level ALPHA = 0.01: with 180 live rows it fails from 17 claims (9.4 %). Rows of
one comparison share their runs (a run slow everywhere moves all its rows), so chance
failures are more frequent than 1 in 100, which is why the level is not 0.05.
Measured on the quiet machine (docs/analysis.md): three runs a side 2, 2, 10 of 180;
two runs a side 1 to 8 of 54 (the reason three are asserted and recommended).
Skipped (visibly) without the fabscope binary or mpirun; bounded: 6 runs of a few
seconds each on an idle machine.
"""

import itertools
import os
import shutil
import subprocess

import pytest

from helpers import run_cli

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RUNS = 6
ALPHA = 0.01      # level of the one-sided binomial test against NOMINAL
NOMINAL = 0.05    # a 95 % interval is wrong on about 5 % of same-fabric rows
# 520 iterations: two runs per side give 1,040 samples, 10.4 beyond the p99 (not thin).
SCENARIO = """name: aa-small
description: small 2-rank latency and bandwidth for the A/A false-positive test
seed: 7
defaults: {iterations: 520, warmup: 30, timeout: 60s, transport: mpi, memory: host}
tests:
  - {name: p2p-latency, kind: latency, pattern: pairs, sizes: [8, 64, 512, 4KiB, 16KiB]}
  - {name: p2p-bandwidth, kind: bandwidth, pattern: pairs, sizes: [4KiB, 16KiB, 64KiB, 256KiB],
     window: 4, warmup: 10}
"""


def _binary():
    path = os.environ.get("FABSCOPE_BIN") or os.path.join(REPO, "build", "fabscope")
    return path if os.access(path, os.X_OK) else None


@pytest.fixture(scope="module")
def aa_runs(tmp_path_factory):
    binary = _binary()
    if binary is None or shutil.which("mpirun") is None:
        pytest.skip("needs the fabscope binary (build/fabscope or FABSCOPE_BIN) and mpirun")
    d = tmp_path_factory.mktemp("aa")
    (d / "aa.yaml").write_text(SCENARIO)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    paths = []
    for i in range(RUNS):
        out = d / f"run{i}.h5"
        proc = subprocess.run(["mpirun", "-np", "2", binary, "run", "--scenario",
                               str(d / "aa.yaml"), "--output", str(out), "--overwrite"],
                              env=env, capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        paths.append(str(out))
    return paths


def _compare(paths_a, paths_b):
    from fabscope_analysis import open_result
    from fabscope_analysis.compare import Side, compare_sides
    from fabscope_analysis.run_analysis import RunAnalysis
    results = [[open_result(p) for p in paths] for paths in (paths_a, paths_b)]
    try:
        sides = [Side(label, rs, [RunAnalysis(r) for r in rs])
                 for label, rs in zip("AB", results)]
        frame, _ = compare_sides(sides[0], sides[1], resamples=200, seed=12345)
    finally:
        for r in itertools.chain(*results):
            r.close()
    live = frame[~frame["thin_tail"]]
    return len(live), int(live["verdict"].isin(["better", "worse"]).sum()), live


def binomial_tail(claimed: int, rows: int, p: float = NOMINAL) -> float:
    """P(X >= claimed) for X ~ Binomial(rows, p): the one-sided test's p-value."""
    from scipy.stats import binom
    return float(binom.sf(claimed - 1, rows, p))


def test_binomial_bound_fails_a_bad_method_not_a_good_one():
    # 54 live rows: 3 claims (what a 5 % method makes) and 7 pass, 8+ (14.8 %) fail.
    assert binomial_tail(3, 54) > 0.5 and binomial_tail(7, 54) > ALPHA
    assert binomial_tail(8, 54) < ALPHA and binomial_tail(24, 54) < 1e-12


def test_aa_single_run_rate_is_reported(aa_runs):
    """One run per side: run-to-run variation is unknown (the output says so); the rate
    is printed, not asserted: on a loaded shared machine runs differ by more than their
    within-run intervals (docs/analysis.md). 520 samples per side: only p50 is live."""
    rows, claimed = 0, 0
    for a, b in ((0, 1), (2, 3)):
        n, c, _ = _compare([aa_runs[a]], [aa_runs[b]])
        rows, claimed = rows + n, claimed + c
    print(f"\nA/A one run per side: {claimed} of {rows} live rows claimed a difference "
          f"({100 * claimed / max(rows, 1):.1f} %)")
    assert rows >= 18


def _split_rate(paths, splits):
    rows, claimed, claims = 0, 0, []
    for side_a, side_b in splits:
        n, c, live = _compare([paths[i] for i in side_a], [paths[i] for i in side_b])
        rows, claimed = rows + n, claimed + c
        label = "".join(map(str, side_a)) + "|" + "".join(map(str, side_b))
        claims += [f"runs {label} {x.case} {x.stat} {x.verdict} ({100 * x.relative:+.0f} %)"
                   for x in live.itertuples() if x.verdict in ("better", "worse")]
    return rows, claimed, claims


@pytest.mark.skipif(os.environ.get("FABSCOPE_FULL_TESTS") != "1",
                    reason="ten three-against-three compares of real runs (minutes on 2 cores): tests/run --full; "
                           "the seeded rate test in test_compare.py runs by default")
def test_aa_two_and_three_runs_per_side_false_positive_rate(aa_runs):
    """The hierarchical bootstrap with runs at the top, t bound on the runs' figures.
    Asserted: three runs per side (the 10 splits of 6 runs into 3 + 3). Printed: two
    runs per side (the 3 splits of runs 0-3), which a quiet machine's bimodal runs (a
    few fast, a few slow) defeat: one split of 4 runs always separates 2 slow from 2
    fast, and with 2 degrees of freedom the t bound then calls a difference."""
    rows2, claimed2, claims2 = _split_rate(aa_runs,
        [((0, 1), (2, 3)), ((0, 2), (1, 3)), ((0, 3), (1, 2))])
    print(f"\nA/A two runs per side: {claimed2} of {rows2} live rows claimed a difference "
          f"({100 * claimed2 / max(rows2, 1):.1f} %); " + "; ".join(claims2))
    splits = [(a, tuple(i for i in range(RUNS) if i not in a))
              for a in itertools.combinations(range(RUNS), 3) if 0 in a]
    rows, claimed, claims = _split_rate(aa_runs, splits)
    p_value = binomial_tail(claimed, rows)
    print(f"A/A three runs per side: {claimed} of {rows} live rows claimed a difference "
          f"({100 * claimed / max(rows, 1):.1f} %), one-sided binomial p = {p_value:.2g} "
          f"against {100 * NOMINAL:g} % (fails below {ALPHA}); " + "; ".join(claims))
    assert rows >= 150, f"only {rows} rows with tails thick enough to claim anything"
    assert p_value >= ALPHA, (f"{claimed} of {rows} rows called better/worse: "
                              f"p = {p_value:.2g} < {ALPHA} against {NOMINAL}")


def test_compare_cli_two_runs_per_side(aa_runs):
    out = run_cli("compare", *aa_runs[:2], "--", *aa_runs[2:4], "--resamples", "50")
    assert out.returncode == 0, out.stderr
    assert "runs per side: 2 vs 2" in out.stdout
    assert "run-to-run variation is unknown" not in out.stdout


def test_verdict_command_agrees_with_accept_on_real_file(aa_runs):
    verdict = run_cli("verdict", aa_runs[0], "--brief")
    accept = run_cli("accept", aa_runs[0])
    # The same answer, not necessarily PASS: on a loaded machine the validity check may
    # rightly find the host busy; what must hold is that both surfaces say the same.
    assert verdict.returncode == accept.returncode, verdict.stdout + accept.stdout
    assert verdict.returncode in (0, 1), verdict.stdout + verdict.stderr
    assert verdict.stdout.strip().splitlines() == [accept.stdout.strip().splitlines()[-1]]
    assert "shipped default for a run on one host" in verdict.stdout
