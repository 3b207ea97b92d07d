#!/usr/bin/env bash
# Fault drill `kill` across a 4-host emulated cluster: rank 1 (a worker)
# SIGKILLs itself while requests flow. The survivors must detect it within
# detect_within (over TCP: the UCX endpoint error of the socket reset), the
# client re-route its requests to the spare with none hung, and the
# documented launch (launch/fabscope-mpirun) must report success (exit 0)
# although mpirun itself ends with the victim's signal.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
source "$(dirname "${BASH_SOURCE[0]}")/lib/fault-drill.bash"

run_fault_drill ecfkill 198.18.47.0/24 "    timeout: 30s
    fault: kill"
# Over TCP a killed process resets its sockets: the client must learn of it
# from UCX's endpoint error, not later from a heartbeat or a missed reply.
check_fault_drill "transport error callback"
# The spare took the victim's place: its return to baseline (the victim's
# pre-fault share at its throughput and p99) is measured from the detection,
# and UCX over TCP would have reported the death at once on its own.
/usr/bin/python3 - "$result" <<'PY' || fail "the kill drill's return to baseline is wrong"
import sys, h5py
def text(v): return v.decode().rstrip("\0") if isinstance(v, bytes) else v
with h5py.File(sys.argv[1], "r") as f:
    a = {k: text(v) for k, v in f["/tests/0000"].attrs.items()}
    kinds = [text(k) for k in f["/tests/0000/events"]["kind"]]
assert a["carrier_rank"] == a["spare_rank"], (a["carrier_rank"], a["spare_rank"])
assert a["return_to_baseline"] == "recovered" and 0 <= a["baseline_ms"], (a["return_to_baseline"], a["fault_cycles"])
assert "baseline" in kinds, kinds
assert a["expected_detection_stack"] == "UCX over TCP" and a["expected_detection_s"] == 0, (a["expected_detection_s"], a["expected_detection_basis"])
print(f"kill: the spare back at the victim's baseline {a['baseline_ms']:.0f} ms after the detection; {a['fault_cycles']}")
PY
grep -q "fabscope-mpirun: mpirun ended with" "$scratch/run.log" \
  || note "(mpirun itself ended 0 this time)"
grep -q "^fabscope: result: exit code 0 (after a fault drill: 1 rank(s) lost on purpose" "$scratch/run.log" \
  || fail "rank 0 did not print its result line"

# The same launch must not turn a failure into success: with
# orte_abort_on_non_zero_status 0 mpirun itself ends 0 when every rank exits
# 2, so the wrapper must report rank 0's result line (here: a scenario error).
sed -i 's/timeout: 30s/timeout: 5s/' "$scratch/drill.yaml"
set +e
OMPI_MCA_rmaps_base_oversubscribe=1 timeout --kill-after=10 60 "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" --np 4 \
  --bin "$FABSCOPE_BIN" -- run --scenario "$scratch/drill.yaml" --output "$scratch/bad.h5" >"$scratch/bad.log" 2>&1
bad_exit=$?
set -e
((bad_exit == 2)) || { tail -20 "$scratch/bad.log" >&2; fail "a fault scenario with too short a timeout exited $bad_exit through launch/fabscope-mpirun (expected 2)"; }
note "PASS: kill drill detected in time, nothing hung, the spare back at baseline, complete file, exit 0; a bad drill scenario exits 2"
