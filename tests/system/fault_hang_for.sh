#!/usr/bin/env bash
# Fault drill `hang` with `hang_for` on a 4-host emulated cluster: the victim
# stops answering at 1 s for 1.5 s, alive and connected, then goes back to
# work. Survivors must detect the silence (heartbeats), the spare take the
# victim's share, and once the hang is over the victim must be heard again
# (rejoined), get its share back and serve it at its pre-fault throughput and
# p99 within recover_within (baseline). UCX over TCP on its own would never
# report a hang (the hung process's kernel still acknowledges): recorded.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
source "$(dirname "${BASH_SOURCE[0]}")/lib/fault-drill.bash"
source "$(dirname "${BASH_SOURCE[0]}")/lib/fault-flap.bash"

prefix=${FABSCOPE_TEST_PREFIX:-ecfhangf}
up_emulated_cluster "$prefix" "${FABSCOPE_TEST_SUBNET:-198.18.73.0/24}" 4
write_drill_scenario "$scratch/drill.yaml" "    requests: 6500
    timeout: 40s
    fault: hang
    hang_for: 1500ms
    recover_within: 4s"
result=$scratch/drill.h5
launch_fault_drill "$scratch/drill.yaml" "$result" "$scratch/run.log"
check_fault_drill "heartbeat|missed reply"
check_flap_recovered 1 never
note "PASS: a 1.5 s hang was detected, the victim rejoined after it and was back at baseline within recover_within"
