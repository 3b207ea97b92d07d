#!/usr/bin/env bash
# On a machine with ONE GPU, from .gpu-pack/ (NCCL_TESTS_SRC=... pack-for-device.sh):
#  1. builds NVIDIA's nccl-tests from the carried source and records all_reduce_perf and
#     alltoall_perf on one GPU, as text and as JSON (-J), for the reference kind's parser
#     tests (tests/data/reference/): real outputs of this nccl-tests version, not invented;
#     (fabscope's own all-to-all needs two ranks, hence two GPUs: run-pipelined-vs-nccl-tests.sh.)
# Results in ${OUT:-gpu-results}: one archive, record.tar.gz, and record-report.txt.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-gpu-results}; mkdir -p "$out"
rec=/tmp/recorded; rm -rf "$rec"; mkdir -p "$rec"
report=$out/record-report.txt
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0
failed=0
step() {  # step NAME COMMAND...
  local name=$1; shift
  echo "=== $name" | tee -a "$report"
  local t0=$SECONDS
  if timeout "${STEP_TIMEOUT:-180}" "$@" >> "$report" 2>&1; then echo "=== $name: ok ($((SECONDS - t0)) s)" | tee -a "$report"
  else echo "=== $name: FAILED ($((SECONDS - t0)) s)" | tee -a "$report"; failed=$((failed + 1)); fi
}
: > "$report"
nvidia-smi --query-gpu=index,name,driver_version --format=csv >> "$report" 2>&1
[ -d "$here/nccl-tests/src" ] || { echo "no nccl-tests source: pack with NCCL_TESTS_SRC=..." | tee -a "$report"; exit 1; }
build=/tmp/nccl-tests-build
rm -rf "$build"; cp -r "$here/nccl-tests" "$build"
step "build nccl-tests" make -C "$build" -j "$(nproc)" MPI=0 CUDA_HOME=/usr/local/cuda \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90"
bin=$build/build
for t in all_reduce alltoall; do
  step "nccl-tests ${t}_perf, one GPU, text and JSON" sh -c '"$@" > "$0"' "$rec/${t}_perf-g1.txt" \
    "$bin/${t}_perf" -b 8 -e 64M -f 4 -g 1 -J "$rec/${t}_perf-g1.json"
done
(cd /tmp && tar czf "$out/record.tar.gz" recorded)
echo "record steps failed: $failed" | tee -a "$report"
[ $failed -eq 0 ]
