#!/usr/bin/env bash
# Fault drill `hang` across a 4-host emulated cluster: rank 1 stays alive and
# connected but stops answering and stops making progress. No transport
# reports that; the survivors must catch it through missed heartbeats within
# detect_within, with no request hung.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
source "$(dirname "${BASH_SOURCE[0]}")/lib/fault-drill.bash"

run_fault_drill ecfhang 198.18.49.0/24 "    timeout: 30s
    fault: hang
    request_timeout: 2s"
check_fault_drill "heartbeat"
note "PASS: hang drill caught by heartbeats in time, nothing hung, complete file, exit 0"
