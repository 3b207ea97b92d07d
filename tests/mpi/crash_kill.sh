# Crash consistency: SIGKILL every rank and mpirun in the middle of a
# multi-test run, then check the file still opens, says complete=0, and every
# test instance that reached a final status has all its samples intact.
# Repeated for both HDF5 modes (parallel collective writes; serial gather).
source "$(dirname "$0")/lib.bash"
cat > "$scratch/long.yaml" <<'YAML'
name: crash-kill
description: many instances of about a second each, so a kill lands mid-run
seed: 7
defaults: {warmup: 10, timeout: 60s}
tests:
  - name: lat
    kind: latency
    sizes: [8, 64, 512, 4KiB, 32KiB, 64KiB]
    iterations: 3000
  - name: bw
    kind: bandwidth
    sizes: [64KiB, 256KiB, 1MiB]
    window: 8
    iterations: 300
YAML
/usr/bin/python3 - "$FABSCOPE_BIN" "$scratch" <<'PY'
import os, signal, subprocess, sys, time
import h5py, numpy as np

binary, scratch = sys.argv[1], sys.argv[2]
FINAL = {"passed", "failed", "timeout", "error", "skipped"}
os.environ["HDF5_USE_FILE_LOCKING"] = "FALSE"  # read while the job still writes


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def finished_groups(path):
    """Instances with a final status, or -1 while the file cannot be read yet."""
    try:
        with h5py.File(path, "r") as f:
            return sum(1 for g in f["tests"].values() if text(g.attrs.get("status", "")) in FINAL)
    except Exception:
        return -1


def children(pid):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def kill_mid_run(mode):
    out = os.path.join(scratch, f"killed-{mode}.h5")
    log = open(os.path.join(scratch, f"killed-{mode}.log"), "w")
    job = subprocess.Popen(["mpirun", "-np", "4", binary, "run", "--scenario", os.path.join(scratch, "long.yaml"),
                            "--output", out, "--set", f"hdf5={mode}"], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 240
    done = 0
    while time.monotonic() < deadline and job.poll() is None:
        done = finished_groups(out) if os.path.exists(out) else -1
        if done >= 3:
            break
        time.sleep(0.2)
    if job.poll() is not None:
        sys.exit(f"crash_kill ({mode}): the run ended (exit {job.returncode}) before 3 instances were written; "
                 f"make the scenario longer. Log: {open(log.name).read()}")
    if done < 3:
        job.kill()
        sys.exit(f"crash_kill ({mode}): fewer than 3 instances after 240 s")
    ranks = children(job.pid)
    # Every rank and the launcher at once: nothing gets a chance to close the file.
    for pid in ranks + [job.pid]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    job.wait(timeout=30)
    for pid in ranks:  # reap check: none may survive its launcher
        for _ in range(50):
            if not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z":
                break
            time.sleep(0.1)
        else:
            sys.exit(f"crash_kill ({mode}): rank pid {pid} survived SIGKILL")
    return out, len(ranks)


def check(path, mode):
    try:
        f = h5py.File(path, "r")
    except Exception as e:
        sys.exit(f"crash_kill ({mode}): the killed run's file does not open: {e}")
    with f:
        at = f.attrs
        if int(at["complete"]) != 0 or int(at["exit_code"]) != -1:
            sys.exit(f"crash_kill ({mode}): complete={at['complete']} exit_code={at['exit_code']}, expected 0 and -1")
        if len(f["ranks"]) != 4:
            sys.exit(f"crash_kill ({mode}): /ranks has {len(f['ranks'])} rows")
        final = 0
        names = sorted(f["tests"])
        for i, name in enumerate(names):
            g = f["tests"][name]
            status = text(g.attrs.get("status", ""))
            if status not in FINAL:
                if i != len(names) - 1:
                    sys.exit(f"crash_kill ({mode}): /tests/{name} has no final status but is not the last instance")
                continue
            final += 1
            where = f"/tests/{name} ({text(g.attrs['case'])})"
            if status != "passed":
                sys.exit(f"crash_kill ({mode}): {where} status {status}: {text(g.attrs['error'])}")
            iters = int(g.attrs["iterations"])
            s = g["samples"][()]
            ranks, counts = np.unique(s["rank"], return_counts=True)
            if len(ranks) != 2 or any(c != iters for c in counts):
                sys.exit(f"crash_kill ({mode}): {where}: samples per rank {dict(zip(ranks, counts))}, expected "
                         f"{iters} on each of 2 measuring ranks")
            if np.any(s["t_done_ns"] <= s["t_post_ns"]) or sorted(s["iter"][s["rank"] == ranks[0]]) != list(range(iters)):
                sys.exit(f"crash_kill ({mode}): {where}: damaged sample rows")
            summary = g["summary"][()]
            if sorted(zip(summary["rank"], summary["samples"])) != sorted(zip(ranks, counts)):
                sys.exit(f"crash_kill ({mode}): {where}: summary does not match the samples")
        if final < 3:
            sys.exit(f"crash_kill ({mode}): only {final} instances with a final status, expected at least 3")
        print(f"crash_kill ({mode}): file opens after SIGKILL, complete=0, {final} finished instances intact")


for mode in ("parallel", "serial"):
    path, nranks = kill_mid_run(mode)
    if nranks != 4:
        # Fewer means the kill hit a run that had not started all its ranks
        # (or the wrong processes): the test would not show what it claims.
        sys.exit(f"crash_kill ({mode}): {nranks} rank processes found under mpirun, expected 4")
    check(path, mode)
PY
