import math

import numpy as np

from fabscope_analysis import open_result
from fabscope_analysis.run_analysis import RunAnalysis
from helpers import run_cli
from contracts import outcome_contract


def percentile_by_hand(values, q):
    """Linear interpolation between closest ranks (the definition docs/analysis.md
    names), written out without numpy so the check does not compare numpy with itself."""
    ordered = sorted(float(v) for v in values)
    position = q / 100 * (len(ordered) - 1)
    below = int(math.floor(position))
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def test_percentile_by_hand_is_right():
    assert percentile_by_hand([4, 1, 3, 2], 50) == 2.5
    assert percentile_by_hand([10, 20, 30, 40, 50], 99) == 49.6
    assert percentile_by_hand([7], 99) == 7


def test_numbers_match_raw_samples_and_file_attributes(files):
    with open_result(files["standard"]) as run:
        frame = RunAnalysis(run).summary_frame().set_index("index")
        quiet = run.test(0)
        s = quiet.samples()
        lat_us = [(done - post) / 2 / 1e3 for post, done in zip(s.t_post_ns, s.t_done_ns)]
        assert math.isclose(frame.loc[0, "p50"], percentile_by_hand(lat_us, 50), rel_tol=1e-12)
        assert math.isclose(frame.loc[0, "p99"], percentile_by_hand(lat_us, 99), rel_tol=1e-12)
        assert math.isclose(frame.loc[0, "mean"], sum(lat_us) / len(lat_us), rel_tol=1e-12)
        assert math.isclose(frame.loc[0, "worst"], max(lat_us), rel_tol=1e-12)
        assert math.isclose(frame.loc[0, "p50"], quiet.get("p50_ns") / 1e3)
        assert math.isclose(frame.loc[0, "worst"], quiet.get("max_ns") / 1e3)
        bw = run.test(2)
        assert frame.loc[2, "unit"] == "GB/s"
        b = bw.samples()
        durations = [int(done) - int(post) for post, done in zip(b.t_post_ns, b.t_done_ns)]
        nbytes = [int(x) for x in b["bytes"]]
        # One message size: the p-th percentile in GB/s is the slow side, bytes over
        # the p-th percentile of the durations.
        assert len(set(nbytes)) == 1
        assert math.isclose(frame.loc[2, "p50"], nbytes[0] / percentile_by_hand(durations, 50), rel_tol=1e-9)
        assert math.isclose(frame.loc[2, "p99"], nbytes[0] / percentile_by_hand(durations, 99), rel_tol=1e-9)
        assert math.isclose(frame.loc[2, "mean"], sum(nbytes) / sum(durations), rel_tol=1e-9)
        assert math.isclose(frame.loc[2, "p50"], bw.get("gbps_p50"), rel_tol=1e-9)
        assert math.isclose(frame.loc[2, "p99"], bw.get("gbps_p99"), rel_tol=1e-9)
        assert math.isclose(frame.loc[2, "mean"], bw.get("gbps_mean"), rel_tol=1e-9)
        assert frame.loc[2, "p99"] < frame.loc[2, "p50"]  # slow side for bandwidth
        # incast latency ~1.8x the quiet one (planted), impact > 1 means worse
        assert 1.6 < frame.loc[1, "impact_mean"] < 2.1
        assert math.isnan(frame.loc[0, "impact_mean"])
        assert frame.loc[0, "stragglers"] == "3@fh1"
        assert frame.loc[2, "stragglers"] == "2@fh1, 5@fh2"
        assert frame.loc[5, "samples"] == 0 and frame.loc[5, "status"] == "error"


def test_summary_command(files):
    out = run_cli("summary", files["standard"])
    assert out.returncode == 0, out.stderr
    assert "== pingpong" in out.stdout and "incast" in out.stdout
    assert "3@fh1" in out.stdout and "peer 0 unreachable" in out.stdout
    assert "WARNING" not in out.stdout


def test_summary_warns_on_incomplete(files):
    out = run_cli("summary", files["incomplete"])
    assert out.returncode == 0
    assert "incomplete" in out.stderr and "WARNING: incomplete file" in out.stdout


@outcome_contract("summary", 2, "—")
def test_summary_bad_files_exit_2(tmp_path):
    out = run_cli("summary", tmp_path / "missing.h5")
    assert out.returncode == 2 and "no such file" in out.stderr
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not hdf5")
    out = run_cli("summary", bad)
    assert out.returncode == 2 and "cannot be read as HDF5" in out.stderr
    out = run_cli("summary")
    assert out.returncode == 2


def test_summary_names_known_counters_that_moved(files):
    out = run_cli("summary", files["standard"])
    assert out.returncode == 0, out.stderr
    # test 0001: every reader's RetransSegs moved by 3 x rank (ranks 1..7: 84 in all)
    assert "0001 counters moved: RetransSegs +84 (largest fh3 snmp:Tcp +21 of 7 readers)" \
        in out.stdout, out.stdout
    assert "counter RetransSegs: TCP segments retransmitted" in out.stdout
    # test 0000: rx_bytes moved but is not a known counter, RetransSegs did not move
    assert "0000 counters moved" not in out.stdout


def test_validity_comes_first_in_summary_and_report(tmp_path):
    from synthetic import write_matrix_run
    path = tmp_path / "v.h5"
    write_matrix_run(path, validity=[("*", "oversubscribed", 6, 2, "six ranks share two CPUs")])
    p = run_cli("summary", path)
    first = p.stdout.splitlines()[0]
    assert first.startswith("VALIDITY: 1 finding(s)") and "(waits yielded)" in first, p.stdout
    assert "! oversubscribed on every host: 6 (limit 2): six ranks share two CPUs" in p.stdout
    html = tmp_path / "r.html"
    run_cli("report", path, "--output", html)
    text = html.read_text()
    body = text[text.index("<body"):]
    # before the verdict block and the run metadata
    assert body.index("Validity: 1 finding(s)") < body.index("six ranks share two CPUs") \
        < body.index("class=\"verdict") < body.index("synthetic.yaml")
    clean = tmp_path / "c.h5"
    write_matrix_run(clean)
    assert "VALIDITY" not in run_cli("summary", clean).stdout


def test_summary_names_both_timing_conventions_of_the_collectives(tmp_path):
    """An all-reduce and an all-to-all carry a per-call and a pipelined figure; the
    summary prints both with the file's own numbers and says which is which."""
    from synthetic import SyntheticRun, make_samples
    path = tmp_path / "c.h5"
    run = SyntheticRun(path, nranks=2)
    samples = make_samples([(r, i, -1, 1 << 24, 120_000.0) for r in range(2) for i in range(5)], 2_000_000)
    run.add_test("ar", "allreduce", samples, nbytes=1 << 24, pattern="collective", extra_attrs={
        "collective_p50_ns": 120_000.0, "busbw_gbps": 139.8, "pipelined_calls": np.int64(20),
        "pipelined_time_ns": 95_000.0, "pipelined_busbw_gbps": 176.6})
    run.add_test("moe", "alltoall", samples, nbytes=1 << 24, pattern="collective", extra_attrs={
        "tokens_per_rank": np.int64(128), "top_k": np.int64(8), "experts": np.int64(256),
        "popularity": "uniform", "copies_per_token": 1.9, "dispatch_p50_ns": 50_000.0,
        "dispatch_busbw_gbps": 40.5, "combine_p50_ns": 70_000.0, "combine_busbw_gbps": 41.5,
        "collective_p50_ns": 120_000.0, "load_imbalance": 1.1, "pipelined_calls": np.int64(20),
        "dispatch_pipelined_busbw_gbps": 61.25, "combine_pipelined_busbw_gbps": 66.5})
    run.close()
    out = run_cli("summary", path)
    assert out.returncode == 0, out.stderr
    assert ("0000 all-reduce busbw per call 139.8 GB/s (p50 120 us, each call timed alone, slowest "
            "rank: what a decode step waits for); pipelined 176.6 GB/s (95 us/call over 20 calls "
            "back to back, total time / calls: nccl-tests' default)") in out.stdout, out.stdout
    assert ("; pipelined busbw dispatch 61.25 GB/s, combine 66.5 GB/s (20 calls of each phase "
            "back to back, total time / calls: nccl-tests' default)") in out.stdout, out.stdout
    # a file from before the pipelined figure: no all-reduce line, the MoE line without it
    old = tmp_path / "old.h5"
    run = SyntheticRun(old, nranks=2)
    run.add_test("ar", "allreduce", samples, nbytes=1 << 24, pattern="collective",
                 extra_attrs={"collective_p50_ns": 120_000.0, "busbw_gbps": 139.8})
    run.close()
    out = run_cli("summary", old)
    assert out.returncode == 0, out.stderr
    assert "0000 all-reduce busbw" not in out.stdout and "); pipelined" not in out.stdout, out.stdout


def test_summary_splits_by_topology_level(tmp_path):
    """samples.level: statistics per level the pair crosses, each over its
    own samples only; old files without the column read as level 0 (no split)."""
    from synthetic import SyntheticRun, latency_entries, make_samples
    path = tmp_path / "levels.h5"
    run = SyntheticRun(path, nranks=8, ranks_per_host=2)
    rng = np.random.default_rng(3)
    # One same-node pair (2 us), one same-leaf pair (6 us), two cross-pod pairs (18 us).
    pairs = {(0, 1): (1, 2000.0), (2, 4): (4, 18000.0), (6, 3): (4, 18000.0), (5, 7): (2, 6000.0)}
    entries, levels = [], {}
    for (a, b), (level, rtt) in pairs.items():
        entries += list(latency_entries([(a, b)], 50, rtt, rng, jitter=0.01))
        levels[(a, b)] = level
    index = run.add_test("hier", "latency", make_samples(entries, run.start_ns(), levels=levels),
                         nbytes=8, divisor=2, pattern="hierarchical")
    run.close(complete=True, exit_code=0)
    with open_result(path) as result:
        analysis = RunAnalysis(result)
        frame = analysis.level_frame()
        assert list(frame["level"]) == ["same-node", "same-leaf", "cross-pod"]
        assert list(frame["pairs"]) == [1, 1, 2] and list(frame["samples"]) == [50, 50, 100]
        p50 = dict(zip(frame["level"], frame["p50"]))
        assert math.isclose(p50["same-node"], 2.0, rel_tol=0.05), p50
        assert math.isclose(p50["same-leaf"], 6.0, rel_tol=0.05), p50
        assert math.isclose(p50["cross-pod"], 18.0, rel_tol=0.05), p50
        assert set(frame["index"]) == {index}
    out = run_cli("summary", str(path))
    assert out.returncode == 0, out.stderr
    assert "by topology level" in out.stdout
    line = next(x for x in out.stdout.splitlines() if "cross-pod" in x and "by topology" not in x)
    assert " 2 " in line and "100" in line, line


def test_files_without_levels_read_as_unknown(tmp_path):
    """A file written before samples.level existed: every sample reads as level 0."""
    import h5py
    from synthetic import SAMPLE_DTYPE, write_standard_run
    path = tmp_path / "old.h5"
    write_standard_run(path)
    old = np.dtype([(n, SAMPLE_DTYPE[n]) for n in SAMPLE_DTYPE.names if n != "level"])
    with h5py.File(path, "r+") as f:
        s = f["tests/0000/samples"][()]
        del f["tests/0000/samples"]
        f["tests/0000"].create_dataset("samples", data=s[list(old.names)].astype(old))
    with open_result(path) as result:
        samples = result.test(0).samples()
        assert len(samples) and (samples["level"] == 0).all()
        assert RunAnalysis(result).level_frame().empty


def test_rank_tails_match_a_percentile_per_rank():
    """rank_tails sorts once for all ranks; its numbers are numpy.percentile's per rank."""
    import pandas as pd
    from fabscope_analysis.stats import rank_tails, tail_value
    rng = np.random.default_rng(5)
    n = 3000
    s = pd.DataFrame({"rank": rng.integers(0, 37, n), "latency_ns": rng.lognormal(8, 1, n),
                      "bytes": np.full(n, 1 << 20)})
    s["duration_ns"] = s["latency_ns"]
    mixed = s.copy()
    mixed["bytes"] = rng.choice([1 << 10, 1 << 20], n)
    for frame, metric in ((s, "latency"), (s, "bandwidth"), (mixed, "bandwidth")):
        tails = rank_tails(frame, metric)
        assert list(tails["rank"]) == sorted(frame["rank"].unique())
        for row in tails.itertuples():
            g = frame[frame["rank"] == row.rank]
            t = g["latency_ns"].to_numpy(dtype=float)
            b = g["bytes"].to_numpy(dtype=float)
            assert row.samples == len(g)
            assert math.isclose(row.p50, tail_value(metric, t, b, 50.0), rel_tol=1e-12)
            assert math.isclose(row.p99, tail_value(metric, t, b, 99.0), rel_tol=1e-12)
            assert math.isclose(row.p99_time_ns, np.percentile(t, 99), rel_tol=1e-12)


def batch_cell(header: str, row: str) -> str:
    """The batch column's value in one row of a right-aligned table."""
    end = header.index(" batch ") + len(" batch")
    return row[:end].split()[-1]


def test_summary_prints_the_batch_figure_as_a_column_with_one_footnote(tmp_path):
    """Point-to-point tests carry a batch figure (loop time / iterations, as osu_latency and
    osu_bw report): one column of the test's table in its unit, explained once beneath it;
    a file written before the figure existed has neither column nor footnote."""
    from synthetic import SyntheticRun, bandwidth_entries, latency_entries, make_samples
    rng = np.random.default_rng(5)
    path = tmp_path / "batch.h5"
    run = SyntheticRun(path, nranks=2)
    lat = make_samples(latency_entries([(0, 1)], 40, 4000.0, rng), run.start_ns())
    for size in (8, 64):
        run.add_test("lat", "latency", lat, nbytes=size, divisor=2, extra_attrs={
            "batch_mean_ns": 2250.0 if size == 8 else 3500.0, "clock_read_ns": 24.09})
    bw = make_samples(bandwidth_entries([(0, 1)], 20, 1 << 16, 10.0, rng), run.start_ns())
    run.add_test("bw", "bandwidth", bw, nbytes=1 << 16, metric="bandwidth", window=8, extra_attrs={
        "batch_mean_ns": 6000.0, "batch_gbps": 10.92, "clock_read_ns": 24.09,
        "receive_slices": np.int64(1)})
    run.add_test("old", "latency", lat, nbytes=8, divisor=2)
    run.close(complete=True, exit_code=0)
    out = run_cli("summary", path)
    assert out.returncode == 0, out.stderr
    tables = out.stdout.split("\n== ")
    lat_table = next(t for t in tables if t.startswith("lat "))
    header, first, second = lat_table.splitlines()[1:4]
    assert [batch_cell(header, row) for row in (first, second)] == ["2.25", "3.5"], lat_table
    assert lat_table.count("osu_latency") == 1, lat_table
    assert ("  batch: each pair's timed loop / iterations, as osu_latency (average) and osu_bw report; "
            "24.09 ns per clock read taken out") in lat_table, lat_table
    bw_table = next(t for t in tables if t.startswith("bw "))
    header, row = bw_table.splitlines()[1:3]
    assert batch_cell(header, row) == "10.92", bw_table
    assert "receive buffers: 1 (one, as osu_bw)" in bw_table, bw_table
    old_table = next(t for t in tables if t.startswith("old "))
    assert "batch" not in old_table, old_table
