"""The local processes of an Open MPI job started by a test, found by pid."""
import subprocess


def rank_pid(marker, rank, launcher_pid=None):
    """The pid of the process whose command line contains `marker` (a path only
    this job's command line has) and whose environment has
    OMPI_COMM_WORLD_RANK=`rank`; None when there is none (yet, or any more).
    `launcher_pid`: the test's own child (mpirun, a wrapper), never a rank."""
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    for pid in map(int, found.split()):
        if pid == launcher_pid:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            return pid
    return None
