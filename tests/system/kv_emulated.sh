#!/usr/bin/env bash
# kvpush across the emulated cluster: two prefill hosts push KV caches into
# one decode host, every strategy, every request verified, over TCP between
# network namespaces (no shared memory), and `down` leaves nothing behind.
# Two one-sided variants over UCX as well (the decode host pulls staged
# buffers; the prefill hosts put blocks), where put and get cross hosts.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"

require_root "creates network namespaces and a bridge"
require_fabscope
cluster=$FABSCOPE_SOURCE_DIR/launch/emulated-cluster
export FABSCOPE_CLUSTER_PREFIX=eckv
subnet=198.18.14.0/24
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

scratch=$(mktemp -d /tmp/fabscope-kv-emulated.XXXXXX)
on_exit "rm -rf '$scratch'"
"$cluster" up 3 --subnet "$subnet"
on_exit "'$cluster' down >/dev/null"  # only once up succeeded: never another run's cluster

cat >"$scratch/kv.yaml" <<'YAML'
name: kv-emulated
seed: 11
model: llama3-8b
parallel: {tp: 8}
defaults: {transport: mpi, memory: host, timeout: 120s}
tests:
  - {name: kv-per-block, kind: kvpush, strategy: per-block, prefill_ranks: 2, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [128]}, iterations: 4, warmup_requests: 1,
     loop: {mode: closed, in_flight: 2}}
  - {name: kv-staged, kind: kvpush, strategy: staged, prefill_ranks: 2, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [128, 512]}, iterations: 4,
     loop: {mode: open, rate: 20}}
  - {name: kv-layer-stream, kind: kvpush, strategy: layer-stream, compute_per_layer: 50us, prefill_ranks: 2,
     decode_ranks: 1, sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [128]}, iterations: 4}
  - {name: kv-staged-pull, kind: kvpush, transport: ucx, direction: pull, strategy: staged, prefill_ranks: 2,
     decode_ranks: 1, sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [512]}, iterations: 4,
     loop: {mode: closed, in_flight: 2}}
  - {name: kv-per-block-put, kind: kvpush, transport: ucx, direction: push-put, strategy: per-block, prefill_ranks: 2,
     decode_ranks: 1, sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [128]}, iterations: 4}
YAML

result=$scratch/kv.h5
set +e
timeout --kill-after=10 300 "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" --fabric emulated -N 1 --np 3 \
  --bin "$FABSCOPE_BIN" -- run --scenario "$scratch/kv.yaml" --output "$result" --no-progress
exit_code=$?
set -e
((exit_code != 124 && exit_code != 137)) || fail "kvpush across the emulated cluster did not finish within 300 s"
((exit_code == 0)) || fail "kvpush across the emulated cluster exited with $exit_code (expected 0)"
/usr/bin/python3 "$FABSCOPE_SOURCE_DIR/tests/mpi/kv_check.py" "$result" --prefill 2 --decode 1 \
  || fail "the kvpush result file is wrong"
# Prefill and decode sit on three different hosts.
/usr/bin/python3 - "$result" <<'PY' || fail "ranks are not one per emulated host"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    hosts = {int(r["rank"]): r["host"].decode().rstrip("\0") for r in f["ranks"][()]}
    assert sorted(hosts.values()) == ["eckv0", "eckv1", "eckv2"], hosts
    preset = f.attrs["launch_preset"]
    preset = preset.decode() if isinstance(preset, bytes) else str(preset)
    assert preset == "emulated", preset
PY
note "two prefill hosts -> one decode host: every strategy verified (push over MPI; pull and push-put over UCX)"

"$cluster" down >/dev/null
for host in eckv0 eckv1 eckv2; do
  ! ip netns list | grep -qw "$host" || fail "namespace $host is still there after down"
done
note "ok"
