#!/bin/bash
# kvpush under neighbour load, on 6 ranks (oversubscribed: waits yield): 3
# measuring ranks (2 prefill -> 1 decode) and 3 congestors, quiet and under
# incast, bidirectional and copy load. `fabscope list` shows each condition's
# instance with its estimate; in the file every instance records its
# condition, the same prefill/decode ranks measure under each, the congestors
# ran their load (bytes and GB/s), every request was verified byte for byte,
# and the loaded KV figures exist; `impact` reads back a congestion impact
# factor of each loaded condition over quiet. A one-sided direction under a
# condition is refused before anything runs (exit 2, file:line:column).
source "$(dirname "$0")/lib.bash"
export OMPI_MCA_mpi_yield_when_idle=1
kv_check() { /usr/bin/python3 "$FABSCOPE_SOURCE_DIR/tests/mpi/kv_check.py" "$@"; }

cat > "$scratch/kv-load.yaml" <<'YAML'
name: kv-under-load
seed: 11
model: llama3-8b
parallel: {tp: 8}
defaults: {transport: mpi, memory: host, timeout: 60s}
tests:
  - {name: kv-loaded, kind: kvpush, strategy: per-block, prefill_ranks: 2, decode_ranks: 1,
     roles: {canaries: 3, placement: packed}, conditions: [quiet, incast, bidirectional, copy],
     load_bytes: 256KiB, sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [64]},
     loop: {mode: closed, in_flight: 2}, iterations: 10, warmup_requests: 1}
YAML

"$FABSCOPE_BIN" list --scenario "$scratch/kv-load.yaml" --ranks 6 > "$scratch/list.out"
for condition in quiet incast bidirectional copy; do
  # the condition column is 8 characters wide; the estimate is the column before the plan
  grep -Eq "^[0-9]+ +kv-loaded +kvpush +[0-9.]+[KMG]?i?B +${condition:0:8} .* [0-9.e+-]+s  " "$scratch/list.out" \
    || { cat "$scratch/list.out"; echo "FAIL: fabscope list shows no kvpush instance under $condition"; exit 1; }
done

out="$scratch/kv-load.h5"
run_mpi -np 6 "$FABSCOPE_BIN" run --scenario "$scratch/kv-load.yaml" --output "$out" --no-progress \
  > "$scratch/run.out" 2>&1 || { cat "$scratch/run.out"; echo "FAIL: kvpush under conditions exited $?"; exit 1; }
check_result "$out" 6
kv_check "$out" --prefill 2 --decode 1
/usr/bin/python3 - "$out" <<'PY'
import sys, h5py
def text(v): return v.decode() if isinstance(v, bytes) else str(v)
def ranks(v): return {int(x) for x in text(v).split(",") if x}
with h5py.File(sys.argv[1], "r") as f:
    by_condition = {text(g.attrs["condition"]): g for g in f["tests"].values()}
    assert sorted(by_condition) == ["bidirectional", "copy", "incast", "quiet"], sorted(by_condition)
    quiet = by_condition["quiet"]
    canaries = ranks(quiet.attrs["canaries"])
    assert canaries == {0, 1, 2}, text(quiet.attrs["canaries"])
    words = {"incast": "stream to rank", "bidirectional": "both ways", "copy": "copying"}
    for condition, g in by_condition.items():
        a = g.attrs
        assert text(a["status"]) == "passed", (condition, text(a["error"]))
        assert ranks(a["canaries"]) == canaries, (condition, "the same workers measure under every condition")
        assert int(a["requests_measured"]) == 20 == int(a["requests_verified"]), \
            (condition, a["requests_measured"], a["requests_verified"])
        assert a["kv_gbps_aggregate"] > 0 and a["kv_gbps_per_request"] > 0, condition
        s = g["samples"][()]
        assert len(s) == 20 and set(int(r) for r in s["rank"]) <= canaries, (condition, "samples from a congestor")
        if condition == "quiet":
            continue
        assert ranks(a["congestors"]) == {3, 4, 5}, (condition, text(a["congestors"]))
        assert words[condition] in text(a["load"]), (condition, text(a["load"]))
        assert a["load_bytes"] > 0 and a["load_gbps"] > 0, (condition, a["load_bytes"], a["load_gbps"])
        assert int(a["quiet_index"]) == int(quiet.name.split("/")[-1]), (condition, a["quiet_index"])
print("kv_conditions: quiet, incast, bidirectional, copy: 20 requests verified each, load recorded")
PY

# impact: each loaded condition's KV row has a p50 congestion impact factor over quiet
# (20 requests: a p50 needs 10; a p99 needs 100, so it is left out and said so).
(cd "$FABSCOPE_SOURCE_DIR/analysis" && /usr/bin/python3 -m fabscope_analysis impact "$out" \
  --json "$scratch/impact.json" --prompt 64 --block-tokens 16) > "$scratch/impact.out"
/usr/bin/python3 - "$scratch/impact.json" <<'PY'
import json, sys
rows = {r["condition"]: r for r in json.load(open(sys.argv[1]))["kv_transfer"]}
assert sorted(rows) == ["bidirectional", "copy", "incast", "quiet"], sorted(rows)
for condition in ("incast", "bidirectional", "copy"):
    cif = rows[condition]["cif"]
    assert cif["p50"] > 0 and cif["p99"] is None and cif["p99.9"] is None, (condition, cif)
PY

# One-sided directions expose every rank's pool: under a condition the loader refuses them.
sed 's/strategy: per-block,/strategy: per-block, direction: pull,/' "$scratch/kv-load.yaml" \
  > "$scratch/pull.yaml"
rc=0; "$FABSCOPE_BIN" list --scenario "$scratch/pull.yaml" --ranks 6 > "$scratch/pull.out" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "pull.yaml:8:.*'direction: pull' exposes every rank's KV pool" "$scratch/pull.out" \
  || { cat "$scratch/pull.out"; echo "FAIL: a pull under conditions gave exit $rc"; exit 1; }
