"""tests/support/busy_machine.py: the test-suite helper that lets a timing check skip
only when the run's own file records busy_host, and fail everywhere else."""
import os
import subprocess
import sys

from synthetic import write_matrix_run

HELPER = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "support", "busy_machine.py")


def _run(*paths):
    return subprocess.run([sys.executable, HELPER, *map(str, paths)], capture_output=True, text=True)


def test_busy_host_recorded_is_named(tmp_path):
    path = tmp_path / "busy.h5"
    write_matrix_run(path, validity=[("fh1", "busy_host", 2.0, 0.5, "other work held the CPUs")])
    r = _run(path)
    assert r.returncode == 0, r.stderr
    assert "busy_host on fh1: 2.0 (limit 0.5): other work held the CPUs" in r.stdout


def test_a_quiet_run_or_another_finding_is_not_busy(tmp_path):
    quiet, shared = tmp_path / "quiet.h5", tmp_path / "shared.h5"
    write_matrix_run(quiet)
    write_matrix_run(shared, validity=[("*", "oversubscribed", 6, 2, "ranks share CPUs")])
    assert _run(quiet).returncode == 1
    assert _run(shared).returncode == 1
    assert _run(quiet, shared).returncode == 1


def test_an_unreadable_file_is_an_error_not_a_skip(tmp_path):
    bad = tmp_path / "not.h5"
    bad.write_text("not hdf5")
    r = _run(bad)
    assert r.returncode == 2 and "cannot read its validity table" in r.stderr
