#!/usr/bin/env bash
# Multi-GPU runs (one machine, 2+ GPUs), from .gpu-pack/ (pack-for-device.sh):
#  1. fabscope's NCCL all-reduce against the minimal reference loop
#     (nccl_allreduce_reference), interleaved ref / fabscope / ref on the same
#     GPUs, at the model-derived sizes and 1..256 MiB;
#  2. scenarios/gpu-nccl-llama70b.yaml (point-to-point, incast, all-reduce
#     and KV push over NCCL, quiet and under the copy condition) with one
#     measuring rank per GPU plus as many congestor ranks;
#  3. the GPU benchmarks (kernels, copy load, sample-recording overhead).
# Results go to ${OUT:-gpu-results}: report, JSON lines of the reference, the
# HDF5 files (ROUNDS=N alternates reference and fabscope N times; ONLY=allreduce
# stops after that part). Analyse them with tests/gpu/compare_allreduce.py and
# `python3 -m fabscope_analysis report`. Exit 1 if any step failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-gpu-results}; mkdir -p "$out"
report=$out/multi-gpu-report.txt
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on these machines
gpus=$(nvidia-smi -L | wc -l)
failed=0
step() {  # step NAME COMMAND...
  local name=$1; shift
  echo "=== $name" | tee -a "$report"
  local t0=$SECONDS
  if timeout "${STEP_TIMEOUT:-300}" "$@" >> "$report" 2>&1; then echo "=== $name: ok ($((SECONDS - t0)) s)" | tee -a "$report"
  else echo "=== $name: FAILED ($((SECONDS - t0)) s)" | tee -a "$report"; failed=$((failed + 1)); fi
}
: > "$report"
nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id --format=csv >> "$report" 2>&1
nvidia-smi topo -m >> "$report" 2>&1
[ "$gpus" -ge 2 ] || { echo "need 2 or more GPUs, found $gpus" | tee -a "$report"; exit 1; }
mpirun --version | head -1 >> "$report"

sizes=(16384 524288 1048576 4194304 16777216 33554432 67108864 268435456)
iters=${ALLREDUCE_ITERS:-200}
cat > "$out/allreduce.yaml" <<YAML
name: nccl-allreduce-vs-reference
description: fabscope's NCCL all-reduce at the sizes the reference loop runs
tests:
  - name: allreduce
    kind: allreduce
    transport: nccl
    memory: cuda
    sizes: [$(IFS=,; echo "${sizes[*]}")]
    iterations: $iters
    warmup: 20
    timeout: 120s
YAML
reference=(mpirun -np "$gpus" "$here/fabscope_nccl_allreduce_reference" "$iters" 20 "${sizes[@]}")
# ROUNDS alternations of reference and fabscope, then one more reference run:
# drift of the machine shows up as the spread of the reference runs.
rounds=${ROUNDS:-1}
for ((round = 1; round <= rounds; round++)); do
  step "reference all-reduce loop, run $round ($gpus ranks)" sh -c '"$@" > "$0"' "$out/reference-$round.jsonl" "${reference[@]}"
  step "fabscope all-reduce, run $round ($gpus ranks)" mpirun -np "$gpus" "$here/fabscope" run --scenario "$out/allreduce.yaml" \
    --output "$out/allreduce-$round.h5" --overwrite --no-progress
done
step "reference all-reduce loop, run $((rounds + 1))" sh -c '"$@" > "$0"' "$out/reference-$((rounds + 1)).jsonl" "${reference[@]}"
if [ "${ONLY:-}" = allreduce ]; then
  echo "multi-gpu steps failed: $failed (ONLY=allreduce)" | tee -a "$report"
  [ $failed -eq 0 ]; exit
fi

step "scenario gpu-nccl-llama70b ($((2 * gpus)) ranks: $gpus on NCCL, $gpus congestors)" \
  mpirun -np $((2 * gpus)) "$here/fabscope" run --scenario "$here/scenarios/gpu-nccl-llama70b.yaml" \
  --set "roles={canaries: $gpus, placement: packed}" --output "$out/gpu-nccl.h5" --overwrite --no-progress
for extra in "$here"/scenarios-extra/*.yaml; do
  [ -e "$extra" ] || continue
  name=$(basename "$extra" .yaml)
  step "scenario $name ($gpus ranks)" mpirun -np "$gpus" "$here/fabscope" run --scenario "$extra" \
    --output "$out/$name.h5" --overwrite --no-progress
done
step "GPU benchmarks (kernels, copy load, sample recording)" "$here/fabscope_gpu_bench"
echo "multi-gpu steps failed: $failed" | tee -a "$report"
[ $failed -eq 0 ]
