import numpy as np
import pytest
from scipy.stats import ttest_ind as student_t_test

from fabscope_analysis import open_result
from fabscope_analysis.compare import ONE_RUN_NOTE, context_frame, run_compare, text_table
from fabscope_analysis.compare_html import _context_section
from fabscope_analysis.compare_stats import (ONE_RUN, RUNS_UNSURE, compare_figures,
                                             difference_verdict, permutation_reaches, run_log_figures, runs_permutation_p)
from fabscope_analysis.resampling import Unit
from fabscope_analysis.resampling import bootstrap_quantile_diffs
from helpers import run_cli


def _frame(paths, **kw):
    import io
    results = [open_result(p) for p in paths]
    try:
        return run_compare(results, None, stream=io.StringIO(), **kw)
    finally:
        for r in results:
            r.close()


def _verdict(frame, case, condition, stat):
    row = frame[(frame.case == case) & (frame.condition == condition) & (frame.stat == stat)]
    assert len(row) == 1
    return row.iloc[0]


def test_same_fabric_shows_no_real_difference(files):
    frame = _frame([files["standard"], files["same"]])
    sampled = frame[frame.n_ref > 0]
    assert len(sampled) == 15
    assert not sampled.verdict.isin(["worse", "better"]).any(), sampled[["case", "stat", "verdict"]]


def test_one_run_per_side_cannot_tell_a_level_difference(files):
    """30 % slower latency, one run per side: the within-run interval excludes 0, but
    nothing measured how much runs differ: cannot tell, never worse."""
    frame = _frame([files["standard"], files["slower"]])
    row = _verdict(frame, "pingpong/8", "quiet", "p50")
    assert row.verdict == ONE_RUN
    assert 0.25 < row.relative < 0.35 and row.ci_low > 0
    # the slow pair is only in the reference: the other run's bandwidth tail is higher,
    # but it rests on two of the ranks, and ranks are resampled (hierarchical bootstrap),
    # so it is not called a difference of the whole run
    row = _verdict(frame, "allpairs-bw/1048576", "quiet", "p99")
    assert row.relative > 0 and row.verdict != "worse"
    assert _verdict(frame, "allpairs-bw/1048576", "quiet", "p50").verdict in (
        "no clear difference", "negligible (<5%)")


def test_a_difference_of_exactly_the_negligible_factor_is_a_difference():
    """'negligible' is a real difference smaller than the factor: 4 against 5 (exactly 25 %
    slower, log 1.25 to the last bit) is worse at 25 %; just under the factor, either way,
    is negligible."""
    assert difference_verdict("latency", 0.2, 0.3, 9, 9, 4.0, 5.0, 0.25) == "worse"
    assert difference_verdict("latency", 0.2, 0.3, 9, 9, 4.0, 4.99, 0.25) == "negligible (<25%)"
    assert difference_verdict("latency", -0.3, -0.2, 9, 9, 4.99, 4.0, 0.25) == "negligible (<25%)"


def test_bootstrap_is_deterministic_and_bounded():
    rng = np.random.default_rng(1)
    a, b = rng.normal(10, 1, 50_000), rng.normal(10, 1, 50_000)
    first = bootstrap_quantile_diffs(a, b, [50, 99], resamples=100, seed=3)
    assert first == bootstrap_quantile_diffs(a, b, [50, 99], resamples=100, seed=3)
    for diff, low, high in first:
        assert low <= diff <= high and low < 0 < high


def test_topology_differences_warned(files):
    results = [open_result(files["standard"]), open_result(files["small"])]
    try:
        _, warnings = context_frame(results, ["A", "B"])
    finally:
        for r in results:
            r.close()
    assert any(w.startswith("ranks differs") for w in warnings)
    assert any(w.startswith("hosts differs") for w in warnings)


def test_compare_command_writes_html_and_table(files, tmp_path):
    html = tmp_path / "compare.html"
    out = run_cli("compare", files["standard"], files["slower"], files["same"], "-o", html,
                  "--resamples", "100")
    assert out.returncode == 0, out.stderr
    assert "== slower.h5 vs standard.h5 (reference)" in out.stdout
    assert "== same.h5 vs standard.h5 (reference)" in out.stdout
    assert "WARNING: inventory: net/eth0/mtu differs" in out.stdout
    text = html.read_text()
    assert "Runs side by side" in text and "data:image/png;base64," in text
    out = run_cli("compare", files["standard"])
    assert out.returncode == 2 and "at least two" in out.stderr


def test_aa_archive_tells_a_difference_beyond_run_to_run_spread(files, tmp_path):
    """With an A/A archive (3 runs of the reference fabric) the run-to-run spread is known
    from a stated source: the 30 % slowdown is worse, the same fabric is not."""
    from synthetic import write_standard_run
    archive = tmp_path / "aa"
    archive.mkdir()
    for seed in (21, 22, 23):
        write_standard_run(archive / f"aa{seed}.h5", seed=seed, with_hosts=False)
    frame = _frame([files["standard"], files["slower"]], aa_archive=str(archive), resamples=50)
    row = _verdict(frame, "pingpong/8", "quiet", "p50")
    assert row.verdict == "worse", row
    assert "A/A runs" in row.method
    same = _frame([files["standard"], files["same"]], aa_archive=str(archive), resamples=50)
    assert not same[same.n_ref > 0].verdict.isin(["worse", "better"]).any()
    out = run_cli("compare", files["standard"], files["slower"], "--aa-archive", tmp_path,
                  "--resamples", "10")
    assert out.returncode == 2 and "at least 2 result files" in out.stderr, out.stderr


def test_repeats_inside_one_file_are_not_runs():
    """Three repeats a side inside one run each: still one run per side."""
    rng = np.random.default_rng(4)

    def run(level):
        return [[Unit(level * rng.lognormal(10, 0.02, 300), np.full(300, 8.0))
                 for _ in range(4)] for _ in range(3)]   # 3 repeats x 4 ranks
    rows = compare_figures("latency", [run(1.0)], [run(1.3)], ("p50",), 50, 1)
    assert rows[0].verdict == ONE_RUN and rows[0].runs_a == 1 and rows[0].low > 0
    # the method says what the one-run interval rests on (and what compare's notes read)
    assert rows[0].method == ("hierarchical bootstrap within each run only (ranks, blocks of "
                              "iterations): run-to-run variation unknown")
    rows = compare_figures("latency", [run(1.0) for _ in range(3)], [run(1.3) for _ in range(3)],
                           ("p50",), 50, 1)
    assert rows[0].verdict == "worse" and rows[0].runs_a == 3
    assert rows[0].method.startswith("run-level t on log figures, 3 vs 3 runs; ")


def test_error_rates_three_runs_a_side_seeded():
    """Rates, not one case: 60 seeded trials of 3 vs 3 runs under the generator's
    realistic run-to-run noise (3 %, compare_rates.py). Same fabric: claims at most 5 %
    (binomial: fails from 9 of 120 rows, p < 0.01 against 5 %); a 10 % slowdown: found
    (p50 'worse') in at least 60 % (measured 82 % over 400 trials, docs/analysis.md);
    one run per side: never claimed, either way."""
    from compare_rates import rates
    r3 = rates("realistic", 3, trials=60, resamples=30, seed=7)
    claims = r3["aa p50"][0] + r3["aa p99"][0]
    assert claims <= 8, r3
    assert r3["power p50"][0] >= 36, r3
    r1 = rates("realistic", 1, trials=20, resamples=30, seed=7)
    assert r1["aa p50"][0] == r1["power p50"][0] == 0, r1


def _repeated_run(path, scale, seed, repeats=3):
    """One file with `repeats: N` (3): N instances of one case (replicate 0 .. N-1)."""
    from synthetic import SyntheticRun, latency_entries, make_samples
    run = SyntheticRun(path, nranks=4, ranks_per_host=1, seed=seed)
    for replicate in range(repeats):
        samples = make_samples(latency_entries([(0, 1), (2, 3)], 400, 2000 * scale, run.rng),
                               run.start_ns())
        run.add_test("lat", "latency", samples, nbytes=8, divisor=2, case="lat/8",
                     extra_attrs={"replicate": np.int64(replicate), "repeats": np.int64(repeats)})
    run.close()


def test_repeats_in_a_file_are_pooled_below_runs(tmp_path):
    """compare of two files with 3 and 2 repeats: one run per side (repeats are not runs),
    the repeats pooled; a 30 % slower file is 'cannot tell', never 'worse'."""
    _repeated_run(tmp_path / "a.h5", 1.0, 1)
    _repeated_run(tmp_path / "b.h5", 1.3, 2, repeats=2)
    frame = _frame([tmp_path / "a.h5", tmp_path / "b.h5"], resamples=30)
    row = _verdict(frame, "lat/8", "quiet", "p50")
    assert (row.runs_ref, row.runs_other, row.repeats_ref, row.repeats_other) == (1, 1, 3, 2), row
    assert row.n_ref == 3 * 2 * 400 and row.n_other == 2 * 2 * 400 and row.verdict == ONE_RUN, row


def test_run_spread_never_below_what_each_run_measured():
    """Runs that agree exactly (copies) but hold few, noisy samples: the runs' own spread
    is 0, yet each run's figure is uncertain. The run-level model takes the within-run
    variance (block bootstrap) as the floor, so a 3 % step is no clear difference, not
    'worse' on a zero-width interval."""
    rng = np.random.default_rng(11)
    samples = [rng.lognormal(10, 0.2, 30) for _ in range(2)]

    def run(level):
        return [[Unit(level * s, np.full(len(s), 8.0)) for s in samples]]
    rows = compare_figures("latency", [run(1.0)] * 3, [run(1.03)] * 3, ("p50",), 50, 1)
    assert rows[0].verdict == "no clear difference", rows[0]
    assert "within-run variance" in rows[0].method
    assert rows[0].low < 0 < rows[0].high


def test_runs_without_any_spread_are_described_by_the_runs_not_a_larger_within_run_variance():
    """Three runs a side whose every sample takes exactly 1 us (a timer's tick; the same
    fabric on both sides): both variances are exactly 0, so the within-run one is not
    larger than the runs' spread, and the method says the run-to-run variance was used,
    on its 4 df."""
    def run():
        return [[Unit(np.full(40, 1000.0), np.full(40, 8.0)) for _ in range(2)]]
    rows = compare_figures("latency", [run()] * 3, [run()] * 3, ("p50",), 20, 1)
    assert "run-to-run variance pooled over the runs, 4 df" in rows[0].method, rows[0].method
    assert "within-run variance" not in rows[0].method, rows[0].method


def _level_runs(levels, seed=5):
    """Runs of one fabric (3 ranks, the same samples) at the given levels, with a 0.2 %
    jitter: each run's figure is its level, measured almost exactly."""
    rng = np.random.default_rng(seed)
    base = [rng.lognormal(10, 0.02, 200) for _ in range(3)]
    return [[[Unit(level * s * rng.lognormal(0, 0.002, len(s)), np.full(len(s), 8.0))
              for s in base]] for level in levels]


def test_runs_on_two_levels_need_the_runs_permutation_test():
    """4 vs 4 runs of one fabric whose runs fall on two levels 10 % apart, 3 low + 1 high
    against 4 high: the t on the runs' log figures excludes 0 (its normal run levels
    under-state a two-level spread), but 5 of the 8 runs are high, so the split is not
    the most extreme: the runs' permutation test (p = 4/70) does not confirm, so cannot
    tell. A real 10 % step, every B run above every A run, is still 'worse'
    (p = 2/70); at 3 vs 3 the permutation test cannot reach 5 % and the method says so."""
    jitter = [1.0, 1.012, 0.991, 1.004]
    rows = compare_figures("latency", _level_runs([1.0, 1.012, 0.991, 1.1]),
                           _level_runs([1.1 * j for j in jitter], 6), ("p50",), 30, 1)
    assert rows[0].low > 0 and rows[0].verdict == RUNS_UNSURE, rows[0]
    step = compare_figures("latency", _level_runs(jitter),
                           _level_runs([1.1 * j for j in jitter], 6), ("p50",), 30, 1)[0]
    assert step.verdict == "worse" and "permutation test (70 splits)" in step.method, step
    three = compare_figures("latency", _level_runs(jitter[:3]),
                            _level_runs([1.1 * j for j in jitter[:3]], 6), ("p50",), 30, 1)[0]
    assert three.verdict == "worse" and "too few runs for a permutation test" in three.method


def test_a_row_that_spans_zero_keeps_the_run_level_ts_p():
    """4 vs 4 runs of one fabric, B 0.3 % slower: the interval spans 0 (its high end is
    0.42 us, under one unit), so the runs' permutation test is not consulted and the row's
    p is the pooled two-sample t's on the runs' log figures, exactly."""
    jitter = [1.0, 1.012, 0.991, 1.004]
    a, b = _level_runs(jitter), _level_runs([1.003 * j for j in jitter[::-1]], 6)
    row = compare_figures("latency", a, b, ("p50",), 30, 1)[0]
    assert row.verdict == "no clear difference" and row.low < 0 < row.high < 1, row
    la, lb = (run_log_figures("latency", side, ("p50",))[:, 0] for side in (a, b))
    assert row.p == pytest.approx(float(student_t_test(lb, la).pvalue), rel=1e-9), row


def test_runs_permutation_p_is_exact():
    """Complete separation of 4 vs 4 runs: 2 of the 70 splits (it and its mirror); 3 vs 3
    can never reach 5 % (2 of 20), 3 vs 4 can (1 of 35); many runs: drawn splits."""
    rng = np.random.default_rng(1)
    low, high = np.array([0.0, 0.01, -0.01, 0.002]), np.array([0.1, 0.11, 0.09, 0.1])
    assert abs(runs_permutation_p(low, high, rng) - 2 / 70) < 1e-12
    assert abs(runs_permutation_p(low[:3], high[:3], rng) - 2 / 20) < 1e-12
    assert not permutation_reaches(3, 3, 0.95) and permutation_reaches(3, 4, 0.95)
    assert permutation_reaches(4, 4, 0.95) and not permutation_reaches(1, 9, 0.95)
    many = runs_permutation_p(np.arange(12.0), np.arange(12.0) + 20, rng)
    assert 0 < many < 0.001, many
    assert 0.2 < runs_permutation_p(np.arange(12.0), np.arange(12.0) + 0.5, rng) <= 1.0


def test_runs_permutation_p_holds_whatever_the_run_levels():
    """Same-fabric 4 vs 4 runs whose levels are normal, on two levels 10 % apart with
    almost no other spread, or heavy-tailed (Cauchy): p <= 0.05 in 2/70 = 2.9 % of
    trials for each (seeded, 1,500 trials: 2.0-4.0 % allowed), where the t alone calls
    two-level runs different far more often."""
    rng = np.random.default_rng(3)
    draws = {"normal": lambda: rng.normal(0, 0.03, 8),
             "two levels": lambda: rng.normal(0, 0.001, 8) + 0.1 * (rng.random(8) < 0.5),
             "cauchy": lambda: 0.01 * rng.standard_cauchy(8)}
    from scipy.stats import ttest_ind
    for name, draw in draws.items():
        hits = t_hits = 0
        for _ in range(1500):
            x = draw()
            hits += runs_permutation_p(x[:4], x[4:], rng) <= 0.05
            t_hits += ttest_ind(x[:4], x[4:]).pvalue <= 0.05
        assert 0.020 <= hits / 1500 <= 0.040, (name, hits)
        if name == "two levels":
            assert t_hits / 1500 > 0.06, t_hits


def test_a_rows_difference_lies_inside_its_own_interval():
    """4 vs 4 runs of one fabric where one A run sits 30 % higher (a placement fixed at
    job start): the p99 of all A's samples pooled is that run's, while the run-level
    interval is built around the mean of the runs' log figures. The figures a row shows
    are the ones the interval is about (geometric means of the runs' figures), so its
    difference lies inside its interval for every statistic."""
    a = _level_runs([1.0, 1.01, 0.99, 1.3], seed=21)
    b = _level_runs([1.0, 1.01, 0.99, 1.0], seed=22)
    rows = compare_figures("latency", a, b, ("p50", "p99"), 40, 3)
    for row in rows:
        assert row.low <= row.diff <= row.high, row
        assert row.diff == row.b_value - row.a_value
    p99 = rows[1]
    pooled_a = np.percentile(np.concatenate([u.times for r in a for u in r[0]]), 99) / 1e3
    # the pooled figure is the one that would have fallen outside: the case is not vacuous
    assert not (p99.low <= p99.b_value - pooled_a <= p99.high), (p99, pooled_a)


def test_a_comparison_holds_its_false_difference_rate_over_all_its_rows():
    """40 rows of one comparison, each with a p: 0.001 and 0.002 pass Benjamini-Hochberg
    over the 40 at 5 % (bars 0.00125, 0.0025); 0.03 is a difference on its own interval
    (p < 0.05) but not over all rows, so it is `cannot tell (over all 40 rows: ...)`.
    Rows without a p (NaN: thin tails, one run a side) are outside the family and keep
    their verdict, and the method says how many rows were tested."""
    import math

    from fabscope_analysis.compare_stats import rows_false_differences
    p = [0.001, 0.002, 0.03] + [0.5] * 35 + [float("nan")] * 2
    verdicts = ["worse", "better", "worse"] + ["no clear difference"] * 35 \
        + ["no clear difference", "cannot tell (one run per side)"]
    out, adjusted, method = rows_false_differences(p, verdicts)
    assert out[:2] == ["worse", "better"]
    assert out[2] == "cannot tell (over all 40 rows: Benjamini-Hochberg)"
    assert out[3:] == verdicts[3:]
    assert math.isclose(adjusted[0], 0.001 * 38) and np.isnan(adjusted[-1])
    assert "Benjamini-Hochberg at 5 % over the 38 rows" in method
    # a negligible difference is a difference too: it needs the same bar
    out, _, _ = rows_false_differences([0.03] + [0.5] * 9, ["negligible (<5%)"] + ["x"] * 9)
    assert out[0].startswith("cannot tell (over all 10 rows")


def _side_run(path, scale, seed, extra=(), repeats=2, sites=None):
    """One small run: `lat/8` quiet (`repeats` repeats, 2 pairs x 200 iterations, times x
    scale) and the extra cases named: `retest` (lat/8 in the serial-retest pass) and `bw`
    (a bandwidth case, bw/65536)."""
    from synthetic import SyntheticRun, bandwidth_entries, latency_entries, make_samples
    run = SyntheticRun(path, nranks=4, ranks_per_host=1, seed=seed, sites=sites)
    for replicate in range(repeats):
        samples = make_samples(latency_entries([(0, 1), (2, 3)], 200, 2000 * scale, run.rng),
                               run.start_ns())
        run.add_test("lat", "latency", samples, nbytes=8, divisor=2, case="lat/8",
                     extra_attrs={"replicate": np.int64(replicate),
                                  "repeats": np.int64(repeats)})
    if "retest" in extra:
        samples = make_samples(latency_entries([(0, 1)], 50, 2000, run.rng), run.start_ns())
        run.add_test("lat", "latency", samples, nbytes=8, divisor=2, case="lat/8",
                     pass_="serial-retest")
    if "bw" in extra:
        samples = make_samples(bandwidth_entries([(0, 1)], 50, 65536, 10.0, run.rng),
                               run.start_ns())
        run.add_test("bw", "bandwidth", samples, nbytes=65536, case="bw/65536",
                     metric="bandwidth")
    run.close()


def _printed(paths, **kw):
    import io
    results = [open_result(p) for p in paths]
    out = io.StringIO()
    try:
        frame = run_compare(results, None, stream=out, resamples=20, seed=1, **kw)
    finally:
        for r in results:
            r.close()
    return out.getvalue().splitlines(), frame


def _rows_line(rows, tested):
    return (f"   false differences over all {rows} rows: Benjamini-Hochberg at 5 % over the "
            f"{tested} rows that can be called different (a row is better, worse or negligible "
            "only when it passes); on one fabric the chance of any false difference among them "
            "is at most 5 %, else at most 5 % of the rows called different are expected false "
            "(rows share runs: positively dependent)")


def test_compare_prints_each_sides_runs_and_repeats_the_cases_left_out_and_one_rate_over_its_rows(
        tmp_path):
    """`compare A1 A2 -- B1 B2` (docs/analysis.md): a side of several runs is `A (2 runs)`,
    its header counts runs and, apart, the repeats inside a run; the cases of one side only
    are listed as notes (a pass other than parallel in round brackets); the rows share one
    Benjamini-Hochberg statement. B is 30 % slower: p50 and p99 are worse; p99.9 of 1,600
    samples a side has 1.6 beyond it (a thin tail, outside the family of 2 tested rows)."""
    paths = []
    for name, scale, seed, extra in (("a1", 1.0, 1, ["retest"]), ("a2", 1.0, 2, ["retest"]),
                                     ("b1", 1.3, 3, ["bw"]), ("b2", 1.3, 4, ["bw"])):
        paths.append(tmp_path / f"{name}.h5")
        _side_run(paths[-1], scale, seed, extra)
    lines, frame = _printed(paths, split=2)
    header = lines.index("== B (2 runs) vs A (2 runs) (reference); runs per side: 2 vs 2 "
                         "(repeats inside a run: 2 vs 2, not runs)")
    assert lines[header + 1].startswith("   interval: run-level t on log figures, 2 vs 2 runs; ")
    assert lines[header + 2] == _rows_line(3, 2)
    assert list(frame.verdict) == ["worse", "worse", "no clear difference"]
    assert lines[header + 3].split() == ["case", "condition", "stat", "unit", "ref", "other",
                                         "diff", "[95%", "CI]", "rel", "verdict"]
    assert [lines[header + i].split()[2] for i in (4, 5, 6)] == ["p50", "p99", "p99.9"]
    assert lines[header + 4].endswith(" worse") and lines[header + 5].endswith(" worse")
    assert lines[header + 6].endswith(" no clear difference (thin tail)")
    assert [line for line in lines if line.startswith("note: ")] == [
        "note: only in A (2 runs) (not in B (2 runs)): lat/8 [quiet (serial-retest)]",
        "note: only in B (2 runs): bw/65536 [quiet]"]
    assert lines[-1] == ("compare: 2 worse, 0 better, 0 negligible, 0 cannot tell, "
                         "1 no clear difference (of 3 rows)")

    # one run before the `--`: that side is named by its file; the serial-retest rows
    # (in a1 and a2 only) have one run a side, but the first rows have 1 vs 3: the
    # comparison's interval is stated, not the one-run note
    lines, _ = _printed(paths[:2] + paths[2:], split=1)
    header = lines.index("== B (3 runs) vs a1.h5 (reference); runs per side: 1 vs 3 "
                         "(repeats inside a run: 2 vs 2, not runs)")
    assert lines[header + 1].startswith("   interval: run-level t on log figures, 1 vs 3 runs; ")
    assert not any(ONE_RUN_NOTE in line for line in lines)


def test_compare_without_double_dash_states_the_one_run_note_and_no_testable_row(tmp_path):
    """`compare A B C`: A is every comparison's reference, one run a side: each header is
    followed by the one-run note, and the false-difference statement says no row can be
    called different. The 30 % slower run's p50 is `cannot tell (one run per side)`."""
    paths = []
    for name, scale, seed in (("a1", 1.0, 1), ("a2", 1.0, 2), ("b1", 1.3, 3)):
        paths.append(tmp_path / f"{name}.h5")
        _side_run(paths[-1], scale, seed)
    lines, frame = _printed(paths)
    none_line = ("   false differences over all 3 rows: none can be called different "
                 "(run-to-run variation unknown, or thin tails), so none is false")
    for other in ("a2.h5", "b1.h5"):
        header = lines.index(f"== {other} vs a1.h5 (reference); runs per side: 1 vs 1 "
                             "(repeats inside a run: 2 vs 2, not runs)")
        assert lines[header + 1:header + 3] == [f"   {ONE_RUN_NOTE}", none_line]
    assert list(frame[frame.other == "b1.h5"].verdict)[0] == ONE_RUN
    assert not any(line.startswith("note: ") for line in lines)


def test_compare_names_files_of_one_name_by_path_and_a_scope_in_its_notes(tmp_path):
    """Two files both called run.h5 are labelled `A: path` and `B: path`; without repeats
    the header has no repeats bracket; a case of one side only is listed with its site
    scope (`[site=east]`)."""
    sites = {0: "east", 1: "east", 2: "west", 3: "west"}
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    a, b = tmp_path / "x" / "run.h5", tmp_path / "y" / "run.h5"
    _side_run(a, 1.0, 1, ["bw"], repeats=1, sites=sites)
    _side_run(b, 1.0, 2, repeats=1, sites=sites)
    lines, _ = _printed([a, b])
    assert f"== B: {b} vs A: {a} (reference); runs per side: 1 vs 1" in lines
    assert lines[-2:-1] == [f"note: only in A: {a} (not in B: {b}): bw/65536 [quiet] [site=east]"]


def _bandwidth_named_lat(path, seed):
    """One run whose case `lat/8` is a bandwidth test (another scenario under the same name)."""
    from synthetic import SyntheticRun, bandwidth_entries, make_samples
    run = SyntheticRun(path, nranks=4, ranks_per_host=1, seed=seed)
    samples = make_samples(bandwidth_entries([(0, 1), (2, 3)], 200, 8, 10.0, run.rng), run.start_ns())
    run.add_test("lat", "bandwidth", samples, nbytes=8, case="lat/8", metric="bandwidth")
    samples = make_samples(bandwidth_entries([(0, 1)], 50, 65536, 10.0, run.rng), run.start_ns())
    run.add_test("bw", "bandwidth", samples, nbytes=65536, case="bw/65536", metric="bandwidth")
    run.close()


def test_a_case_measured_as_two_metrics_within_one_side_is_not_compared(tmp_path):
    """Every run of both sides is checked, not only each side's first: A's second run
    measured `lat/8` as bandwidth, so the case is a note, not latency rows pooling a
    bandwidth run's figures."""
    paths = [tmp_path / n for n in ("a1.h5", "a2.h5", "b1.h5", "b2.h5")]
    _side_run(paths[0], 1.0, 1, ["bw"], repeats=1)
    _bandwidth_named_lat(paths[1], 2)
    _side_run(paths[2], 1.0, 3, ["bw"], repeats=1)
    _side_run(paths[3], 1.0, 4, ["bw"], repeats=1)
    lines, frame = _printed(paths, split=2)
    assert set(frame["case"]) == {"bw/65536"}
    assert "note: lat/8 [quiet]: metric differs (bandwidth, latency vs latency); not compared" in lines
    # across the sides, as before: the first runs differ
    lines, frame = _printed([paths[1], paths[2]])
    assert "note: lat/8 [quiet]: metric differs (bandwidth vs latency); not compared" in lines


def test_the_side_by_side_facts_highlight_the_values_of_a_fact_that_differs():
    """compare's HTML context table: the sides' cells of a fact a warning says differs are
    marked bad; the fact's own name and the facts that agree are not."""
    import pandas as pd
    context = pd.DataFrame({"fact": ["ranks", "hosts"], "a.h5": ["4", "2"], "b.h5": ["8", "2"]})
    rows = _context_section(context, ["ranks differs: 4 vs 8"]).split("<tr>")[2:]
    assert rows[0].startswith('<td class="l">ranks</td><td class="l bad">4</td><td class="l bad">8</td>')
    assert rows[1].startswith('<td class="l">hosts</td><td class="l">2</td><td class="l">2</td>')


def test_each_other_file_is_printed_in_the_order_given_not_by_name(files):
    """compare R X Y: X vs R before Y vs R, as the command line named them (here
    slower before same, which the alphabet would turn round)."""
    frame = _frame([files["standard"], files["slower"], files["same"]], resamples=20, seed=1)
    heads = [line.split(";")[0] for line in text_table(frame).splitlines() if line.startswith("== ")]
    assert heads == ["== slower.h5 vs standard.h5 (reference)", "== same.h5 vs standard.h5 (reference)"]
