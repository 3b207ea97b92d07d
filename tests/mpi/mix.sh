# The serving mix (kind mix): both shipped scenarios as shipped on 8 local ranks
# (oversubscribed: waits yield), each class measured isolated and together with
# the same counts, every byte checked (verified > 0, failed = 0 per class), the
# roles disjoint as the layout says, inflation figures stored per class; then
# the analysis reads each file back and gives the inflation per class (impact
# --json and summary). A small DeepSeek-V3 mix with every class spoiled on purpose
# fails the instance (exit 1), each class's check counting its own failures.
source "$(dirname "$0")/lib.bash"
for model in llama3-70b deepseek-v3; do
  run_mpi -np 8 "$FABSCOPE_BIN" run --scenario "$FABSCOPE_SOURCE_DIR/scenarios/serving-mix-$model.yaml" \
    --output "$scratch/$model.h5" --no-progress > "$scratch/$model.out" 2>&1 \
    || { echo "FAIL: serving-mix-$model exited $?"; cat "$scratch/$model.out"; exit 1; }
  grep -q "^mix allreduce .*inflation mean x" "$scratch/$model.out" \
    || { echo "FAIL: the run did not print the allreduce inflation"; cat "$scratch/$model.out"; exit 1; }
  /usr/bin/python3 - "$scratch/$model.h5" "$model" <<'PY'
import math, sys, h5py, numpy as np
path, model = sys.argv[1:]
classes = ["allreduce", "kvpush", "api"] + (["alltoall"] if model == "deepseek-v3" else [])
with h5py.File(path, "r") as f:
    assert f.attrs["complete"] == 1 and f.attrs["exit_code"] == 0
    (name, g), = f["tests"].items()
    a = g.attrs
    assert a["kind"] == "mix" and a["status"] == "passed", (a["status"], a["error"])
    assert sorted(a["classes"].split(",")) == sorted(classes), a["classes"]
    t = g["mix_classes"][()]
    rows = {(r["class"].decode(), r["phase"].decode()): r for r in t}
    assert sorted(rows) == sorted((c, p) for c in classes for p in ("isolated", "together")), sorted(rows)
    for c in classes:
        iso, tog = rows[(c, "isolated")], rows[(c, "together")]
        assert iso["samples"] == tog["samples"] > 0, (c, iso["samples"], tog["samples"])
        assert tog["verified"] > 0 and tog["failed"] == 0, (c, tog["verified"], tog["failed"])
        assert iso["p50_ns"] > 0 and tog["p99_ns"] >= tog["p50_ns"], c
        assert math.isfinite(tog["inflation_mean"]) and math.isfinite(tog["inflation_p99"]), c
        assert abs(tog["inflation_mean"] - tog["mean_ns"] / iso["mean_ns"]) < 1e-9 * tog["inflation_mean"]
        assert a[f"inflation_p99_{c}"] == tog["inflation_p99"]
    # Disjoint roles as the layout says: prefill 0-1 push, decode 2-5 reduce, front end 6-7.
    s = g["samples"][()]
    cls = (s["flags"] >> 16) & 7
    assert set(s["rank"][cls == 1]) == {2, 3, 4, 5}, set(s["rank"][cls == 1])
    assert set(s["rank"][cls == 3]) == {0, 1} and set(s["peer"][cls == 3]) == {2, 3, 4, 5}
    assert set(s["rank"][cls == 4]) == {6}  # the one api client
    if model == "deepseek-v3":
        assert set(s["rank"][cls == 2]) == {2, 3, 4, 5}
    # together overlaps: the classes' spans in the together phase intersect
    together = s[(s["flags"] & (1 << 19)) != 0]
    spans = [(together["t_post_ns"][cls[(s["flags"] & (1 << 19)) != 0] == k].min(),
              together["t_done_ns"][cls[(s["flags"] & (1 << 19)) != 0] == k].max()) for k in (1, 3, 4)]
    assert max(b for b, _ in spans) < min(e for _, e in spans), f"the classes did not overlap: {spans}"
print(f"mix {model}: every class isolated and together, checked, inflation stored")
PY
  (cd "$FABSCOPE_SOURCE_DIR/analysis" && /usr/bin/python3 -m fabscope_analysis impact "$scratch/$model.h5" \
     --json "$scratch/$model.json" > "$scratch/$model.impact") \
    || { echo "FAIL: impact on the $model mix"; cat "$scratch/$model.impact"; exit 1; }
  /usr/bin/python3 - "$scratch/$model.json" "$model" <<'PY'
import json, math, sys
doc, model = json.load(open(sys.argv[1])), sys.argv[2]
classes = {"allreduce", "kvpush", "api"} | ({"alltoall"} if model == "deepseek-v3" else set())
together = {r["class"]: r for r in doc["serving_mix"] if r["condition"] == "together"}
assert set(together) == classes, together.keys()
for c, r in together.items():
    assert math.isfinite(r["inflation_mean"]) and math.isfinite(r["inflation_p99"]), r
    # the analysis' own figure from the samples agrees with the stored one
    assert abs(r["inflation_mean"] - r["stored_inflation_mean"]) < 1e-6 * r["inflation_mean"], r
print(f"mix {model}: impact gives the inflation of every class")
PY
  out=$(cd "$FABSCOPE_SOURCE_DIR/analysis" && /usr/bin/python3 -m fabscope_analysis summary "$scratch/$model.h5")
  grep -q "mix kvpush: isolated p50/p99 .* inflation (together/isolated) mean x" <<<"$out" \
    || { echo "FAIL: no mix line in the summary"; echo "$out"; exit 1; }
done
# Every class's check catches a spoiled byte, each counted on its own class: a
# small DeepSeek-V3 mix (so the MoE class exists) on 5 ranks (prefill 0, decode 1-2
# in one TP group, front end 3-4), with decode rank 1's all-reduce result, MoE
# all-to-all and first KV push spoiled (--self-test corrupt-rank=1) and the front
# end's first measured request and answer chunk spoiled (api-corrupt-request,
# api-corrupt-chunk). Each phase is checked: every spoil counts once per phase.
cat > "$scratch/spoiled.yaml" <<'YAML'
name: mix-spoiled
model: deepseek-v3
tests:
  - name: serving-mix
    kind: mix
    layout: {prefill: 1, decode: 2, tp: 2, frontend: 2}
    roles: {placement: packed}
    sizes: [256]
    iterations: 4
    warmup: 1
    step_interval: 5ms
    decode_batch: 2
    kv: {rate: 200, requests: 2, prompt_tokens: 16, block_tokens: 16}
    clients: 1
    rate: 500
    requests: 4
    warmup_requests: 1
    request_bytes: 256
    chunks: 2
    service_time: 1ms
    chunk_interval: 1ms
    timeout: 60s
YAML
rc=0
run_mpi -np 5 "$FABSCOPE_BIN" run --self-test corrupt-rank=1 --self-test api-corrupt-request \
  --self-test api-corrupt-chunk --scenario "$scratch/spoiled.yaml" --output "$scratch/bad.h5" --no-progress \
  > "$scratch/bad.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || { echo "FAIL: a spoiled mix gave exit $rc, expected 1"; cat "$scratch/bad.out"; exit 1; }
/usr/bin/python3 - "$scratch/bad.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    assert f.attrs["complete"] == 1 and f.attrs["exit_code"] == 1, (f.attrs["complete"], f.attrs["exit_code"])
    (name, g), = f["tests"].items()
    a = g.attrs
    assert a["status"] == "failed" and sorted(a["classes"].split(",")) == ["allreduce", "alltoall", "api", "kvpush"]
    # decode rank 1's own problems, every class named (one class's failure hides no other's)
    for what in ("rank 1: TP all-reduce element", "rank 1: MoE all-to-all", "rank 1: KV push"):
        assert what in a["error"], (what, a["error"])
    rows = {(r["class"].decode(), r["phase"].decode()): r for r in g["mix_classes"][()]}
    # failed: per phase one spoiled all-reduce result, all-to-all and KV push on rank 1;
    # one spoiled request and one spoiled answer on the front end
    failed = {c: int(rows[(c, "together")]["failed"]) for c in ("allreduce", "alltoall", "kvpush", "api")}
    assert failed == {"allreduce": 2, "alltoall": 2, "kvpush": 2, "api": 4}, failed
    # the untouched decode rank's checks still pass: the hooks spoil, the checks judge
    assert rows[("allreduce", "together")]["verified"] == 2 and rows[("alltoall", "together")]["verified"] == 2
    api = g["api_requests"][()]
    assert sorted(r["status"].decode() for r in api if r["status"] != b"ok") == ["bad-data"] * 2 + ["server-error"] * 2
print("mix: a spoiled TP all-reduce, MoE all-to-all, KV push, api request and api chunk are each caught")
PY
