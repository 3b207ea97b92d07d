#!/usr/bin/python3
"""Runs a command (an mpirun of fabscope) and samples, from outside, every
fabscope process's /proc/PID/status while it runs: the peak RssAnon (heap and
other private memory; MPI's shared-memory segments are RssShmem, not counted)
and the peak RssShmem per process. Prints the wall time, the largest and
median peak heap and the largest shared memory. Works with any build, so the
same numbers can be taken before and after a change (docs/scale.md).

    rank_memory.py --name fabscope --interval 0.5 -- mpirun -np 64 build/fabscope run ...
"""
import argparse, os, statistics, subprocess, sys, time


def status_of(pid):
    fields = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("Name", "RssAnon", "RssShmem", "RssFile", "VmHWM"):
                    fields[key] = value.strip()
    except OSError:
        return None
    return fields


def rank_of(pid, tag):
    """The process's MPI rank if it carries this run's tag (other runs of
    fabscope on the machine are not ours), else None."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            entries = f.read().split(b"\0")
    except OSError:
        return None
    if f"RANK_MEMORY_TAG={tag}".encode() not in entries:
        return None
    for entry in entries:
        if entry.startswith(b"OMPI_COMM_WORLD_RANK="):
            return int(entry.split(b"=", 1)[1])
    return -1


def kib(value):
    return int(value.split()[0]) if value else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="fabscope")
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    command = a.command[1:] if a.command and a.command[0] == "--" else a.command
    heap, shmem, hwm, files, ranks = {}, {}, {}, {}, {}
    start = time.monotonic()
    tag = f"{os.getpid()}-{time.time_ns()}"
    child = subprocess.Popen(command, env=dict(os.environ, RANK_MEMORY_TAG=tag))
    while child.poll() is None:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            s = status_of(pid)
            if not s or s.get("Name") != a.name[:15]:
                continue
            if pid not in ranks:
                ranks[pid] = rank_of(pid, tag)
            if ranks[pid] is None:
                continue
            heap[pid] = max(heap.get(pid, 0), kib(s.get("RssAnon")))
            shmem[pid] = max(shmem.get(pid, 0), kib(s.get("RssShmem")))
            files[pid] = max(files.get(pid, 0), kib(s.get("RssFile")))
            hwm[pid] = max(hwm.get(pid, 0), kib(s.get("VmHWM")))

        time.sleep(a.interval)
    wall = time.monotonic() - start
    peaks = sorted(heap.values())
    if peaks:
        top = max(heap, key=heap.get)
        non_root = [v for p, v in heap.items() if ranks.get(p) != 0]
        print(f"rank_memory: largest heap: rank {ranks.get(top)}; largest non-root heap_mb "
              f"{max(non_root, default=0) / 1024:.1f}; rank 0 heap_mb "
              f"{max([v for p, v in heap.items() if ranks.get(p) == 0], default=0) / 1024:.1f}; "
              f"VmHWM max_mb {max(hwm.values()) / 1024:.1f} (RSS with shared memory and files); "
              f"RssFile max_mb {max(files.values()) / 1024:.1f}")
        print(f"rank_memory: exit {child.returncode} wall_s {wall:.1f} processes {len(peaks)} "
              f"heap_max_mb {peaks[-1] / 1024:.1f} heap_median_mb {statistics.median(peaks) / 1024:.1f} "
              f"shmem_max_mb {max(shmem.values()) / 1024:.1f}")
    else:
        print(f"rank_memory: exit {child.returncode} wall_s {wall:.1f} no {a.name} process seen")
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
