# A rank stops (SIGSTOP) once a test has ended, where no outside signal can
# hit reliably, so the rank stops itself (--self-test stop=1:POINT):
#   after-test: after the ranks agreed on the test's status, before its samples
#     are gathered (over UCX on shared memory): rank 0 waits in that gather while
#     rank 2 goes on to the run's closing steps and waits there;
#   closing: before the run's closing steps (over MPI): every other rank waits
#     in them;
#   header: once the result file is open, before its header is written (over
#     MPI): the others wait in the header's steps. Before, they ended the job
#     there with no loss round: a header cut short, exit_code=-1, no name.
# Either way the others must name rank 1 and its host within the test's
# deadline + control_grace (closing: control_grace after the stop; a step of the
# result file outside a test waited a fixed 60 s before) + the loss round, and
# rank 0 must record the end: complete=0, exit_code=3, lost_ranks=1, the root
# `error` naming rank 1, the finished test (closing) intact. Before, a rank that
# had reached the closing steps met rank 0's loss round there with no loss
# handling, ended the job at once, and rank 0 died before naming anyone
# (exit_code=-1, no error).
# ctest-parts: after-test closing header
source "$(dirname "$0")/lib.bash"
point=${1:?usage: stopped_after_test.sh after-test|closing|header}
case $point in
  after-test) transport=ucx ;;
  closing|header) transport=mpi ;;
  *) echo "unknown part '$point' (after-test, closing or header)" >&2; exit 2 ;;
esac
cat > "$scratch/s.yaml" <<YAML
name: stopped-after-test
description: a short bandwidth test after which rank 1 stops itself
seed: 5
# Shortened from the default 30 s: what is tested is the end once it has passed.
control_grace: 2s
defaults: {transport: $transport, memory: host, warmup: 1, timeout: 6s}
tests:
  - {name: bw, kind: bandwidth, pattern: pairs, sizes: [64KiB], window: 2, iterations: 20}
YAML
PYTHONPATH="$FABSCOPE_SOURCE_DIR/tests/mpi" /usr/bin/python3 - "$FABSCOPE_BIN" "$scratch" "$point" <<'PY' || exit $?
import os, re, signal, socket, subprocess, sys, time
import h5py
import rank_processes

binary, scratch, point = sys.argv[1:4]
DEADLINE_S, CONTROL_GRACE_S = 6, 2  # the scenario's timeout and control_grace
LOSS_ROUND_S = 5 + 2  # runtime/Deadlines.hpp lossAnswerSeconds + lossAckSeconds
SLACK_S = 8  # start-up, the launcher ending the job, a busy 2-core machine
yaml, out, log_path = (os.path.join(scratch, n) for n in ("s.yaml", "s.h5", "s.log"))
env = dict(os.environ, FABSCOPE_REPORT_EXIT="1", UCX_TLS="sm,self", UCX_NET_DEVICES="all")
bound = DEADLINE_S + CONTROL_GRACE_S + LOSS_ROUND_S + SLACK_S
if point in ("closing", "header"):
    bound = CONTROL_GRACE_S + LOSS_ROUND_S + SLACK_S  # from the stop: no test is running
with open(log_path, "w") as log:
    start = time.monotonic()
    job = subprocess.Popen(["mpirun", "-np", "3", "--mca", "orte_abort_on_non_zero_status", "0", "-x", "UCX_TLS", "-x",
                            "UCX_NET_DEVICES", "-x", "FABSCOPE_REPORT_EXIT", binary, "run", "--scenario", yaml,
                            "--output", out, "--no-progress", "--self-test", f"stop=1:{point}"],
                           stdout=log, stderr=subprocess.STDOUT, env=env)
    # The moment rank 1 stops itself; the bound runs from there.
    stopped = None
    while job.poll() is None and time.monotonic() - start < 120:
        pid = rank_processes.rank_pid(yaml, 1, job.pid)
        if pid and stopped is None:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "T":
                        stopped = time.monotonic()
                        break
            except OSError:
                pass
        time.sleep(0.05)
    if stopped is None:
        job.kill()
        sys.exit(f"FAIL: rank 1 never stopped itself (the run ended with {job.poll()})")
    try:
        rc = job.wait(timeout=bound + 20)
    except subprocess.TimeoutExpired:
        rc = None
        job.kill()
    took = time.monotonic() - stopped
victim = rank_processes.rank_pid(yaml, 1, job.pid)
if victim:
    os.kill(victim, signal.SIGKILL)
if rc is None:
    print(open(log_path, errors="replace").read()[-3000:], file=sys.stderr)
    sys.exit(f"FAIL: the job did not end within {bound + 20} s of rank 1's stop")
failures = []
text = open(log_path, errors="replace").read()
with h5py.File(out, "r") as f:
    # Stopped before /ranks was written: every rank of this job runs on this machine.
    host = f["ranks"][1]["host"].decode() if point != "header" else socket.gethostname()
    a = f.attrs
    error = str(a.get("error", ""))
    if int(a["exit_code"]) != 3 or int(a["complete"]) != 0 or str(a.get("lost_ranks", "")) != "1":
        failures.append(f"file: exit_code={a['exit_code']} complete={a['complete']} lost_ranks={a.get('lost_ranks')!r}, "
                        "expected 3, 0, 1")
    if f"rank 1 ({host})" not in error:
        failures.append(f"the file's error does not name rank 1 ({host}): {error!r}")
    if point == "closing":
        status = f["tests/0000"].attrs.get("status") if "tests/0000" in f else None
        if status != "passed" or len(f["tests/0000/samples"]) == 0:
            failures.append(f"the finished test is not intact in the file (status {status!r})")
print(f"{point}: the run ended {took:.1f} s after rank 1 stopped itself (exit {rc}, bound {bound} s)")
if not any(l.startswith("fabscope:") and "rank 0: runtime failure" in l and f"rank 1 ({host})" in l
           for l in text.splitlines()):
    failures.append(f"rank 0 did not print a line naming rank 1 ({host})")
if took > bound:
    failures.append(f"ending took {took:.1f} s after the stop, more than the bound {bound} s")
for f in failures:
    print("FAIL: " + f, file=sys.stderr)
if failures:
    print("\n".join(l for l in text.splitlines() if "UCX  WARN" not in l)[-3000:], file=sys.stderr)
sys.exit(1 if failures else 0)
PY
echo "stopped_after_test $point: ok"
