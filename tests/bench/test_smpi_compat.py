"""cmake/smpi/fabscope_smpi_compat.h under SimGrid's smpirun (smpi_compat_check.cpp): with the
header, MPI_Ibarrier is a barrier (no rank leaves before the last one entered); MPI_Iallreduce,
MPI_Iallgather, MPI_Ibcast, MPI_Igather and MPI_Igatherv give the right values; MPI_Test on a
null request sets the flag. Without it, SimGrid 3.32's own MPI_Ibarrier lets ranks leave
before the last one entered and its MPI_Test leaves the flag unset: the check sees both, so
it can tell the two apart. Needs smpicxx and smpirun (Debian libsimgrid-dev);
about 5 s (two small compiles, two 8-rank runs).
"""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
COMPAT = ROOT / "cmake" / "smpi" / "fabscope_smpi_compat.h"
CHECK = HERE / "smpi_compat_check.cpp"

pytestmark = pytest.mark.skipif(shutil.which("smpicxx") is None or shutil.which("smpirun") is None,
                                reason="SimGrid's smpicxx/smpirun not installed (Debian libsimgrid-dev)")


def build_and_run(tmp_path, name, with_compat):
    flags = ["-include", str(COMPAT)] if with_compat else []
    binary = tmp_path / name
    subprocess.run(["smpicxx", "-std=c++20", "-O1", "-DSMPI_NO_OVERRIDE_MALLOC=1", *flags, str(CHECK),
                    "-o", str(binary)], check=True, capture_output=True, text=True)
    platform = tmp_path / "platform"
    if not (platform / "platform.xml").exists():
        subprocess.run([sys.executable, str(HERE / "smpi_platform.py"), str(platform), "--hosts", "4", "--gpus", "2",
                        "--hosts-per-leaf", "2", "--spines", "2", "--fault", "none"], check=True)
    run = subprocess.run(["smpirun", "-platform", "platform.xml", "-hostfile", "hostfile", "-np", "8",
                          "--cfg=smpi/test:1e-7", "--cfg=smpi/grow-injected-times:no", "--log=root.thres:critical",
                          str(binary)], cwd=platform, capture_output=True, text=True, timeout=120)
    # "ok WHAT: ..." or "FAIL WHAT: ...", one line per check: [(status, WHAT)]
    lines = [(line.split(" ", 1)[0], line.split(" ", 1)[1].split(":")[0])
             for line in run.stdout.splitlines() if line.startswith(("ok ", "FAIL "))]
    return run, lines


def test_with_the_compat_header_every_promise_holds(tmp_path):
    run, lines = build_and_run(tmp_path, "with", True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert [what for _, what in lines] == ["barrier", "barrier", "allreduce", "allgather", "broadcast", "gather",
                                      "gatherv", "null test"], run.stdout
    assert all(status == "ok" for status, _ in lines), run.stdout


def test_simgrid_own_ibarrier_lets_ranks_leave_early(tmp_path):
    # SimGrid's departures that the header mends, seen by the same checks: if a SimGrid
    # release mends one, this fails and that part of the header can go.
    run, lines = build_and_run(tmp_path, "without", False)
    assert run.returncode == 1, run.stdout + run.stderr
    assert lines == [("FAIL", "barrier"), ("FAIL", "barrier"), ("ok", "allreduce"), ("ok", "allgather"),
                     ("ok", "broadcast"), ("ok", "gather"), ("ok", "gatherv"), ("FAIL", "null test")], run.stdout
