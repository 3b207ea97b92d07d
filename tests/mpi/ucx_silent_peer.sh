# A UCX peer stops answering (SIGSTOP) in the middle of a 4 MiB bandwidth test
# over shared memory: its process lives on, so UCX reports nothing (no endpoint
# error, no socket reset) and only the deadline can end the sender's transfer
# wait. That wait must end at the test's deadline, not later than the
# watchdog's grace after it, with an error that names the silent peer's rank
# and host; the run must then end (exit 3) within the deadline + the control
# grace + the loss round, with rank 0's line naming rank 1 and its host, and
# the file must say complete=0, exit_code=3, lost_ranks=1.
source "$(dirname "$0")/lib.bash"
cat > "$scratch/silent.yaml" <<'YAML'
name: ucx-silent-peer
description: a 4 MiB bandwidth test over UCX long enough to stop its receiver in the middle of it
seed: 5
# Shortened from the default 30 s: what is tested is the end once it has passed.
control_grace: 4s
defaults: {transport: ucx, memory: host, warmup: 2, timeout: 10s}
tests:
  - {name: bw, kind: bandwidth, pattern: pairs, sizes: [4MiB], window: 4, iterations: 1000000}
YAML
PYTHONPATH="$FABSCOPE_SOURCE_DIR/tests/mpi" /usr/bin/python3 - "$FABSCOPE_BIN" "$scratch" <<'PY' || exit $?
import os, re, signal, subprocess, sys, time
import h5py
import rank_processes

binary, scratch = sys.argv[1], sys.argv[2]
DEADLINE_S, CONTROL_GRACE_S = 10, 4  # the scenario's timeout and control_grace
WATCHDOG_GRACE_S = 10  # runtime/Watchdog.hpp graceSeconds: the most a wait may overrun its deadline
LOSS_ROUND_S = 5 + 2  # runtime/Deadlines.hpp lossAnswerSeconds + lossAckSeconds
yaml, out, log_path = (os.path.join(scratch, n) for n in ("silent.yaml", "silent.h5", "silent.log"))
env = dict(os.environ, FABSCOPE_REPORT_EXIT="1", UCX_TLS="sm,self", UCX_NET_DEVICES="all")
with open(log_path, "w") as log:
    job = subprocess.Popen(["mpirun", "-np", "2", "--mca", "orte_abort_on_non_zero_status", "0", "-x", "UCX_TLS", "-x",
                            "UCX_NET_DEVICES", "-x", "FABSCOPE_REPORT_EXIT", binary, "run", "--scenario", yaml,
                            "--output", out], stdout=log, stderr=subprocess.STDOUT, env=env)
    start = time.monotonic()
    victim = None
    while victim is None and time.monotonic() - start < 30:
        victim = rank_processes.rank_pid(yaml, 1, job.pid)
        time.sleep(0.1)
    if victim is None:
        job.kill()
        sys.exit("FAIL: rank 1 never started")
    # Inside the test: once rank 0 says how it is getting on (5 s in; on a busy machine it may not
    # have timed a 4 MiB window yet).
    progress = re.compile(r"running [0-9]+s, rank 0: ")
    while time.monotonic() - start < 120 and job.poll() is None:
        with open(log_path, errors="replace") as seen:
            if progress.search(seen.read()):
                break
        time.sleep(0.1)
    if job.poll() is not None:
        sys.exit(f"FAIL: the run ended (exit {job.returncode}) before rank 1 was stopped")
    os.kill(victim, signal.SIGSTOP)
    stopped = time.monotonic()
    bound = DEADLINE_S + CONTROL_GRACE_S + LOSS_ROUND_S + WATCHDOG_GRACE_S
    try:
        rc = job.wait(timeout=bound + 30)
    except subprocess.TimeoutExpired:
        job.kill()
        os.kill(victim, signal.SIGKILL)
        sys.exit("FAIL: the job hung with rank 1 stopped")
    took = time.monotonic() - stopped
try:
    os.kill(victim, signal.SIGKILL)
except ProcessLookupError:
    pass
gone_by = time.monotonic() + 20
while rank_processes.rank_pid(yaml, 1, job.pid) and time.monotonic() < gone_by:
    time.sleep(0.2)
text = open(log_path, errors="replace").read()
failures = []
with h5py.File(out, "r") as f:
    host = f["ranks"][1]["host"].decode()
    a = f.attrs
    if int(a["exit_code"]) != 3 or int(a["complete"]) != 0 or str(a.get("lost_ranks", "")) != "1":
        failures.append(f"file: exit_code={a['exit_code']} complete={a['complete']} lost_ranks={a.get('lost_ranks')!r}, "
                        "expected 3, 0, 1")
# Rank 0's own wait on its silent receiver, as rank 0's closing line quotes it.
wait = re.search(r"deadline exceeded while waiting for a UCX transfer to or from a peer rank"
                 r"(?P<peer> on rank [0-9]+ \([^)]*\))? \((?P<late>[0-9]+) ms past the deadline\)", text)
print(f"the run ended {took:.1f} s after rank 1 stopped (exit {rc}); rank 0's wait: {wait and wait.group(0)!r}")
if not wait:
    failures.append("no rank said its UCX transfer wait missed its deadline")
else:
    if wait.group("peer") != f" on rank 1 ({host})":
        failures.append(f"the UCX wait's error does not name rank 1 ({host}): {wait.group(0)!r}")
    if int(wait.group("late")) > WATCHDOG_GRACE_S * 1000:
        failures.append(f"the UCX wait ended {wait.group('late')} ms past its deadline, more than the watchdog's grace")
if not any(l.startswith("fabscope:") and "rank 0: runtime failure" in l and f"rank 1 ({host})" in l
           for l in text.splitlines()):
    failures.append(f"rank 0 did not print a line naming rank 1 ({host})")
if took > bound:
    failures.append(f"ending took {took:.1f} s after the stop, more than the deadline + grace bound {bound} s")
for f in failures:
    print("FAIL: " + f, file=sys.stderr)
if failures:
    print("\n".join(l for l in text.splitlines() if "UCX  WARN" not in l)[-3000:], file=sys.stderr)
sys.exit(1 if failures else 0)
PY
echo "ucx_silent_peer: ok"
