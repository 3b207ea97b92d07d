#!/usr/bin/env bash
# The fault drill over NCCL on the GPUs of one machine, from
# .gpu-pack/ (pack-for-device.sh; device tool, kind nvidia-h200-x2, carry
# [".gpu-pack"]):  bash .gpu-pack/run-nccl-drill.sh
# One rank per GPU runs NCCL all-reduce steps (64 KiB, 1000/s); rank index 1
# is killed (SIGKILL), then in a second run stops (hang). Every survivor must
# notice (NCCL's asynchronous error, or a step unfinished for request_timeout)
# and abort its communicator within abort_within. Prints, per fault,
# fabscope's exit code, the detection (ms after the fault, path, per
# survivor), the abort times and the expected-detection figures next to
# them; the files go to ${OUT:-gpu-results}. Refuses with fewer than 2 GPUs:
# one GPU cannot hold two ranks of one NCCL communicator. Exit 1 if a drill
# did not pass (fabscope's exit code 0).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU ')
if [ "$gpus" -lt 2 ]; then
  echo "run-nccl-drill.sh: needs 2 or more GPUs on this machine (one NCCL rank per GPU; one GPU cannot hold two" \
       "ranks of one communicator); found $gpus" >&2
  exit 2
fi
out=${OUT:-gpu-results}; mkdir -p "$out"
report=$out/nccl-drill-report.txt
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on these machines
: > "$report"
nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id --format=csv >> "$report" 2>&1
failed=0
for fault in kill hang; do
  cat > "$out/nccl-drill-$fault.yaml" <<YAML
name: nccl-fault-drill-$fault
tests:
  - name: drill
    kind: fault
    transport: nccl
    memory: cuda
    fault: $fault
    victim: 1
    sizes: [65536]
    requests: 3000
    rate: 1000
    at: 1s
    request_timeout: 500ms
    detect_within: 2s
    abort_within: 5s
    timeout: 60s
YAML
  echo "=== drill over NCCL, fault: $fault, $gpus ranks" | tee -a "$report"
  t0=$SECONDS
  # Fault-tolerant launch as launch/fabscope-mpirun makes it (docs/launch.md):
  # the survivors go on after the victim dies; fabscope's own result line says how the run ended.
  timeout 120 mpirun -np "$gpus" --mca orte_abort_on_non_zero_status 0 -x FABSCOPE_REPORT_EXIT=1 -x LD_LIBRARY_PATH \
    -x NCCL_NVLS_ENABLE "$here/fabscope" run --scenario "$out/nccl-drill-$fault.yaml" \
    --output "$out/nccl-drill-$fault.h5" --overwrite --no-progress > "$out/nccl-drill-$fault.log" 2>&1
  mpirun_rc=$?
  code=$(sed -n 's/^fabscope: result: exit code \([0-9]*\).*/\1/p' "$out/nccl-drill-$fault.log" | tail -1)
  echo "mpirun ended with $mpirun_rc after $((SECONDS - t0)) s; fabscope's result: exit code ${code:-none}" | tee -a "$report"
  "$here/fabscope_read_attrs" --lines "$out/nccl-drill-$fault.h5" drill detected detection_ms detection_path \
    detection_max_ms detection_per_survivor abort_max_ms abort_per_survivor completed failed_requests hung \
    expected_detection_stack expected_detection_s expected_nccl_ib_s expected_nccl_ib_basis reroute 2>&1 | tee -a "$report"
  grep -E "detected|abort|fabscope: (rank|result)" "$out/nccl-drill-$fault.log" | head -20 >> "$report"
  [ "${code:-x}" = 0 ] || failed=$((failed + 1))
done
echo "nccl drills failed: $failed" | tee -a "$report"
[ $failed -eq 0 ]
