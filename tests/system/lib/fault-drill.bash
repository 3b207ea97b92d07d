# Helpers for the fault drill system tests (tests/system/fault_*.sh): a drill
# on a 4-host emulated cluster of the test's own (client, two workers, spare;
# rank 1 the victim), launched the documented way (launch/fabscope-mpirun,
# which turns on the fault-tolerant launch for a fault scenario and reports
# fabscope's own result), and the checks every drill must pass.
# Sourced after system-test.bash.

# run_fault_drill PREFIX SUBNET FAULT_KEYS: brings the cluster up, writes the
# scenario with FAULT_KEYS (YAML lines of the test) and runs it, bounded.
# Sets $result (the file) and $drill_exit (the wrapper's exit code).
# FABSCOPE_TEST_PREFIX and FABSCOPE_TEST_SUBNET, when set, replace PREFIX and
# SUBNET (a hand run kept apart from other runs on the machine); $prefix is
# left set for the caller.
run_fault_drill() {
  prefix=${FABSCOPE_TEST_PREFIX:-$1}
  local subnet=${FABSCOPE_TEST_SUBNET:-$2} keys=${3//--prefix $1 /--prefix ${FABSCOPE_TEST_PREFIX:-$1} }
  up_emulated_cluster "$prefix" "$subnet" 4
  cat >"$scratch/drill.yaml" <<YAML
name: $system_test_name
seed: 1
tests:
  - name: drill
    kind: fault
    transport: ucx
    memory: host
    sizes: [64]
    victim: 1
    at: 1s
    detect_within: 3s
    heartbeat: 100ms
    heartbeat_deadline: 600ms
    requests: 2000
    rate: 1000
$keys
YAML
  result=$scratch/drill.h5
  launch_fault_drill "$scratch/drill.yaml" "$result" "$scratch/run.log"
}

# launch_fault_drill SCENARIO RESULT LOG: runs a drill scenario on the cluster
# that is up, the documented way, bounded. Sets $drill_exit.
launch_fault_drill() {
  local scenario=$1 output=$2 log=$3
  note "drill: $(grep -E '^ *(fault|fault_command):' "$scenario" | paste -sd' ')"
  local started=$SECONDS
  set +e
  timeout --kill-after=10 150 "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" --fabric emulated -N 1 --bin "$FABSCOPE_BIN" -- \
    run --scenario "$scenario" --output "$output" --no-progress --allow-commands >"$log" 2>&1
  drill_exit=$?
  set -e
  note "the launch took $((SECONDS - started)) s and exited $drill_exit"
  if ((drill_exit == 124 || drill_exit == 137)) && ! grep -q "fabscope-mpirun: mpirun ended" "$log"; then
    grep -v "UCX  WARN" "$log" | tail -30 >&2
    fail "the drill did not end within 150 s"
  fi
}

# check_fault_drill MECHANISMS: the file is complete with exit_code 0, the
# drill passed, every survivor detected the victim within detect_within, the
# client through one of MECHANISMS (|-separated detection_mechanism values),
# no request hung or failed, the victim's requests in flight were re-routed (none may be), throughput
# recovered (a "recovered" event and a finite recovered_ms), and the timeline
# reads fault -> detected -> rerouted -> recovered in time order. Prints the
# timeline.
check_fault_drill() {
  local mechanisms=$1
  if ((drill_exit != 0)); then
    grep -v "UCX  WARN" "$scratch/run.log" | tail -40 >&2
    # The drill's judgement (heartbeats, detection and recovery within their times) needs
    # CPUs: a file that records a busy machine cannot tell a slow machine from a slow fabric.
    cannot_tell_if_busy "the drill's end is right" "$result"
    fail "the drill exited $drill_exit through launch/fabscope-mpirun (expected 0)"
  fi
  grep -q "fabscope-mpirun: $(basename "$scratch/drill.yaml") has a fault drill\|fabscope-mpirun: .*has a fault drill: fault-tolerant launch" "$scratch/run.log" \
    || fail "launch/fabscope-mpirun did not switch to a fault-tolerant launch for the fault scenario"
  /usr/bin/python3 - "$result" "$mechanisms" <<'PY' || fail "the drill's result file is wrong (see above)"
import sys, h5py
path, mechanisms = sys.argv[1], sys.argv[2].split("|")
def text(v):
    return v.decode().rstrip("\0") if isinstance(v, bytes) else v
problems = []
with h5py.File(path, "r") as f:
    if int(f.attrs.get("complete", 0)) != 1: problems.append("complete != 1")
    if int(f.attrs.get("exit_code", -1)) != 0: problems.append(f"exit_code {f.attrs.get('exit_code')}")
    t = f["/tests/0000"]
    a = {k: text(v) for k, v in t.attrs.items()}
    if a["status"] != "passed": problems.append(f"status {a['status']}: {a.get('error')}")
    if a["detected"] != 1: problems.append("the client never detected the loss")
    if not 0 <= a["detection_ms"] <= a["detect_within_ms"]:
        problems.append(f"client detection after {a['detection_ms']} ms (deadline {a['detect_within_ms']} ms)")
    if a["detection_mechanism"] not in mechanisms:
        problems.append(f"client detection through {a['detection_mechanism']!r}, expected one of {mechanisms}")
    if a["survivors_detected"] != a["survivors"] or a["survivors"] != 3:
        problems.append(f"{a['survivors_detected']} of {a['survivors']} survivors detected it: {a['detection_per_survivor']}")
    if not 0 <= a["detection_max_ms"] <= a["detect_within_ms"]:
        problems.append(f"slowest survivor after {a['detection_max_ms']} ms")
    if a["hung"] != 0: problems.append(f"{a['hung']} requests hung")
    if a["failed_requests"] != 0: problems.append(f"{a['failed_requests']} requests failed")
    if a["completed"] != a["requests"]: problems.append(f"{a['completed']} of {a['requests']} requests completed")
    # Re-routes happen only to requests in flight to the victim when it was lost; on a
    # loaded machine the client may post none to it between the fault and the
    # detection (then every request still completes, none hangs: checked here).
    if a["rerouted"] < 1:
        print("note: no request was in flight to the victim when it was lost: none re-routed")
    if not 0 <= a["recovered_ms"] < float("inf"):
        problems.append(f"recovered_ms {a['recovered_ms']}: throughput never came back")
    samples = t["samples"][()]
    if len(samples) != a["completed"]: problems.append("samples != completed requests")
    # The spare took over: it served requests (re-routed ones, and those sent
    # to it directly once the victim's share moved to it).
    served_by_spare = int((samples["peer"] == a["spare_rank"]).sum())
    if served_by_spare < 1: problems.append("the spare served no request")
    ev = t["events"][()]
    kinds = [text(k) for k in ev["kind"]]
    times = list(ev["t_ns"])
    if times != sorted(times): problems.append("events not in time order")
    for need in ("fault", "detected", "recovered", "summary") + (("rerouted",) if a["rerouted"] else ()):
        if need not in kinds: problems.append(f"no '{need}' event")
    # Detection and the first re-route may come in either order (a request to the
    # victim can fail in the client just before the endpoint's error is logged);
    # both must follow the fault and precede the recovery.
    # The fault's time is the victim's plan mapped through the clock sync, so an event on
    # the client may precede it by up to both ranks' clock uncertainty (/ranks).
    unc = {int(r): int(u) for r, u in zip(f["ranks"]["rank"], f["ranks"]["clock_uncertainty_ns"])}
    slack = unc.get(a["victim_rank"], 0) + unc.get(0, 0)
    first = {k: times[kinds.index(k)] for k in ("fault", "detected", "rerouted", "recovered") if k in kinds}
    if len(first) == 4 and not (first["fault"] - slack <= min(first["detected"], first["rerouted"])
                                and max(first["detected"], first["rerouted"]) <= first["recovered"]):
        problems.append("the timeline is not fault -> detected and rerouted -> recovered "
                        f"(clock slack {slack} ns: victim's and client's clock_uncertainty_ns)")
    detectors = {int(r) for r, k, p in zip(ev["rank"], kinds, ev["peer"]) if k == "detected" and int(p) == a["victim_rank"]}
    if len(detectors) != 3: problems.append(f"detected rows of the victim from ranks {sorted(detectors)}, expected 3 survivors")
    print(f"{a['fault']}: client detected after {a['detection_ms']:.1f} ms via {a['detection_mechanism']}; "
          f"per survivor: {a['detection_per_survivor']}; {a['rerouted']} re-routed, {a['hung']} hung, "
          f"{served_by_spare} served by the spare, recovered after {a['recovered_ms']:.0f} ms")
    shown_reroutes = 0
    for r, tns, k, p, d in zip(ev["rank"], ev["t_ns"], kinds, ev["peer"], ev["detail"]):
        # the first and last re-routes are enough to place them in the timeline
        if k == "rerouted":
            shown_reroutes += 1
            if shown_reroutes > 1 and shown_reroutes != kinds.count("rerouted"): continue
        print(f"  rank {r} {tns} {k:15s} peer {p:2d} {text(d)[:110]}")
for p in problems: print(f"{path}: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
}
