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
check_fault_drill "transport error callback|heartbeat|missed reply|transport failure|post failed"
grep -q "fabscope-mpirun: mpirun ended with" "$scratch/run.log" \
  || note "(mpirun itself ended 0 this time)"
note "PASS: kill drill detected in time, nothing hung, complete file, exit 0"
