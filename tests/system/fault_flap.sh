#!/usr/bin/env bash
# Fault drill `flap` on a 4-host emulated cluster: the victim's cable is pulled
# at 1 s for 1.5 s (the cluster's `link` knob as fault_command) and plugged back
# (restore_command). Survivors must detect the cut, the spare take the victim's
# share, and after the restore the victim must be heard again (rejoined), get
# its share back and serve it at its pre-fault throughput and p99 within
# recover_within (baseline); the timeline reads fault, detected, restored,
# rejoined, baseline. Then the same drill with the restore withheld: the
# victim never comes back, and the drill must fail with exit 1 and "not
# recovered".
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
source "$(dirname "${BASH_SOURCE[0]}")/lib/fault-drill.bash"
source "$(dirname "${BASH_SOURCE[0]}")/lib/fault-flap.bash"

prefix=${FABSCOPE_TEST_PREFIX:-ecflap}
up_emulated_cluster "$prefix" "${FABSCOPE_TEST_SUBNET:-198.18.71.0/24}" 4
knob=$FABSCOPE_SOURCE_DIR/launch/emulated-cluster
write_flap_scenario "$scratch/drill.yaml" "$prefix" "    requests: 7000
    down_for: 1500ms
    recover_within: 4s
    restore_command: $knob --prefix $prefix link {victim_host} up"
result=$scratch/drill.h5
launch_fault_drill "$scratch/drill.yaml" "$result" "$scratch/run.log"
check_fault_drill "heartbeat|missed reply"
check_flap_recovered 1
summary=$(PYTHONPATH=$FABSCOPE_SOURCE_DIR/analysis timeout 120 /usr/bin/python3 -m fabscope_analysis summary "$result" 2>&1) || { echo "$summary" >&2; fail "summary failed"; }
grep -q "flap: fabscope's drill detected in .* s (.*); UCX over TCP as configured here would take about" <<<"$summary" \
  || { echo "$summary" >&2; fail "the summary does not put the stack's expected detection next to the drill's"; }
grep -q "return to baseline: recovered" <<<"$summary" || fail "the summary does not show the return to baseline"

# Withheld restore: restore_command does nothing, the link stays down, the
# victim never returns: the drill must report `not recovered` and exit 1.
# Once the survivors have written the result the test ends the cut-off
# victim's processes (fabscope and its launcher daemon, by pid), as an
# operator would: behind its cut link the victim cannot hear rank 0 release
# it, and mpirun would wait for it; losing the daemon makes mpirun end.
sed -e "s|^    restore_command: .*|    restore_command: \"true\"|" "$scratch/drill.yaml" >"$scratch/withheld.yaml"
( launch_fault_drill "$scratch/withheld.yaml" "$scratch/withheld.h5" "$scratch/withheld.log"; echo "$drill_exit" >"$scratch/withheld.exit" ) &
withheld_pid=$!
on_exit "stop_pid $withheld_pid 'the withheld drill'"
wait_until 120 "the withheld drill's result line" grep -q "fabscope: result: exit code" "$scratch/withheld.log"
for pid in $(ip netns pids "${prefix}1"); do
  case $(cat "/proc/$pid/comm" 2>/dev/null) in fabscope | orted) kill -KILL "$pid" 2>/dev/null || true ;; esac
done
wait "$withheld_pid" || true
drill_exit=$(cat "$scratch/withheld.exit" 2>/dev/null || echo -1)
((drill_exit == 1)) || { grep -v "UCX  WARN" "$scratch/withheld.log" | tail -30 >&2; fail "a flap whose restore is withheld exited $drill_exit (expected 1)"; }
grep -q "not recovered" "$scratch/withheld.log" || fail "the failed drill's output does not say 'not recovered' (log: $scratch/withheld.log)"
/usr/bin/python3 - "$scratch/withheld.h5" <<'PY' || fail "the withheld drill's file is wrong"
import sys, h5py
def text(v): return v.decode().rstrip("\0") if isinstance(v, bytes) else v
with h5py.File(sys.argv[1], "r") as f:
    assert int(f.attrs["complete"]) == 1 and int(f.attrs["exit_code"]) == 1, (f.attrs["complete"], f.attrs["exit_code"])
    a = {k: text(v) for k, v in f["/tests/0000"].attrs.items()}
    assert a["status"] == "failed" and "not recovered" in a["error"], (a["status"], a["error"])
    assert a["return_to_baseline"] == "not recovered" and a["baseline_ms"] == -1, (a["return_to_baseline"], a["baseline_ms"])
    assert a["detected"] == 1, "the cut itself was not detected"
    kinds = [text(k) for k in f["/tests/0000/events"]["kind"]]
    assert "not_recovered" in kinds and "baseline" not in kinds, kinds
    print("withheld restore:", a["error"][:200])
PY
note "PASS: a 1.5 s flap was detected, the victim rejoined and was back at baseline within recover_within; with the restore withheld the drill failed 'not recovered'"
