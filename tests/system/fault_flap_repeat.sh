#!/usr/bin/env bash
# Fault drill `flap` repeated: the victim's cable is pulled twice (at 1 s and
# 5 s, 1 s each) with the cluster's `link` knob; every cut must be detected and
# followed by the victim's return to baseline within recover_within.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
source "$(dirname "${BASH_SOURCE[0]}")/lib/fault-drill.bash"
source "$(dirname "${BASH_SOURCE[0]}")/lib/fault-flap.bash"

prefix=${FABSCOPE_TEST_PREFIX:-ecflapr}
up_emulated_cluster "$prefix" "${FABSCOPE_TEST_SUBNET:-198.18.72.0/24}" 4
knob=$FABSCOPE_SOURCE_DIR/launch/emulated-cluster
write_flap_scenario "$scratch/drill.yaml" "$prefix" "    requests: 10000
    down_for: 1s
    repeat: 2
    every: 4s
    recover_within: 3500ms
    restore_command: $knob --prefix $prefix link {victim_host} up"
result=$scratch/drill.h5
launch_fault_drill "$scratch/drill.yaml" "$result" "$scratch/run.log"
check_fault_drill "heartbeat|missed reply"
check_flap_recovered 2
note "PASS: two flaps, each detected and followed by the victim's return to baseline"
