"""A fault drill's measured detection next to what the stack would take on its own,
and its return to baseline, in `summary` and the HTML report."""

import numpy as np

from fabscope_analysis import open_result
from fabscope_analysis.kinds.fault import expected_phrase, fault_figures, fault_lines
from helpers import run_cli
from synthetic import SyntheticRun, latency_entries, make_samples


def write_drill(path, *, recovered=True, detection_ms=412.0, expected_s=924.6, false_losses=None):
    run = SyntheticRun(path, nranks=4, ranks_per_host=1, seed=5)
    samples = make_samples(latency_entries([(0, 1), (0, 2)], 200, 200_000, run.rng),
                           run.start_ns())
    cycles = ("1: detected 612.0 ms after the fault, restored at +1500.0 ms, rank 1 in service "
              "230.0 ms after the restore, baseline 730.0 ms after the restore (498 req/s, p99 0.9 ms)")
    if not recovered:
        cycles = "1: detected 612.0 ms after the fault, restored at +1500.0 ms, not recovered within 4000.0 ms"
    run.add_test(
        "drill", "fault", samples, nbytes=64, divisor=1, transport="ucx",
        status="passed" if recovered else "failed",
        error="" if recovered else "fault drill: return to baseline: flap not recovered",
        events=[(0, 1_000_000, "fault", 1, "flap: fault_command started"),
                (0, 1_400_000, "detected", 1, "heartbeat: none for 612 ms"),
                (0, 2_500_000, "restored", 1, "flap: restore_command exit 0"),
                (0, 2_700_000, "rejoined", 1, "heartbeat: heard again"),
                (0, 3_200_000, "baseline" if recovered else "not_recovered", 1, "rank 1 back")],
        extra_attrs={
            "fault": "flap", "detection_ms": detection_ms, "detection_mechanism": "heartbeat",
            "expected_detection_stack": "UCX over TCP", "expected_detection_s": expected_s,
            "expected_detection_basis": "TCP retransmission budget, tcp_retries2 15",
            "expected_nccl_ib_s": 34.36, "expected_verbs_qp_s": 0.537,
            "return_to_baseline": "recovered" if recovered else "not recovered",
            "baseline_ms": 730.0 if recovered else -1.0, "recover_within_ms": 4000.0,
            "carrier_rank": np.int64(1), "victim_pre_fault_rps": 500.0,
            "victim_pre_fault_p99_ms": 0.8, "fault_cycles": cycles,
            **({"false_losses": np.int64(len(false_losses)), "false_loss_detail": ", ".join(false_losses)}
               if false_losses is not None else {})})
    run.close(complete=True, exit_code=0 if recovered else 1)


def test_expected_phrases():
    assert expected_phrase("NCCL over InfiniBand", 34.36) == \
        "NCCL over InfiniBand as configured here would take about 34 s"
    assert expected_phrase("UCX over TCP", float("inf")) == \
        "UCX over TCP as configured here would never report it"
    assert expected_phrase("UCX over TCP", 0.0) == "UCX over TCP as configured here would report it at once"
    assert expected_phrase("UCX over sm", float("nan"), "not modelled for UCX_TLS=sm") == \
        "UCX over sm: not modelled (not modelled for UCX_TLS=sm)"


def test_summary_puts_the_stack_next_to_the_drill(tmp_path):
    path = tmp_path / "drill.h5"
    write_drill(path)
    with open_result(str(path)) as run:
        lines = fault_lines(fault_figures(run.test(0)))
    assert lines[0].startswith("flap: fabscope's drill detected in 0.412 s (heartbeat); "
                               "UCX over TCP as configured here would take about 925 s"), lines[0]
    assert "NCCL over InfiniBand as configured here would take about 34 s" in lines[1], lines[1]
    assert lines[2].startswith("return to baseline: recovered (worst 730 ms after the fault ended"), lines[2]
    out = run_cli("summary", str(path)).stdout
    assert "fabscope's drill detected in 0.412 s" in out and "return to baseline: recovered" in out, out


def test_a_drill_that_never_came_back_says_so(tmp_path):
    path = tmp_path / "drill.h5"
    write_drill(path, recovered=False, detection_ms=-1.0, expected_s=float("inf"))
    with open_result(str(path)) as run:
        lines = fault_lines(fault_figures(run.test(0)))
    assert lines[0] == ("flap: fabscope's drill did not detect it; UCX over TCP as configured here would "
                        "never report it (TCP retransmission budget, tcp_retries2 15)"), lines[0]
    assert lines[2].startswith("return to baseline: not recovered (missing;"), lines[2]
    assert "not recovered within 4000.0 ms" in lines[2]


def test_false_losses_come_first(tmp_path):
    path = tmp_path / "drill.h5"
    write_drill(path, recovered=False, false_losses=[
        "rank 0 declared rank 3 lost 1001.2 ms before the fault (heartbeat: none for 500 ms)"])
    with open_result(str(path)) as run:
        lines = fault_lines(fault_figures(run.test(0)))
    assert lines[0] == ("false losses: 1 live peer(s) declared lost, so the drill cannot judge the fault: "
                        "rank 0 declared rank 3 lost 1001.2 ms before the fault (heartbeat: none for 500 ms)"), lines
    # None declared: no line.
    write_drill(tmp_path / "clean.h5", false_losses=[])
    with open_result(str(tmp_path / "clean.h5")) as run:
        lines = fault_lines(fault_figures(run.test(0)))
        assert not any(line.startswith("false losses") for line in lines)


def test_report_shows_the_drill(tmp_path):
    path = tmp_path / "drill.h5"
    write_drill(path)
    html = tmp_path / "r.html"
    run_cli("report", str(path), "-o", str(html))
    text = html.read_text()
    assert "Detection and return to baseline" in text
    assert "as configured here would take about 925 s" in text


def test_a_drill_over_nccl_shows_the_aborts_and_no_reroute(tmp_path):
    path = tmp_path / "nccl-drill.h5"
    run = SyntheticRun(path, nranks=2, ranks_per_host=2, seed=7)
    samples = make_samples(latency_entries([(0, 1)], 50, 20_000, run.rng), run.start_ns())
    run.add_test(
        "drill", "fault", samples, nbytes=65536, divisor=1, transport="nccl", status="passed",
        events=[(0, 1_000_000, "fault", 1, "kill (SIGKILL) planned"),
                (0, 1_500_000, "detected", 1, "step deadline: all-reduce step 999 unfinished for 500.2 ms"),
                (0, 1_510_000, "aborted", 1, "ncclCommAbort returned 9.8 ms after the detection")],
        extra_attrs={
            "fault": "kill", "detection_ms": 500.4, "detection_mechanism": "step deadline",
            "expected_detection_stack": "NCCL within a host", "expected_detection_s": float("inf"),
            "expected_detection_basis": "never: no timeout within a host",
            "expected_nccl_ib_s": 34.36, "abort_within_ms": 5000.0, "abort_max_ms": 9.8,
            "abort_per_survivor": "rank 0: aborted in 9.8 ms",
            "reroute": "none over NCCL: a communicator has fixed members"})
    run.close(complete=True, exit_code=0)
    with open_result(str(path)) as result:
        lines = fault_lines(fault_figures(result.test(0)))
    assert lines[0].startswith("kill: fabscope's drill detected in 0.5 s (step deadline); NCCL within a host "
                               "as configured here would never report it"), lines[0]
    assert "communicator abort: slowest 9.8 ms (abort_within 5000 ms): rank 0: aborted in 9.8 ms" in lines, lines
    assert "re-route: none over NCCL: a communicator has fixed members" in lines, lines
