# Helpers for the flap drills (tests/system/fault_flap*.sh): the scenario of a
# flap on the emulated cluster's `link` knob, and the checks of its return to
# baseline. Sourced after system-test.bash and fault-drill.bash.
# The prefix and subnet may be overridden (FABSCOPE_TEST_PREFIX, FABSCOPE_TEST_SUBNET)
# to keep a hand run apart from other runs on the machine.

# write_drill_scenario FILE KEYS: a 4-rank drill over UCX (client, victim 1,
# worker 2, spare 3) with fast heartbeats; KEYS (indented test keys) say the
# fault, its timing and the return to baseline.
write_drill_scenario() {
  local file=$1 keys=$2
  cat >"$file" <<YAML
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
    rate: 1000
$keys
YAML
}

# write_flap_scenario FILE PREFIX KEYS: that drill with the victim's link cut
# at 1 s (the emulated cluster's `link` knob) for down_for.
write_flap_scenario() {
  local file=$1 prefix=$2 keys=$3
  local knob=$FABSCOPE_SOURCE_DIR/launch/emulated-cluster
  write_drill_scenario "$file" "    timeout: 45s
    fault: flap
    fault_command: $knob --prefix $prefix link {victim_host} down
    command_timeout: 5s
$keys"
}

# check_flap_recovered FAULTS [EXPECTED]: every one of FAULTS faults was
# detected, restored, the victim rejoined and was back at baseline within
# recover_within, in that order on the timeline; the victim served requests
# after each rejoin. EXPECTED: what UCX over TCP would take on its own: "cut"
# (a cut link: the TCP retransmission budget) or "never" (a hang).
check_flap_recovered() {
  /usr/bin/python3 - "$result" "$1" "${2:-cut}" <<'PY' || fail "the return to baseline is wrong (see above)"
import math, sys, h5py
path, faults, expected_kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def text(v): return v.decode().rstrip("\0") if isinstance(v, bytes) else v
problems = []
with h5py.File(path, "r") as f:
    t = f["/tests/0000"]
    a = {k: text(v) for k, v in t.attrs.items()}
    if a["faults"] != faults: problems.append(f"faults {a['faults']}, expected {faults}")
    if a["return_to_baseline"] != "recovered": problems.append(f"return_to_baseline {a['return_to_baseline']}: {a['fault_cycles']}")
    if a["faults_recovered"] != faults: problems.append(f"{a['faults_recovered']} of {faults} faults back at baseline")
    if not 0 <= a["baseline_ms"] <= a["recover_within_ms"]:
        problems.append(f"baseline_ms {a['baseline_ms']} outside 0 .. recover_within {a['recover_within_ms']}")
    if a["carrier_rank"] != a["victim_rank"]: problems.append("the carrier is not the victim")
    if not a["victim_pre_fault_rps"] > 0 or not a["victim_pre_fault_p99_ms"] > 0: problems.append("no pre-fault baseline")
    # The stack's own figure sits next to the measured one.
    if a["expected_detection_stack"] != "UCX over TCP": problems.append(f"expected_detection_stack {a['expected_detection_stack']}")
    retries2 = int(open("/proc/sys/net/ipv4/tcp_retries2").read())
    if expected_kind == "never":
        if not math.isinf(a["expected_detection_s"]): problems.append(f"expected_detection_s {a['expected_detection_s']}, expected never (inf)")
    elif retries2 == 15 and not math.isclose(a["expected_detection_s"], 924.6):
        problems.append(f"expected_detection_s {a['expected_detection_s']} with tcp_retries2 15")
    if not a["expected_detection_s"] > a["detection_ms"] / 1e3: problems.append("the stack would be faster than the drill?")
    ev = t["events"][()]
    rows = [(int(r), int(tn), text(k), int(p), text(d)) for r, tn, k, p, d in
            zip(ev["rank"], ev["t_ns"], ev["kind"], ev["peer"], ev["detail"])]
    client = [(tn, k, d) for r, tn, k, p, d in rows if r == 0 and p == a["victim_rank"] and
              k in ("fault", "detected", "restored", "rejoined", "baseline")]
    # Each fault's own sequence, in clock order, before the next fault: fault,
    # detected, restored, rejoined, baseline (the baseline rows are added after
    # the stream, judged from the samples, but sorted into place by time). A
    # loaded machine may add a late detected/rejoined pair (every rank stalled
    # past the heartbeat deadline): tolerated after the baseline, and shown.
    faults_at = [tn for tn, k, _ in client if k == "fault"]
    if len(faults_at) != faults: problems.append(f"{len(faults_at)} fault rows, expected {faults}")
    rejoins = []
    for i, begin in enumerate(faults_at):
        end = faults_at[i + 1] if i + 1 < len(faults_at) else float("inf")
        want = ["fault", "detected", "restored", "rejoined", "baseline"]
        got = []
        for tn, k, _ in client:
            if begin <= tn < end and len(got) < len(want) and k == want[len(got)]:
                got.append(k)
                if k == "rejoined": rejoins.append(tn)
        if got != want: problems.append(f"fault {i + 1}: client timeline {got}, expected {want} in that order")
        extra = [k for tn, k, _ in client if begin <= tn < end].count("detected") - 1
        if extra > 0: print(f"note: fault {i + 1}: {extra} more detection(s) after the return (a stall on this machine?)")
    samples = t["samples"][()]
    for i, tn in enumerate(rejoins):
        # Samples are on the client's clock; events on the global one (offset <= 1 ms here).
        served = int(((samples["peer"] == a["victim_rank"]) & (samples["t_post_ns"] > tn)).sum())
        if served < 100: problems.append(f"after rejoin {i + 1} the victim served {served} requests")
    survivors_back = {r for r, tn, k, p, d in rows if k == "rejoined" and p == a["victim_rank"] and tn < faults_at[0] + 5e9}
    if survivors_back != {0, 2, 3}: problems.append(f"rejoined rows of the victim from ranks {sorted(survivors_back)}, expected 0, 2, 3")
    print(f"{a['fault']} x{faults}: {a['fault_cycles']}")
    print(f"expected: {a['expected_detection_stack']} {a['expected_detection_s']} s ({a['expected_detection_basis']}); "
          f"NCCL IB {a['expected_nccl_ib_s']:.1f} s")
    for r, tn, k, p, d in rows:
        if k in ("fault", "detected", "restored", "rejoined", "baseline", "not_recovered", "restore_command"):
            print(f"  rank {r} {tn} {k:13s} peer {p:2d} {d[:120]}")
for p in problems: print(f"{path}: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
}
