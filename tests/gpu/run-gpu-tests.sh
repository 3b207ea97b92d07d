#!/usr/bin/env bash
# Runs the GPU test set on a machine with a GPU, from .gpu-pack/ (see
# pack-for-device.sh), and writes a short report with the figures to
# ${OUT:-gpu-results}/gpu-report.txt. Exit 1 if any step failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-gpu-results}; mkdir -p "$out"
report=$out/gpu-report.txt
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export NCCL_NVLS_ENABLE=0
failed=0
step() {  # step NAME COMMAND...
  local name=$1; shift
  echo "=== $name" | tee -a "$report"
  if "$@" >> "$report" 2>&1; then echo "=== $name: ok" | tee -a "$report"
  else echo "=== $name: FAILED" | tee -a "$report"; failed=$((failed + 1)); fi
}
: > "$report"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$report" 2>&1
step "kernels: CUDA vs host, byte for byte" env FABSCOPE_REQUIRE_GPU=1 "$here/fabscope_gpu_tests"
step "benchmarks: kernels vs cudaMemcpyAsync, copy load vs plain loop" "$here/fabscope_gpu_bench"
cat > "$out/gpu.yaml" <<'YAML'
name: gpu-allreduce
description: NCCL all-reduce on GPU memory, one rank per GPU, every element verified
tests:
  - name: nccl-allreduce
    kind: allreduce
    transport: nccl
    memory: cuda
    sizes: [16KiB, 512KiB, 4MiB, 32MiB]
    iterations: 50
    warmup: 5
    timeout: 60s
YAML
step "NCCL all-reduce on one rank, verified" mpirun -np 1 "$here/fabscope" run --scenario "$out/gpu.yaml" \
  --output "$out/gpu-allreduce.h5" --overwrite --no-progress
cat > "$out/copy.yaml" <<'YAML'
name: gpu-copy-condition
description: point-to-point latency quiet and while two congestor ranks keep host-GPU copies running
tests:
  - name: probe
    kind: latency
    sizes: [8, 64KiB]
    iterations: 2000
    warmup: 100
    timeout: 60s
    conditions: [quiet, copy]
    roles: {canaries: 2}
    load_bytes: 64MiB
YAML
step "copy condition (host<->GPU copies) against a point-to-point test, 4 ranks" mpirun -np 4 "$here/fabscope" run \
  --scenario "$out/copy.yaml" --output "$out/gpu-copy.h5" --overwrite --no-progress
echo "gpu steps failed: $failed" | tee -a "$report"
[ $failed -eq 0 ]
