#!/usr/bin/env bash
# On the 2-GPU machine, from .gpu-pack/ (NCCL_TESTS_SRC=... pack-for-device.sh):
#  1. builds NVIDIA's nccl-tests from the carried source (.gpu-pack/nccl-tests,
#     `make MPI=0`, sm_90 only) and runs all_reduce_perf -b 16M -e 256M -f 2 -g 2
#     as published (calls back to back) and with -z 3 (wait after every call),
#     and alltoall_perf over the same sizes, for context;
#  2. fabscope's NCCL all-reduce at the same sizes, 20 iterations as nccl-tests'
#     default -n 20: its per-call and pipelined figures;
#  3. fabscope's MoE all-to-all over NCCL with the deepseek-v3 sizes;
#  4. the ratios (compare_pipelined.py), here if python3 has h5py and numpy,
#     else run it on the returned files:
#       python3 tests/gpu/compare_pipelined.py DIR/allreduce-nccl.h5 DIR/nccl-tests-allreduce.txt \
#         DIR/nccl-tests-allreduce-z3.txt --alltoall DIR/alltoall-nccl.h5
# Results in ${OUT:-gpu-results} (six files: the device tool returns at most eight).
# Exit 1 if a step failed (a target missed is reported, not a failure).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-gpu-results}; mkdir -p "$out"
report=$out/pipelined-report.txt
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on these machines
failed=0
step() {  # step NAME COMMAND...
  local name=$1; shift
  echo "=== $name" | tee -a "$report"
  local t0=$SECONDS
  if timeout "${STEP_TIMEOUT:-240}" "$@" >> "$report" 2>&1; then echo "=== $name: ok ($((SECONDS - t0)) s)" | tee -a "$report"
  else echo "=== $name: FAILED ($((SECONDS - t0)) s)" | tee -a "$report"; failed=$((failed + 1)); fi
}
: > "$report"
gpus=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=index,name,driver_version --format=csv >> "$report" 2>&1
[ "$gpus" -ge 2 ] || { echo "need 2 GPUs, found $gpus" | tee -a "$report"; exit 1; }
[ -d "$here/nccl-tests/src" ] || { echo "no nccl-tests source in $here/nccl-tests: pack with NCCL_TESTS_SRC=..." | tee -a "$report"; exit 1; }

build=/tmp/nccl-tests-build
rm -rf "$build"; cp -r "$here/nccl-tests" "$build"
step "build nccl-tests" make -C "$build" -j "$(nproc)" MPI=0 CUDA_HOME=/usr/local/cuda \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90"
bin=$build/build
step "nccl-tests all_reduce_perf (default: calls back to back)" \
  sh -c '"$@" > "$0"' "$out/nccl-tests-allreduce.txt" "$bin/all_reduce_perf" -b 16M -e 256M -f 2 -g 2
step "nccl-tests all_reduce_perf -z 3 (wait after every call)" \
  sh -c '"$@" > "$0"' "$out/nccl-tests-allreduce-z3.txt" "$bin/all_reduce_perf" -b 16M -e 256M -f 2 -g 2 -z 3
step "nccl-tests alltoall_perf (equal blocks, for context)" \
  sh -c '"$@" > "$0"' "$out/nccl-tests-alltoall.txt" "$bin/alltoall_perf" -b 1M -e 64M -f 4 -g 2
cat "$out"/nccl-tests-*.txt >> "$report" 2>/dev/null

cat > /tmp/pipelined-allreduce.yaml <<'YAML'
name: nccl-allreduce-pipelined
description: fabscope's NCCL all-reduce at nccl-tests' sizes, per call and pipelined
tests:
  - name: allreduce
    kind: allreduce
    transport: nccl
    memory: cuda
    sizes: [16MiB, 32MiB, 64MiB, 128MiB, 256MiB]
    iterations: 20
    warmup: 5
    timeout: 120s
YAML
cat > /tmp/alltoall-deepseek.yaml <<'YAML'
name: nccl-alltoall-deepseek-v3
description: MoE dispatch and combine over NCCL with DeepSeek-V3's per-token sizes
model: deepseek-v3
tests:
  - name: moe
    kind: alltoall
    transport: nccl
    memory: cuda
    sizes: {derive: moe-dispatch, tokens: [1, 32, 128, 512, 4096]}
    iterations: 50
    warmup: 5
    timeout: 120s
  - name: moe-skewed
    kind: alltoall
    transport: nccl
    memory: cuda
    routing: {popularity: zipf, exponent: 1.2}
    sizes: {derive: moe-dispatch, tokens: [128, 4096]}
    iterations: 50
    warmup: 5
    timeout: 120s
YAML
step "fabscope all-reduce over NCCL (2 ranks)" mpirun -np 2 "$here/fabscope" run \
  --scenario /tmp/pipelined-allreduce.yaml --output "$out/allreduce-nccl.h5" --overwrite --no-progress
step "fabscope alltoall over NCCL, deepseek-v3 sizes (2 ranks)" mpirun -np 2 "$here/fabscope" run \
  --scenario /tmp/alltoall-deepseek.yaml --output "$out/alltoall-nccl.h5" --overwrite --no-progress
if python3 -c "import h5py, numpy" 2>/dev/null; then
  # exit 1 of the comparison is a missed target: reported in its output, not a failed step
  step "ratios" sh -c 'python3 "$@"; [ $? -le 1 ]' compare "$here/compare_pipelined.py" "$out/allreduce-nccl.h5" \
    "$out/nccl-tests-allreduce.txt" "$out/nccl-tests-allreduce-z3.txt" --alltoall "$out/alltoall-nccl.h5"
  sed -n '/^=== ratios$/,$p' "$report"
else
  echo "python3 here has no h5py/numpy: run compare_pipelined.py on the returned files" | tee -a "$report"
fi
echo "pipelined steps failed: $failed" | tee -a "$report"
[ $failed -eq 0 ]
