#!/usr/bin/env bash
# Fault drill `link-down` across a 4-host emulated cluster: at the fault
# moment the client runs the cluster's own knob (fault_command) that pulls
# rank 1's cable; the process stays alive and nothing resets its sockets, so
# no transport error comes (TCP retransmits for minutes), and every survivor,
# the client included, must notice through missed heartbeats within
# detect_within: the heartbeat deadline (600 ms after the last heartbeat heard,
# which came at most a heartbeat before the cable went down) comes before the
# client's reply timeout (2 heartbeat deadlines after a request left unanswered,
# so at least 1.2 s after the cable went down). restore_command plugs the cable
# back after the workload. The file must record both commands with their exit
# status.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
source "$(dirname "${BASH_SOURCE[0]}")/lib/fault-drill.bash"

knob=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/launch/emulated-cluster
run_fault_drill ecflink 198.18.48.0/24 "    timeout: 40s
    fault: link-down
    fault_command: $knob --prefix ecflink link {victim_host} down
    restore_command: $knob --prefix ecflink link {victim_host} up
    command_timeout: 5s"
check_fault_drill "heartbeat"
/usr/bin/python3 - "$result" <<'PY' || fail "a survivor detected the link-down otherwise than through heartbeats"
import re, sys, h5py
a = h5py.File(sys.argv[1], "r")["/tests/0000"].attrs
per = a["detection_per_survivor"]
per = per.decode() if isinstance(per, bytes) else per
paths = re.findall(r"rank \d+: [0-9.]+ ms via ([^;]+)", per)
assert len(paths) == 3 and set(paths) == {"heartbeat"}, per
print("every survivor detected the link-down through heartbeats:", per)
PY
/usr/bin/python3 - "$result" "$prefix" <<'PY' || fail "the fault commands are not recorded as expected"
import sys, h5py
t = h5py.File(sys.argv[1], "r")["/tests/0000"]
a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in t.attrs.items()}
# the host placeholder is filled quoted: one word whatever it holds
assert "link '" + sys.argv[2] + "1' down" in a["fault_command"], a["fault_command"]
assert a["fault_command_exit"] == 0 and a["fault_command_timed_out"] == 0, (a["fault_command_exit"], a["fault_command_output"])
assert a["restore_command_exit"] == 0, a["restore_command_output"]
assert a["fault_command_started_ns"] == a["fault_ns"]
kinds = [k.decode() for k in t["events"]["kind"]]
assert "fault_command" in kinds and "restore_command" in kinds, kinds
print(f"fault_command exit 0 after {a['fault_command_ms']:.0f} ms; restore_command exit 0")
PY
state=$(ip -n "${prefix}1" -o link show eth1)
[[ $state == *"state UP"* || $state == *",UP"* ]] || fail "restore_command did not bring ${prefix}1's link back: $state"

# A drill must be able to fail end to end: a link-down whose fault_command
# does nothing leaves the victim in service, nobody detects a loss, and the
# run must exit 1 ("never detected") through launch/fabscope-mpirun too, with
# the verdict in a complete file.
sed -e "s|^    fault_command: .*|    fault_command: true|" -e '/restore_command/d' "$scratch/drill.yaml" >"$scratch/no-fault.yaml"
launch_fault_drill "$scratch/no-fault.yaml" "$scratch/no-fault.h5" "$scratch/no-fault.log"
((drill_exit == 1)) || { grep -v "UCX  WARN" "$scratch/no-fault.log" | tail -30 >&2; fail "a link-down drill whose fault_command does nothing exited $drill_exit (expected 1)"; }
grep -q "never detected" "$scratch/no-fault.log" || fail "the failed drill's output does not say 'never detected' (log: $scratch/no-fault.log)"
/usr/bin/python3 - "$scratch/no-fault.h5" <<'PY' || fail "the failed drill's file is wrong"
import sys, h5py
def text(v): return v.decode().rstrip("\0") if isinstance(v, bytes) else v
with h5py.File(sys.argv[1], "r") as f:
    assert int(f.attrs["complete"]) == 1 and int(f.attrs["exit_code"]) == 1, (f.attrs["complete"], f.attrs["exit_code"])
    a = f["/tests/0000"].attrs
    assert text(a["status"]) == "failed" and "never detected" in text(a["error"]), (text(a["status"]), text(a["error"]))
    ev = f["/tests/0000/events"][()]
    timeline = "\n".join(f"  rank {r} {t} {text(k)} peer {p} {text(d)[:120]}"
                         for r, t, k, p, d in zip(ev["rank"], ev["t_ns"], ev["kind"], ev["peer"], ev["detail"])
                         if text(k) != "rerouted")
    assert a["survivors_detected"] == 0, f"{a['survivors_detected']} survivor(s) detected a loss:\n{timeline}"
    print("no-op fault_command:", text(a["error"])[:160])
PY

# A scenario's own commands run only with --allow-commands: without it
# the same launch is refused before anything runs (exit 2), naming the command and
# the flag, and the command never ran; a command given with --set needs no flag.
sed -e "s|^    fault_command: .*|    fault_command: touch $scratch/ran|" -e '/restore_command/d' "$scratch/drill.yaml" >"$scratch/untrusted.yaml"
set +e
timeout --kill-after=10 60 "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" --fabric emulated -N 1 --bin "$FABSCOPE_BIN" -- \
  run --scenario "$scratch/untrusted.yaml" --output "$scratch/untrusted.h5" --no-progress >"$scratch/untrusted.log" 2>&1
untrusted_exit=$?
set -e
((untrusted_exit == 2)) || { tail -20 "$scratch/untrusted.log" >&2; fail "a scenario with a command, launched without --allow-commands, exited $untrusted_exit (expected 2)"; }
grep -q "untrusted.yaml:[0-9]*:[0-9]*: .*would run the command fault_command: 'touch $scratch/ran'.*--allow-commands" "$scratch/untrusted.log" \
  || { cat "$scratch/untrusted.log" >&2; fail "the refusal does not name the file position, the command and --allow-commands"; }
[[ ! -e $scratch/ran ]] || fail "the refused scenario's command ran"
[[ ! -e $scratch/untrusted.h5 ]] || fail "the refused run wrote a result file"
listed=$("$FABSCOPE_BIN" list --scenario "$scratch/untrusted.yaml" --ranks 4)
grep -q "runs: fault_command: touch $scratch/ran" <<<"$listed" || { echo "$listed" >&2; fail "fabscope list does not show the command"; }
note "without --allow-commands the scenario's command is refused (exit 2) and listed by fabscope list"

# A link fault on a host that runs other drill ranks would cut them off too:
# 4 ranks on this one host must be refused at load as bad input (exit 2
# through the wrapper, the victim key's file:line:column) before the command runs.
sed -e "s|^    fault_command: .*|    fault_command: touch $scratch/cut|" -e '/restore_command/d' "$scratch/drill.yaml" >"$scratch/shared.yaml"
set +e
OMPI_MCA_rmaps_base_oversubscribe=1 UCX_TLS=tcp,self UCX_NET_DEVICES=lo timeout --kill-after=10 90 \
  "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" --np 4 --bin "$FABSCOPE_BIN" --env UCX_TLS=tcp,self --env UCX_NET_DEVICES=lo -- \
  run --scenario "$scratch/shared.yaml" --output "$scratch/shared.h5" --no-progress --allow-commands >"$scratch/shared.log" 2>&1
shared_exit=$?
set -e
((shared_exit == 2)) || { tail -20 "$scratch/shared.log" >&2; fail "a link-down drill with the victim's host shared exited $shared_exit (expected 2)"; }
[[ ! -e $scratch/cut ]] || fail "the fault command ran although the victim shares its host"
grep -q "shared.yaml:[0-9]*:[0-9]*: .*alone on its host" "$scratch/shared.log" \
  || { cat "$scratch/shared.log" >&2; fail "the refusal does not name the file position and say why (log: $scratch/shared.log)"; }
[[ ! -e $scratch/shared.h5 ]] || fail "the refused run wrote a result file"
note "PASS: link-down drill detected in time, nothing hung, commands recorded, link restored; a no-op fault fails with exit 1; a shared victim host is refused at load (exit 2)"
