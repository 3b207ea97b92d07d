"""The plan's estimate calibrated on the cluster: the probe's figures fitted to what its
instances took, and each planned instance re-estimated from `fabscope list`'s rows
(docs/serving-fit.md, "The budget")."""

import numpy as np
import pytest

from synthetic import SyntheticRun, SAMPLE_DTYPE

from fabscope_analysis.serving.calibrate import (Calibration, calibrate, calibration_scenario,
                                                 fit_calibration, parse_instances)
from fabscope_analysis.serving.plan_list import PlanError

# `fabscope list --scenario` of the probe at 8 ranks, as the binary prints it (2026-12-05;
# its rows are as wide as the binary prints them)
PROBE_LISTING = """\
#    test                   kind      size     cond     transp mem    iters warmup   timeout   mem/rank  rounds  estimate  plan
0    cal-latency-many       latency   8B       quiet    mpi    host    2000     10      120s     96016B       1   0.0412s  pairs i<->i+4, 4 pairs at once
1    cal-instance-1         latency   8B       quiet    mpi    host      10      0      120s      496B       1   0.0012s  pairs i<->i+4, 4 pairs at once
2    cal-instance-2         latency   8B       quiet    mpi    host      10      0      120s      496B       1   0.0012s  pairs i<->i+4, 4 pairs at once
3    cal-instance-3         latency   8B       quiet    mpi    host      10      0      120s      496B       1   0.0012s  pairs i<->i+4, 4 pairs at once
4    cal-bandwidth          bandwidth 1MiB     quiet    mpi    host       8      2      120s   4194592B       1  0.00539s  pairs i<->i+4, 4 pairs at once, window 4
5    cal-rounds             latency   8B       quiet    mpi    host       2      1      120s       688B       7  0.00742s  all-pairs, 7 rounds, every rank busy

estimated time: 0.0577s in all (assuming 20 us and 10 GB/s per pair and 1 ms per round: a planning figure, not a prediction)
"""


def test_rows_are_read_with_their_rounds_windows_and_sizes():
    rows = parse_instances(PROBE_LISTING)
    assert [r.test for r in rows] == [t["name"] for t in calibration_scenario()["tests"]]
    assert [r.rounds for r in rows] == [1, 1, 1, 1, 1, 7]
    assert rows[4].nbytes == 1 << 20 and rows[4].window == 4 and rows[4].operations == 10
    # the probe's sizes are the listing's: 8 B ping-pongs and rounds, one 1 MiB window
    assert [t["sizes"] for t in calibration_scenario()["tests"]] == [[8]] * 4 + [["1MiB"], [8]]
    assert [r.nbytes for r in rows] == [8] * 4 + [1 << 20, 8]
    loader = Calibration(20e-6, 10e9, 1e-3, 0.0, 0.0, 0, 0, 0)
    for row in rows:   # the loader's own figures give back its estimate
        assert row.seconds(loader) == pytest.approx(row.loader_s, rel=0.02)
    with pytest.raises(PlanError, match="expected a row"):
        parse_instances("0    x  latency  8 quiet\n")
    # the probe's operations are the listing's too: 8 B x (2000 + 10), three instances of
    # 10 and no warm-up (what separates an instance's cost), 1 MiB x (8 + 2), rounds of 2 + 1
    assert [(t["iterations"], t["warmup"]) for t in calibration_scenario()["tests"]] == \
        [(2000, 10)] + [(10, 0)] * 3 + [(8, 2), (2, 1)]
    assert [r.operations for r in rows] == [2010, 10, 10, 10, 10, 3]
    # and the plan's own defaults (plan.py), which a GPU path's probe copy, without a
    # warm-up of its own, runs with as its planned test does
    assert calibration_scenario()["defaults"] == {"warmup": 10, "timeout": "120s"}
    # sizes in every unit the binary prints, GiB included
    gib = parse_instances(PROBE_LISTING.replace(" 1MiB ", " 2GiB "))
    assert [r.nbytes for r in gib] == [8] * 4 + [2 << 30, 8]


TRUE = Calibration(message_s=90e-6, bytes_per_s=0.11e9, round_s=6e-3, instance_s=40e-3,
                   startup_s=0, probe_instances=0, probe_s=0, fitted_s=0)


def test_the_fit_recovers_the_clusters_figures_from_the_probe():
    rows = parse_instances(PROBE_LISTING)
    took = [r.seconds(TRUE) for r in rows]
    cal = fit_calibration(rows, took, run_wall_s=sum(took) + 5.0)
    assert cal.message_s == pytest.approx(TRUE.message_s, rel=0.01)
    assert cal.bytes_per_s == pytest.approx(TRUE.bytes_per_s, rel=0.01)
    assert cal.round_s == pytest.approx(TRUE.round_s, rel=0.01)
    assert cal.instance_s == pytest.approx(TRUE.instance_s, rel=0.01)
    assert cal.startup_s == pytest.approx(5.0) and cal.fitted_s == pytest.approx(sum(took))
    # a plan is then estimated with them, start-up once: the loader's 20 us and 10 GB/s
    # are 91x too fast for this 1 MiB window
    plan = PROBE_LISTING.replace("cal-", "plan-")
    assert cal.estimate_s(plan) == pytest.approx(5.0 + sum(took), rel=0.01)
    assert cal.estimate_s(plan) > 50 * 0.0577
    with pytest.raises(PlanError, match="measured instances"):
        fit_calibration(rows, took[:3], 1.0)


def test_the_probe_file_is_read_in_order_and_must_be_the_probes(tmp_path):
    rows = parse_instances(PROBE_LISTING)
    path = tmp_path / "calibrate.h5"
    run = SyntheticRun(path, nranks=8)
    for row in rows:
        s = np.zeros(1, dtype=SAMPLE_DTYPE)
        start = run.start_ns()
        s[0] = (0, 0, 1, row.nbytes, start, start + int(row.seconds(TRUE) * 1e9) - 1000, 0, 0)
        run.add_test(row.test, "latency", s, nbytes=row.nbytes)
    run.close()   # started 00:00:00, finished 00:05:00
    cal = calibrate(str(path), PROBE_LISTING)
    assert cal.message_s == pytest.approx(TRUE.message_s, rel=0.02)
    assert cal.bytes_per_s == pytest.approx(TRUE.bytes_per_s, rel=0.02)
    assert cal.startup_s == pytest.approx(300 - cal.probe_s, rel=0.01)
    assert calibrate(str(path), PROBE_LISTING, run_wall_s=cal.probe_s + 2).startup_s == \
        pytest.approx(2, rel=0.01)
    with pytest.raises(PlanError, match="are not the probe's"):
        calibrate(str(path), PROBE_LISTING.replace("cal-rounds", "cal-other"))
    with pytest.raises(PlanError, match="not a finished probe result"):
        calibrate(str(tmp_path / "none.h5"), PROBE_LISTING)


def test_the_bandwidth_probes_are_sized_for_the_calibrated_rate():
    from fabscope_analysis.serving.calibrate import probe_window
    at = lambda gbps: probe_window(Calibration(1e-5, gbps * 1e9, 0, 0, 0, 0, 0, 0))
    # a sample as long as the default 64 x 1 MiB at 10 GB/s (6.7 ms)
    assert (at(10), at(100), at(1), at(0.11)) == (64, 64, 6, 1)


def test_the_plan_is_chosen_and_estimated_with_the_calibrated_figures(tmp_path, capsys):
    """The real binary lists the plan; a probe of a slow cluster (0.05 GB/s a pair) makes
    the plan shrink to its budget where the loader's 10 GB/s would not, and the bandwidth
    probes send one 1 MiB message a sample."""
    from test_serving_plan import fabscope_bin
    from fabscope_analysis.cli import main
    binary = fabscope_bin()
    rows = parse_instances(PROBE_LISTING)
    slow = Calibration(500e-6, 0.05e9, 10e-3, 0.1, 0, 0, 0, 0)
    path = tmp_path / "calibrate.h5"
    run = SyntheticRun(path, nranks=8)
    for row in rows:
        s = np.zeros(1, dtype=SAMPLE_DTYPE)
        start = run.start_ns()
        s[0] = (0, 0, 1, row.nbytes, start, start + int(row.seconds(slow) * 1e9) - 1000, 0, 0)
        run.add_test(row.test, "latency", s, nbytes=row.nbytes)
    run.close()
    common = ["plan", "--model", "llama3-8b", "--tp", "2", "--ranks", "8", "--ranks-per-node",
              "1", "--budget", "40s", "--slo", "ttft_p99=2s", "--conditions", "quiet",
              "--decode-batch", "1", "--prefill-chunk", "none", "--prompt", "16", "--fabscope",
              binary]
    assert main(common + ["--output", str(tmp_path / "plain.yaml")]) == 0
    plain = capsys.readouterr().out
    assert "the loader's planning figure: 20 us and 10 GB/s" in plain and "changed to fit" not in plain
    assert main(common + ["--calibration", str(path), "--calibration-wall", "30",
                          "--output", str(tmp_path / "cal.yaml")]) == 0
    printed = capsys.readouterr().out
    estimate = float(printed.split("estimate ")[1].split(" s ")[0])
    assert 20 < estimate <= 40, printed          # 30 s wall - the probe's own time: start-up
    assert "calibrated on this cluster: 500 us per message, 0.05 GB/s per pair" in printed
    assert "changed to fit" in printed, printed   # the loader's figure would fit as it was
    assert "the bandwidth probes send 1 x 1 MiB per sample" in printed
    text = (tmp_path / "cal.yaml").read_text()
    assert "window: 1" in text and "calibrated on this cluster" in text.splitlines()[1]


def test_calibrated_plans_keep_all_pairs_where_the_budget_holds_it_and_say_what_sampling_misses():
    from test_serving_plan import knobs, listing
    from fabscope_analysis.serving.plan import Cluster, PlanRequest, probes_for
    from fabscope_analysis.serving.plan_budget import fit_budget
    from fabscope_analysis.serving.plan_list import ListAnswer
    cluster = Cluster(256)

    def estimate(scenario):   # all-pairs: 255 rounds of 10 ms; anything else 1 s in all
        names = {t["name"] for t in scenario["tests"]}
        return ListAnswer(True, estimate_s=1.0 + (2.55 if "all-pairs-latency" in names else 0),
                          instances=len(names))

    def plan(budget_s, calibrated):
        k = knobs()
        k.probes = probes_for(cluster, calibrated=calibrated)
        req = PlanRequest("llama3-70b", 8, None, cluster, budget_s, "ttft_p99=2s")
        return fit_budget(req, listing("llama3-70b"), k, "c.yaml", estimate)
    roomy = plan(10.0, calibrated=True)
    assert roomy.knobs.probes == ["all-pairs-latency", "all-pairs-bandwidth"] and not roomy.shrunk
    tight = plan(2.0, calibrated=True)
    assert tight.knobs.probes[0] == "rails-latency"
    assert tight.shrunk[0].startswith("the probes: rails-latency, rails-bandwidth, ring-latency, "
                                      "bisection-bandwidth instead of all-pairs")
    assert "a single bad GPU pair" in tight.shrunk[0] and "is not seen" in tight.shrunk[0]
    # the loader's planning figure alone keeps the sampled design beyond 128 ranks
    assert plan(10.0, calibrated=False).knobs.probes[0] == "rails-latency"


# the probe's GPU path rows at 2 ranks (`plan --paths gpu --calibration-probe`, listed by
# the binary: the list cuts names at 22 characters)
GPU_PROBE_ROWS = """\
6    cal-gpu-tp-allreduce   allreduce 8KiB     quiet    nccl   cuda      10     10      120s     16864B       -  0.00142s  ncclAllReduce sum float32 over 2 ranks
7    cal-gpu-tp-allreduce-a allreduce 8KiB     quiet    nccl   cuda      10     10      120s     16864B       -  0.00142s  ncclAllReduce sum float32 over 2 ranks
8    cal-gpu-tp-allreduce-m allreduce 8KiB     quiet    nccl   cuda     100     10      120s     21184B       -  0.00329s  ncclAllReduce sum float32 over 2 ranks
9    cal-gpu-kv-push        kvpush    1MiB     quiet    nccl   cuda      10     10      120s   2097632B       -   0.0035s  staged push
10   cal-gpu-kv-push-again  kvpush    1MiB     quiet    nccl   cuda      10     10      120s   2097632B       -   0.0035s  staged push
11   cal-gpu-kv-push-more   kvpush    1MiB     quiet    nccl   cuda     100     10      120s   2101952B       -   0.0147s  staged push
"""
GPU_NAMES = ["cal-gpu-tp-allreduce", "cal-gpu-tp-allreduce-again", "cal-gpu-tp-allreduce-more",
             "cal-gpu-kv-push", "cal-gpu-kv-push-again", "cal-gpu-kv-push-more"]
# the plan's instances on those paths (one H200, 2026-12-05): the NCCL all-reduce took
# 0.745 s for 19,089 operations, half a second of it the process's first NCCL instance
PLAN_ROWS = """\
0    tp-allreduce           allreduce 8KiB     quiet    nccl   cuda   19079     10      120s    932176B       -    0.398s  ncclAllReduce
1    kv-push                kvpush    1MiB     quiet    nccl   cuda     300     10      120s   2111552B       -   0.0397s  staged push
2    tp-allreduce           allreduce 8KiB     congest  nccl   cuda   19079     10      120s    932176B       -    0.398s  ncclAllReduce
"""


def test_the_probe_measures_each_serving_test_on_its_gpu_path_three_times():
    from fabscope_analysis.serving.calibrate import gpu_path_probes
    plan = [{"name": "tp-allreduce", "kind": "allreduce", "iterations": 19079,
             "conditions": ["quiet", "congested"], "transport": "nccl", "memory": "cuda",
             "roles": {"canaries": 2}},
            {"name": "all-pairs-latency", "kind": "latency", "iterations": 50}]
    probes = gpu_path_probes(plan)
    assert [(p["name"], p["iterations"], p["conditions"]) for p in probes] == [
        ("cal-gpu-tp-allreduce", 10, ["quiet"]), ("cal-gpu-tp-allreduce-again", 10, ["quiet"]),
        ("cal-gpu-tp-allreduce-more", 100, ["quiet"])]
    assert probes[0]["roles"] == {"canaries": 2} and plan[0]["iterations"] == 19079  # copies
    scenario = calibration_scenario(7, probes, {"model": "llama3-8b"})
    assert scenario["model"] == "llama3-8b" and scenario["tests"][-3:] == probes


def test_gpu_paths_are_estimated_from_their_own_probes():
    from fabscope_analysis.serving.calibrate import GpuPathCost
    rows = parse_instances(PROBE_LISTING.split("\n\n")[0] + "\n" + GPU_PROBE_ROWS)
    for row, name in zip(rows[6:], GPU_NAMES):
        row.test = name    # as calibrate() restores them from the file
    allreduce, kv = GpuPathCost(1.5e-3, 10e-6, 0.55), GpuPathCost(0.02, 1.1e-3, 0.1)
    took = [r.seconds(TRUE) for r in rows[:6]] + [
        allreduce.seconds(20, first=True), allreduce.seconds(20), allreduce.seconds(110),
        kv.seconds(20, first=True), kv.seconds(20), kv.seconds(110)]
    cal = fit_calibration(rows, took, run_wall_s=sum(took) + 1.7)
    got = cal.gpu_paths[("tp-allreduce", 8192)]
    assert (got.setup_s, got.per_operation_s, got.first_time_s) == pytest.approx((1.5e-3, 10e-6, 0.55))
    assert cal.gpu_paths[("kv-push", 1 << 20)].per_operation_s == pytest.approx(1.1e-3)
    # the host form is fitted to the host rows alone, the start-up is the wall less all
    assert cal.message_s == pytest.approx(TRUE.message_s, rel=0.01)
    assert cal.startup_s == pytest.approx(1.7)
    # the first instance of a test pays the path's first time, a later one does not
    first_allreduce = 1.5e-3 + 19089 * 10e-6 + 0.55
    assert cal.estimate_s(PLAN_ROWS) == pytest.approx(
        1.7 + first_allreduce + (0.02 + 310 * 1.1e-3 + 0.1) + (first_allreduce - 0.55))
    assert ("tp-allreduce on its GPU path at 8192 B: 0.0015 s set-up (the first instance 0.55 s "
            "more), 10 us per operation") in cal.describe()
    # a planned size the probe did not run takes the nearest probed one's cost
    other = PLAN_ROWS.replace("8KiB  ", "16KiB ")
    assert cal.estimate_s(other) == pytest.approx(cal.estimate_s(PLAN_ROWS))
    with pytest.raises(PlanError, match="has no cal-gpu-kv-push-more row of that size"):
        fit_calibration(rows[:11], took[:11], 10.0)
    # a "more" copy that ran no more operations than "again" tells no per-operation cost:
    # 0, and the set-up is all of what "again" took
    rows[11].operations, rows[11].rounds = rows[10].operations, rows[10].rounds
    flat = fit_calibration(rows, took, run_wall_s=sum(took) + 1.7).gpu_paths[("kv-push", 1 << 20)]
    assert (flat.setup_s, flat.per_operation_s) == (took[10], 0.0)


def test_long_names_cut_by_the_list_still_match_the_file(tmp_path):
    rows = parse_instances(PROBE_LISTING.split("\n\n")[0] + "\n" + GPU_PROBE_ROWS)
    path = tmp_path / "calibrate.h5"
    run = SyntheticRun(path, nranks=8)
    for row, name in zip(rows, [r.test for r in rows[:6]] + GPU_NAMES):
        s = np.zeros(1, dtype=SAMPLE_DTYPE)
        start = run.start_ns()
        s[0] = (0, 0, 1, row.nbytes, start, start + int(0.01 * row.operations * 1e9), 0, 0)
        run.add_test(name, "latency", s, nbytes=row.nbytes)
    run.close()
    listing = PROBE_LISTING.split("\n\n")[0] + "\n" + GPU_PROBE_ROWS
    cal = calibrate(str(path), listing, run_wall_s=60)
    assert set(cal.gpu_paths) == {("tp-allreduce", 8192), ("kv-push", 1 << 20)}
    with pytest.raises(PlanError, match="are not the probe's"):
        calibrate(str(path), listing.replace("cal-gpu-tp-allreduce-m", "cal-gpu-tp-allreduce-x"))


def test_the_calibration_probe_is_written_with_how_to_run_it(tmp_path, capsys):
    """`plan --calibration-probe FILE` writes the probe scenario under two comment lines
    saying how to use it, prints where, and exits 0; a FILE it cannot write exits 2
    naming the option."""
    import argparse
    import yaml
    from fabscope_analysis.serving.plan_command import write_probe
    scenario = {"name": "calibration", "tests": [{"name": "probe-latency", "kind": "latency"}]}
    args = argparse.Namespace(calibration_probe=str(tmp_path / "probe.yaml"))
    assert write_probe(args, scenario) == 0
    text = (tmp_path / "probe.yaml").read_text()
    assert text.startswith("# The plan's calibration probe: run it with the run's ranks and "
                           "launcher,\n# then: python3 -m fabscope_analysis plan ... --calibration "
                           "RESULT.h5\n")
    assert yaml.safe_load(text) == scenario
    assert capsys.readouterr().out == (f"wrote {tmp_path / 'probe.yaml'}: run it on the cluster, "
                                       "then plan with --calibration\n")
    args.calibration_probe = str(tmp_path / "missing" / "probe.yaml")
    assert write_probe(args, scenario) == 2
    assert capsys.readouterr().err == (f"error: --calibration-probe {args.calibration_probe}: "
                                       "cannot write it (No such file or directory)\n")
