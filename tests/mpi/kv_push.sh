#!/bin/bash
# kvpush on host memory: every strategy, 2 prefill -> 2 decode (the shipped
# Llama-3-70B scenario) and 3 prefill -> 1 decode (closed and open loop; once
# more with the in-order posting an NCCL transport needs);
# every request verified at the decode rank; and the checker's self-test:
# one corrupted byte must fail the test with exit code 1.
source "$(dirname "$0")/lib.bash"
kv_check() { /usr/bin/python3 "$FABSCOPE_SOURCE_DIR/tests/mpi/kv_check.py" "$@"; }

out="$scratch/disagg.h5"
run_mpi -np 4 "$FABSCOPE_BIN" run --scenario "$FABSCOPE_SOURCE_DIR/scenarios/kv-disagg-llama70b.yaml" \
  --output "$out" --no-progress | tee "$scratch/stdout"
grep -q "result file: $out (complete)" "$scratch/stdout"
check_result "$out" 4
kv_check "$out" --prefill 2 --decode 2

cat > "$scratch/many-to-one.yaml" <<'YAML'
name: kv-many-to-one
seed: 3
model: llama3-8b
parallel: {tp: 8}
defaults: {transport: mpi, memory: host, timeout: 60s}
tests:
  - {name: m2o-per-block, kind: kvpush, strategy: per-block, prefill_ranks: 3, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [100]}, loop: {mode: closed, in_flight: 2},
     iterations: 5, warmup_requests: 1}
  - {name: m2o-staged, kind: kvpush, strategy: staged, prefill_ranks: 3, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [100, 300]}, loop: {mode: open, rate: 200},
     iterations: 5, pool_blocks: 80}
  - {name: m2o-layer-stream, kind: kvpush, strategy: layer-stream, compute_per_layer: 20us, prefill_ranks: 3,
     decode_ranks: 1, sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [100]}, iterations: 5}
YAML
out="$scratch/m2o.h5"
run_mpi -np 4 "$FABSCOPE_BIN" run --scenario "$scratch/many-to-one.yaml" --output "$out" --no-progress
check_result "$out" 4
kv_check "$out" --prefill 3 --decode 1

# The posting order an in-order transport (NCCL) needs, exercised over MPI:
# decode ranks post by request index, then prefill rank, only into a free
# lane of that prefill rank. Every request must still arrive and verify.
out="$scratch/in-order.h5"
run_mpi -np 4 "$FABSCOPE_BIN" run --self-test kv-in-order \
  --scenario "$scratch/many-to-one.yaml" --output "$out" --no-progress
check_result "$out" 4
kv_check "$out" --prefill 3 --decode 1
/usr/bin/python3 - "$out" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    flags = {int(g.attrs["in_order_posting"]) for g in f["tests"].values()}
assert flags == {1}, f"in_order_posting {flags}, expected 1 everywhere"
PY

# A subset of the ranks (ranks: 3 of 4): rank 3 takes no part, the others
# find their roles by position among the measuring ranks.
cat > "$scratch/subset.yaml" <<'YAML'
name: kv-subset
seed: 5
model: llama3-8b
parallel: {tp: 8}
defaults: {transport: mpi, memory: host, timeout: 60s}
tests:
  - {name: subset-staged, kind: kvpush, strategy: staged, ranks: 3, prefill_ranks: 2, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [64]}, iterations: 3}
YAML
out="$scratch/subset.h5"
run_mpi -np 4 "$FABSCOPE_BIN" run --scenario "$scratch/subset.yaml" --output "$out" --no-progress
check_result "$out" 4
kv_check "$out" --prefill 2 --decode 1

# A run whose KV self-test spoils one byte must fail with exit code 1 (check failed).
# usage: spoiled_run NP SELF_TEST SCENARIO OUT
spoiled_run() {
  local rc=0
  run_mpi -np "$1" "$FABSCOPE_BIN" run --self-test "$2" --scenario "$3" --output "$4" --overwrite \
    --no-progress > "$4.out" 2>&1 || rc=$?
  if [ "$rc" != 1 ]; then
    cat "$4.out"
    echo "kv_push: --self-test $2 on $(basename "$3") gave exit code $rc, expected 1 (check failed)" >&2
    exit 1
  fi
}

# Self-test of the checker: prefill rank 0 flips one byte of request 0.
spoiled_run 4 kv-corrupt "$scratch/many-to-one.yaml" "$scratch/corrupt.h5"
kv_check "$scratch/corrupt.h5" --prefill 3 --decode 1 --expect-corrupt

# The checker verifies every request, not only the first measured one: one
# spoiled byte in the first and the last warm-up request, the first measured
# request of another prefill rank and the last measured request of the last one
# (prefill P:request K, warm-up requests counted from 0) must each fail the run
# on that request alone.
cat > "$scratch/sweep.yaml" <<'YAML'
name: kv-corrupt-sweep
seed: 9
model: llama3-8b
parallel: {tp: 8}
defaults: {transport: mpi, memory: host, timeout: 60s}
tests:
  - {name: sweep-per-block, kind: kvpush, strategy: per-block, prefill_ranks: 3, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [64]}, loop: {mode: closed, in_flight: 2},
     iterations: 3, warmup_requests: 2}
YAML
for spoiled in 0:0 0:1 1:2 2:4; do
  spoiled_run 4 "kv-corrupt=$spoiled" "$scratch/sweep.yaml" "$scratch/sweep.h5"
  kv_check "$scratch/sweep.h5" --prefill 3 --decode 1 --expect-corrupt "$spoiled"
done
# A pool of one block (one prompt of one block, one request in flight, one prefill rank):
# the spoiled byte is the pool's very first, which the self-test must reach too.
cat > "$scratch/one-block.yaml" <<'YAML'
name: kv-corrupt-one-block
seed: 9
model: llama3-8b
parallel: {tp: 8}
defaults: {transport: mpi, memory: host, timeout: 60s}
tests:
  - {name: one-block, kind: kvpush, strategy: per-block, prefill_ranks: 1, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [16]}, loop: {mode: closed, in_flight: 1},
     iterations: 3, warmup_requests: 1, pool_blocks: 1}
YAML
spoiled_run 2 kv-corrupt=0:1 "$scratch/one-block.yaml" "$scratch/one-block.h5"
kv_check "$scratch/one-block.h5" --prefill 1 --decode 1 --expect-corrupt 0:1
echo "kv_push: ok"
