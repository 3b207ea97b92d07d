#!/usr/bin/env bash
# A UCX peer disappears in the middle of a long latency test (kill -9 of
# rank 1). The survivor must see a UCX error naming the lost peer within a
# bounded time of the kill (not the test's own deadline), and act on it at
# once: the run ends within a few seconds of the detection (not at the 30 s
# test deadline plus 30 s of grace), rank 0's result line says exit code 3,
# and the file says complete=0, exit_code=3, names rank 1 and its host, and
# keeps the interrupted test's samples with status `error`.
# Over TCP loopback the socket closes at once; over shared memory UCX only
# learns it through keepalive, set to 1 s here.
# Usage: ucx_peer_lost.sh [tcp-loopback|shm]   (default tcp-loopback)
set -euo pipefail

src=${FABSCOPE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${FABSCOPE_BIN:-$src/build/fabscope}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d /tmp/fabscope-ucx-lost.XXXXXX)
mpirun_pid=
cleanup() {
  if [[ -n $mpirun_pid ]] && kill -0 "$mpirun_pid" 2>/dev/null; then kill -9 "$mpirun_pid" 2>/dev/null || true; fi
  [[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"
}
trap cleanup EXIT

# Long enough that the kill always lands inside the timed loop: the kill waits
# for rank 0's first progress line with samples in it, 5 s into the test (a
# kill at a fixed delay after start-up landed in the start-up itself on a
# loaded machine, where the survivor waited in a control-plane collective
# instead of on UCX). 64 KiB messages: a round trip copies 128 KiB, at least
# about 6 us even on a fast machine, so 10 million of them last over a minute.
# With 8-byte messages CI's machine finished all 10 million (0.16 us one way)
# before the first progress line, and the kill found nothing to interrupt.
test_timeout_s=30
cat >"$work/long-latency.yaml" <<YAML
name: ucx-peer-lost
description: a latency test long enough to kill a rank in the middle of it
seed: 1
defaults:
  transport: ucx
  memory: host
  timeout: ${test_timeout_s}s
tests:
  - name: long-latency
    kind: latency
    pattern: pairs
    sizes: [64KiB]
    iterations: 10000000
    warmup: 10
YAML

monotonic() { /usr/bin/python3 -c 'import time; print(f"{time.monotonic():.3f}")'; }

# Pid of the process of `rank` among mpirun's descendants.
rank_pid() {
  local rank=$1 pid
  for pid in $(pgrep -f -- "$work/long-latency.yaml" || true); do
    [[ $pid == "$mpirun_pid" ]] && continue
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank"; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}

failures=0
max_end_s=6  # from the survivor's detection to the end of the job
run_case() {  # label max_detect_s env...
  local label=$1 max_detect=$2
  shift 2
  local log=$work/$label.log
  echo "== $label: kill rank 1 during a UCX latency test ($*)"
  env FABSCOPE_REPORT_EXIT=1 "$@" mpirun -np 2 --mca orte_abort_on_non_zero_status 0 -x UCX_TLS -x UCX_NET_DEVICES \
    -x UCX_KEEPALIVE_INTERVAL -x FABSCOPE_REPORT_EXIT \
    "$bin" run --scenario "$work/long-latency.yaml" --output "$work/$label.h5" --overwrite \
    >"$log" 2>&1 &
  mpirun_pid=$!
  # Let the test get into its timed loop.
  local victim= i
  for i in $(seq 1 100); do
    victim=$(rank_pid 1 || true)
    [[ -n $victim ]] && break
    sleep 0.1
  done
  [[ -n $victim ]] || { echo "FAIL: $label: rank 1 never started" >&2; cat "$log" >&2; failures=$((failures + 1)); return; }
  # Into the timed loop: rank 0's progress line counts samples (bounded wait).
  for i in $(seq 1 600); do
    grep -Eq "running [0-9]+s, rank 0: [0-9]+ of [0-9]+ samples" "$log" && break
    kill -0 "$mpirun_pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -Eq "running [0-9]+s, rank 0: [0-9]+ of [0-9]+ samples" "$log"; then
    echo "FAIL: $label: rank 0 never reported samples of the latency test; log:" >&2
    grep -v "UCX  WARN" "$log" | tail -20 >&2
    failures=$((failures + 1))
    return
  fi
  local killed_at
  killed_at=$(monotonic)
  kill -9 "$victim" || { echo "FAIL: $label: rank 1 (pid $victim) had already ended before the kill; log:" >&2; tail -20 "$log" >&2; failures=$((failures + 1)); return; }
  # Bounded wait for the survivor: the test deadline plus the runner's grace plus slack.
  local rc=0 waited=0 hung=
  while kill -0 "$mpirun_pid" 2>/dev/null && [[ $waited -lt $((test_timeout_s + 60)) ]]; do
    sleep 1
    waited=$((waited + 1))
  done
  if kill -0 "$mpirun_pid" 2>/dev/null; then
    hung=1
    local survivor
    survivor=$(rank_pid 0 || true)
    [[ -n $survivor ]] && kill -9 "$survivor" 2>/dev/null || true
    kill -9 "$mpirun_pid" 2>/dev/null || true
  fi
  wait "$mpirun_pid" || rc=$?
  local ended_at
  ended_at=$(monotonic)
  mpirun_pid=
  local line
  # The bound behind every wait: a survivor stuck inside UCX (seen over shared memory
  # on a loaded machine) is ended by its watchdog (exit 3, one line naming the wait)
  # at the test's deadline plus the watchdog's grace. Bounded, named: accepted.
  line=$(grep -m1 "watchdog: still waiting for" "$log" || true)
  if [[ -n $line ]]; then
    local after
    after=$(/usr/bin/python3 -c "print(f'{float(\"$ended_at\") - float(\"$killed_at\"):.1f}')")
    echo "$label: the survivor was stuck inside UCX; its watchdog ended it $after s after the kill: $line"
    if [[ -n $hung ]] || ! /usr/bin/python3 -c "import sys; sys.exit(0 if float('$after') <= $test_timeout_s + 10 + 10 else 1)"; then
      echo "FAIL: $label: the watchdog's end came $after s after the kill, later than the deadline + its grace + 10 s" >&2
      failures=$((failures + 1))
    fi
    return
  fi
  line=$(grep -m1 "UCX endpoint to rank 1 failed" "$log" || true)
  if [[ -z $line ]]; then
    echo "FAIL: $label: no UCX error naming rank 1 in the survivor's output (exit $rc); log:" >&2
    tail -20 "$log" >&2
    failures=$((failures + 1))
    return
  fi
  local noticed
  noticed=$(sed -n 's/.*at monotonic \([0-9.]*\) s.*/\1/p' <<<"$line")
  local delay
  delay=$(/usr/bin/python3 -c "print(f'{float(\"$noticed\") - float(\"$killed_at\"):.3f}')")
  echo "$label: survivor's endpoint error came $delay s after the kill (limit $max_detect s); mpirun exit $rc"
  if ! /usr/bin/python3 -c "import sys; d=float('$delay'); sys.exit(0 if -0.5 <= d <= $max_detect else 1)"; then
    echo "FAIL: $label: detection took $delay s, more than $max_detect s" >&2
    failures=$((failures + 1))
  fi
  if [[ -n $hung ]]; then
    echo "FAIL: $label: the UCX error surfaced, but the survivor still ran $waited s after the kill and was killed" >&2
    echo "      (it did not finish as a runtime failure; last lines of its output:)" >&2
    grep -v "UCX  WARN" "$log" | tail -5 >&2
    failures=$((failures + 1))
    return
  fi
  # mpirun's own status is the victim's signal here (orte_abort_on_non_zero_status 0);
  # fabscope's result is rank 0's result line.
  if ! grep -q "^fabscope: result: exit code 3$" "$log"; then
    echo "FAIL: $label: no result line 'exit code 3' (mpirun exit $rc); log:" >&2
    grep -v "UCX  WARN" "$log" | tail -20 >&2
    failures=$((failures + 1))
  fi
  local ended_after
  ended_after=$(/usr/bin/python3 -c "print(f'{float(\"$ended_at\") - float(\"$noticed\"):.1f}')")
  echo "$label: the run ended $ended_after s after the detection (limit $max_end_s s)"
  if ! /usr/bin/python3 -c "import sys; sys.exit(0 if float('$ended_after') <= $max_end_s else 1)"; then
    echo "FAIL: $label: the run ended $ended_after s after the survivor saw the loss: it waited for a deadline" >&2
    failures=$((failures + 1))
  fi
  if ! /usr/bin/python3 - "$work/$label.h5" <<'PY'
import sys, h5py
path = sys.argv[1]
with h5py.File(path, "r") as f:
    a = f.attrs
    problems = []
    if int(a["complete"]) != 0: problems.append(f"complete={a['complete']}, expected 0")
    if int(a["exit_code"]) != 3: problems.append(f"exit_code={a['exit_code']}, expected 3")
    error = str(a.get("error", ""))
    host = f["ranks"][1]["host"].decode()
    if "rank 1 (" + host + ")" not in error: problems.append(f"error does not name rank 1 ({host}): {error!r}")
    if str(a.get("lost_ranks", "")) != "1": problems.append(f"lost_ranks={a.get('lost_ranks')!r}, expected '1'")
    g = f["tests/0000"]
    if g.attrs["status"] != "error": problems.append(f"the interrupted test's status is {g.attrs['status']!r}")
    if len(g["samples"]) == 0: problems.append("the interrupted test kept no samples")
    for p in problems: print("FAIL: " + path + ": " + p, file=sys.stderr)
    sys.exit(1 if problems else 0)
PY
  then
    failures=$((failures + 1))
  fi
}

case ${1:-tcp-loopback} in
  tcp-loopback) run_case tcp-loopback 5 UCX_TLS=tcp,self UCX_NET_DEVICES=lo UCX_KEEPALIVE_INTERVAL=1s ;;
  shm) run_case shm 10 UCX_TLS=sm,self UCX_NET_DEVICES=all UCX_KEEPALIVE_INTERVAL=1s ;;
  *) echo "ucx_peer_lost.sh: unknown case $1" >&2; exit 2 ;;
esac
[[ $failures -eq 0 ]] || exit 1
echo "the survivor saw the lost UCX peer in bounded time in every case"
