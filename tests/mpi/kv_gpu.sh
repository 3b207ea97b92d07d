#!/bin/bash
# kvpush with GPU memory on 2 ranks sharing one GPU: memory cuda (device
# pools, GPU gather/scatter/verify, pinned staging, copy time apart) and
# memory cuda-host (pinned pools), every request verified, and a corrupted
# byte caught by the GPU verifier in any request (warm-up included); with 2
# GPUs and the NCCL transport, every strategy straight from and into device
# memory over NCCL as well. Skips (77)
# without a CUDA build or a GPU; the NCCL part skips (77) without 2 GPUs.
# ctest-parts: shared-gpu nccl-direct
source "$(dirname "$0")/lib.bash"
config=${FABSCOPE_BUILD_DIR:-$(dirname "$FABSCOPE_BIN")}/generated/fabscope/BuildConfig.hpp
if [ ! -r "$config" ]; then
  echo "kv_gpu: FAIL: $config is missing: cannot tell what this build has (set FABSCOPE_BUILD_DIR)" >&2
  exit 1
fi
if ! grep -q "FABSCOPE_HAVE_CUDA 1" "$config"; then
  echo "kv_gpu: SKIP: not a CUDA build ($config)" >&2
  exit 77
fi
if ! nvidia-smi -L 2>/dev/null | grep -q "^GPU "; then
  echo "kv_gpu: SKIP: no GPU visible (nvidia-smi -L)" >&2
  exit 77
fi
# The GPU machine may lack h5py: then the exit codes are checked here and the
# files are left in $FABSCOPE_TEST_OUT (if set) for kv_check.py elsewhere.
kv_check() {
  if /usr/bin/python3 -c "import h5py" 2>/dev/null; then
    /usr/bin/python3 "$FABSCOPE_SOURCE_DIR/tests/mpi/kv_check.py" "$@"
  else
    echo "kv_gpu: no h5py here; $1 checked by exit code only" >&2
    if [ -n "${FABSCOPE_TEST_OUT:-}" ]; then cp "$1" "$FABSCOPE_TEST_OUT/"; fi
  fi
}

if part_wanted shared-gpu; then
cat > "$scratch/gpu.yaml" <<'YAML'
name: kv-gpu
seed: 9
model: llama3-70b
parallel: {tp: 8}
defaults: {transport: mpi, timeout: 60s}
tests:
  - {name: gpu-staged, kind: kvpush, strategy: staged, memory: cuda, prefill_ranks: 1, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [2048, 8192]}, iterations: 10,
     loop: {mode: closed, in_flight: 2}}
  - {name: pinned-staged, kind: kvpush, strategy: staged, memory: cuda-host, prefill_ranks: 1, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [2048]}, iterations: 6}
  - {name: pinned-per-block, kind: kvpush, strategy: per-block, memory: cuda-host, prefill_ranks: 1, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [512]}, iterations: 4}
YAML
out="$scratch/gpu.h5"
run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/gpu.yaml" --output "$out" --no-progress
kv_check "$out" --prefill 1 --decode 1

set +e
run_mpi -np 2 "$FABSCOPE_BIN" run --self-test kv-corrupt \
  --scenario "$scratch/gpu.yaml" --output "$scratch/corrupt.h5" --no-progress > "$scratch/corrupt.out" 2>&1
rc=$?
set -e
if [ "$rc" != 1 ]; then
  cat "$scratch/corrupt.out"
  echo "kv_gpu: a corrupted byte gave exit code $rc, expected 1" >&2
  exit 1
fi
kv_check "$scratch/corrupt.h5" --prefill 1 --decode 1 --expect-corrupt

# The GPU verifier checks every request, not only the first measured one: one
# spoiled byte in the first and the last warm-up request and in the last
# measured one (request K, warm-up requests counted from 0), each on device
# memory and on pinned host memory, must fail the run on that request alone.
cat > "$scratch/gpu-sweep.yaml" <<'YAML'
name: kv-gpu-sweep
seed: 9
model: llama3-8b
parallel: {tp: 8}
defaults: {transport: mpi, timeout: 60s}
tests:
  - {name: sweep-device, kind: kvpush, strategy: staged, memory: cuda, prefill_ranks: 1, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [256]}, iterations: 3, warmup_requests: 2}
  - {name: sweep-pinned, kind: kvpush, strategy: per-block, memory: cuda-host, prefill_ranks: 1, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [64]}, iterations: 3, warmup_requests: 2}
YAML
for spoiled in 0:0 0:1 0:4; do
  set +e
  run_mpi -np 2 "$FABSCOPE_BIN" run --self-test "kv-corrupt=$spoiled" --scenario "$scratch/gpu-sweep.yaml" \
    --output "$scratch/gpu-sweep.h5" --overwrite --no-progress > "$scratch/gpu-sweep.out" 2>&1
  rc=$?
  set -e
  if [ "$rc" != 1 ]; then
    cat "$scratch/gpu-sweep.out"
    echo "kv_gpu: kv-corrupt=$spoiled on GPU memory gave exit code $rc, expected 1 (check failed)" >&2
    exit 1
  fi
  kv_check "$scratch/gpu-sweep.h5" --prefill 1 --decode 1 --expect-corrupt "$spoiled"
done

fi

# Device memory straight on the wire over NCCL (gpu-direct: every strategy,
# no pinned-host hop, copy_ns 0; in-order posting). NCCL ranks need a GPU
# each, so this part needs 2 GPUs and a tree with the NCCL transport. Short
# prompts: the transport keeps a pinned bounce buffer per slot, and per-block
# reserves one slot per block message.
gpus=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU " || true)
if ! part_wanted nccl-direct; then
  :
elif [ "$gpus" -ge 2 ] && [ -e "$FABSCOPE_SOURCE_DIR/src/transport/NcclTransport.cpp" ]; then
  cat > "$scratch/direct.yaml" <<'YAML'
name: kv-gpu-direct
seed: 19
model: llama3-70b
parallel: {tp: 8}
defaults: {transport: nccl, memory: cuda, timeout: 60s}
tests:
  - {name: direct-per-block, kind: kvpush, strategy: per-block, prefill_ranks: 1, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [128]}, iterations: 6,
     loop: {mode: closed, in_flight: 2}}
  - {name: direct-staged, kind: kvpush, strategy: staged, prefill_ranks: 1, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [2048, 8192]}, iterations: 10,
     loop: {mode: closed, in_flight: 3}}
  - {name: direct-layer-stream, kind: kvpush, strategy: layer-stream, compute_per_layer: 20us, prefill_ranks: 1,
     decode_ranks: 1, sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [128]}, iterations: 4}
  - {name: direct-staged-open, kind: kvpush, strategy: staged, prefill_ranks: 1, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [2048]}, iterations: 8,
     loop: {mode: open, rate: 200, in_flight: 2}}
YAML
  out="$scratch/direct.h5"
  run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/direct.yaml" --output "$out" --no-progress
  kv_check "$out" --prefill 1 --decode 1
  set +e
  run_mpi -np 2 "$FABSCOPE_BIN" run --self-test kv-corrupt \
    --scenario "$scratch/direct.yaml" --output "$scratch/direct-corrupt.h5" --no-progress > "$scratch/direct.out" 2>&1
  rc=$?
  set -e
  if [ "$rc" != 1 ]; then
    cat "$scratch/direct.out"
    echo "kv_gpu: a corrupted byte on the gpu-direct path gave exit code $rc, expected 1" >&2
    exit 1
  fi
  kv_check "$scratch/direct-corrupt.h5" --prefill 1 --decode 1 --expect-corrupt
else
  skip_part nccl-direct "gpu-direct (NCCL) needs 2 GPUs ($gpus here) and src/transport/NcclTransport.cpp"
fi
echo "kv_gpu: ok"
