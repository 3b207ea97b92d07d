# The MoE all-to-all (kind alltoall): every byte verified on 4 ranks, with the
# model's sizes and with literal ones; the per-rank table conserves bytes (what
# all ranks sent is what all received, the combine returns one result per
# dispatched copy); a skewed routing loads the ranks unevenly where a uniform
# one does not; the phases' times are consistent with the round's; a spoiled
# token on one rank fails the test (exit 1, status failed, the rank named); with
# roles.groups each group of ranks is measured in turn, labelled, on its own ranks.
source "$(dirname "$0")/lib.bash"
cat > "$scratch/a2a.yaml" <<'YAML'
name: alltoall-check
model: deepseek-v3
tests:
  - name: moe
    kind: alltoall
    sizes: {derive: moe-dispatch, tokens: [1, 32, 128]}
    iterations: 20
    warmup: 2
    timeout: 30s
  - name: skewed
    kind: alltoall
    experts: 16
    top_k: 2
    token_bytes: {dispatch: 64, combine: 96}
    routing: {popularity: zipf, exponent: 2}
    sizes: [4KiB]
    iterations: 20
    warmup: 2
    timeout: 30s
  - name: even
    kind: alltoall
    experts: 16
    top_k: 2
    token_bytes: {dispatch: 64, combine: 96}
    sizes: [4KiB]
    iterations: 20
    warmup: 2
    timeout: 30s
YAML
run_mpi -np 4 "$FABSCOPE_BIN" run --scenario "$scratch/a2a.yaml" --output "$scratch/ok.h5" --no-progress > /dev/null
/usr/bin/python3 - "$scratch/ok.h5" "$FABSCOPE_SOURCE_DIR/src/output/schema.yaml" <<'PY'
import sys, h5py, numpy as np, yaml
declared = yaml.safe_load(open(sys.argv[2]))["instance_attributes"]["kinds"]["alltoall"]
types = {"int": (np.integer,), "float": (np.floating,), "str": (str, bytes)}
with h5py.File(sys.argv[1], "r") as f:
    assert f.attrs["complete"] == 1 and f.attrs["exit_code"] == 0
    by_name = {}
    for name, g in f["tests"].items():
        a = g.attrs
        assert a["kind"] == "alltoall" and a["status"] == "passed", (name, a["status"], a["error"])
        by_name.setdefault(a["name"], []).append(a)
        t = g["alltoall_ranks"][()]
        assert sorted(t["rank"]) == [0, 1, 2, 3] and np.all(t["verified"] == 1), t
        D, C, k = int(a["dispatch_token_bytes"]), int(a["combine_token_bytes"]), int(a["top_k"])
        assert np.all(t["tokens"] == a["tokens_per_rank"]) and int(a["bytes"]) == D * int(a["tokens_per_rank"])
        # conservation over the group, and one combine result per dispatched copy
        assert t["dispatch_bytes_sent"].sum() == t["dispatch_bytes_received"].sum()
        assert t["combine_bytes_sent"].sum() == t["combine_bytes_received"].sum()
        assert np.all(t["combine_bytes_sent"] * D == t["dispatch_bytes_received"] * C)
        assert np.all(t["dispatch_bytes_sent"] == t["dispatch_copies_sent"] * D)
        copies = (t["dispatch_copies_sent"] + t["dispatch_copies_local"]) / t["tokens"]
        assert np.all(copies >= 1) and np.all(copies <= min(k, 4)), copies
        assert abs(a["copies_per_token"] - copies.mean()) < 1e-9
        n = 4
        assert abs(a["dispatch_busbw_gbps"] - a["dispatch_algbw_gbps"] * (n - 1) / n) < 1e-9
        s = g["samples"][()]
        head = s[s["flags"] == 0]
        disp = s[s["flags"] == 1 << 11]
        comb = s[s["flags"] == 1 << 12]
        assert len(head) == len(disp) == len(comb) == 4 * 20 and np.all(s["peer"] == -1)
        # each rank's dispatch then combine fill its round exactly
        assert np.all(disp["t_post_ns"] == head["t_post_ns"]) and np.all(comb["t_done_ns"] == head["t_done_ns"])
        assert np.all(disp["t_done_ns"] == comb["t_post_ns"])
        assert a["dispatch_p50_ns"] > 0 and a["combine_p50_ns"] > 0
        assert a["collective_p50_ns"] >= max(a["dispatch_p50_ns"], a["combine_p50_ns"]) * 0.999
        for key, kind in declared:
            assert key in a and isinstance(a[key], types[kind]), (name, key, kind, a.get(key))
        # Pipelined, per phase: 20 calls back to back, time per call; bounds as
        # in allreduce.sh (the 128-token instance is large enough that not
        # dividing by the calls would exceed the upper one).
        assert a["pipelined_calls"] == 20, a["pipelined_calls"]
        loop = float(head["t_done_ns"].max() - head["t_post_ns"].min()) / 20
        for phase, rows in (("dispatch", disp), ("combine", comb)):
            t = a[f"{phase}_pipelined_ns"]
            own = (rows["t_done_ns"] - rows["t_post_ns"]).astype(np.float64)
            # back to back may overlap calls: below the fastest single call, not by 4x
            assert t >= own.min() * 0.25, (name, phase, t, own.min())
            assert t <= 3 * loop + 100e6 / 20, (name, phase, t, loop)
            algbw = a[f"{phase}_pipelined_algbw_gbps"]
            assert abs(algbw * t - a[f"{phase}_algbw_gbps"] * a[f"{phase}_p50_ns"]) < 1e-6 * algbw * t, (name, phase)
            assert abs(a[f"{phase}_pipelined_busbw_gbps"] - algbw * (n - 1) / n) < 1e-9
    skew, even = by_name["skewed"][0], by_name["even"][0]
    # 16 experts on 4 ranks, Zipf s=2: the hottest expert alone takes ~60 % of the picks
    assert skew["load_imbalance"] > 1.5 > even["load_imbalance"], (skew["load_imbalance"], even["load_imbalance"])
print("alltoall: every byte verified, bytes conserved, skew seen")
PY
rc=0
run_mpi -np 4 "$FABSCOPE_BIN" run --self-test corrupt-rank=1 \
  --scenario "$scratch/a2a.yaml" --output "$scratch/bad.h5" --no-progress > "$scratch/out" 2>&1 || rc=$?
[ $rc -eq 1 ] || { echo "FAIL: a spoiled token gave exit $rc, expected 1"; cat "$scratch/out"; exit 1; }
/usr/bin/python3 - "$scratch/bad.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    for name, g in f["tests"].items():
        assert g.attrs["status"] == "failed", (name, g.attrs["status"])
        assert "rank 1" in g.attrs["error"] and "expected" in g.attrs["error"], g.attrs["error"]
        t = g["alltoall_ranks"][()]
        assert [int(r) for r, v in zip(t["rank"], t["verified"]) if not v] == [1], t
    assert f.attrs["complete"] == 1 and f.attrs["exit_code"] == 1
print("alltoall: a spoiled token on rank 1 was caught")
PY
# The analysis reads it back: the summary's MoE line, with the file's own figures.
out=$(cd "$FABSCOPE_SOURCE_DIR/analysis" && /usr/bin/python3 -m fabscope_analysis summary "$scratch/ok.h5")
grep -q "MoE 32 tokens/rank, top-8 of 256 experts (uniform)" <<<"$out" \
  || { echo "FAIL: the summary has no MoE line for the 32-token instance"; echo "$out"; exit 1; }
grep -q "zipf s=2" <<<"$out" || { echo "FAIL: the summary does not say the routing was skewed"; echo "$out"; exit 1; }
grep -Eq "pipelined busbw dispatch [0-9.,]+ GB/s, combine [0-9.,]+ GB/s \(20 calls of each phase back to back" <<<"$out" \
  || { echo "FAIL: the summary's MoE line has no pipelined figures"; echo "$out"; exit 1; }
echo "alltoall: the summary reads it back"
# roles.groups: the MoE round measured on each EP group of 2 packed ranks in turn (the
# others load); rank 3 spoils its tokens, so only group 1's instance (ranks 2, 3) fails.
cat > "$scratch/groups.yaml" <<'YAML'
name: alltoall-groups
tests:
  - name: ep
    kind: alltoall
    experts: 16
    top_k: 2
    token_bytes: {dispatch: 64, combine: 96}
    sizes: [4KiB]
    iterations: 5
    warmup: 1
    timeout: 30s
    roles: {canaries: 2, placement: packed, groups: all}
YAML
check_group_rotation "$scratch/groups.yaml" ep/4KiB alltoall_ranks
echo "alltoall: roles.groups measured each EP group on its own ranks, labelled"
