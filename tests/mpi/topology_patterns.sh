# Patterns that follow the topology at 8 and 16 ranks on fake hosts:
# each rank gets the host name node<rank/2> in a UTS namespace (root), a
# --topology file makes two pods of two leaves (one node per leaf at 8 ranks, two at 16). Checks that
# every pair of every pattern is what the pattern promises (rails: same local
# rank, different nodes), that each sample's `level` is the level its pair
# crosses by /ranks, that `summary` splits by level, and that a budget thins the
# all-pairs pass and records what it left out. Oversubscribed: waits yield.
# ctest-parts: np8 np16 errors
# ctest-labels: shares-machine
# (it checks files, messages or packages, not time: tests/run runs two such tests at a time)
source "$(dirname "$0")/lib.bash"
cat > "$scratch/patterns.yaml" <<'YAML'
name: topology-patterns
defaults: {iterations: 5, warmup: 1, timeout: 60s, sizes: [8]}
tests:
  - {name: rails, kind: latency, pattern: rails}
  - {name: cross-rail, kind: latency, pattern: cross-rail, sampling: {draws: 2, seed: 3}}
  - {name: ring, kind: latency, pattern: ring, sampling: {draws: 1}}
  - {name: bisection, kind: bandwidth, pattern: bisection, window: 2, sampling: {draws: 2}}
  - {name: hier, kind: latency, pattern: hierarchical, sampling: {draws: 2}}
  - {name: all, kind: latency, pattern: all-pairs, all_pairs: {retest_worst: 0}, budget: 3ms}
YAML
cat > "$scratch/topology.yaml" <<'YAML'
hosts:
  node0: {site: dc, pod: p0, leaf: l0}
  node1: {site: dc, pod: p0, leaf: l1}
  node2: {site: dc, pod: p1, leaf: l0}
  node3: {site: dc, pod: p1, leaf: l1}
  node4: {site: dc, pod: p0, leaf: l0}
  node5: {site: dc, pod: p0, leaf: l1}
  node6: {site: dc, pod: p1, leaf: l0}
  node7: {site: dc, pod: p1, leaf: l1}
YAML

check() {  # FILE STDOUT NRANKS
  /usr/bin/python3 - "$@" "$FABSCOPE_SOURCE_DIR/analysis" <<'PY'
import io, sys
import h5py, numpy as np
path, stdout, nranks, analysis = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
with h5py.File(path, "r") as f:
    assert int(f.attrs["exit_code"]) == 0, f.attrs["exit_code"]
    ranks = {int(r["rank"]): r for r in f["ranks"][()]}
    assert len(ranks) == nranks
    host = {r: text(v["host"]) for r, v in ranks.items()}
    assert host[0] == "node0" and host[nranks - 1] == "node%d" % ((nranks - 1) // 2), host
    local = {r: int(v["local_rank"]) for r, v in ranks.items()}
    place = {r: (text(v["pod"]), text(v["leaf"])) for r, v in ranks.items()}
    def level(a, b):
        if host[a] == host[b]: return 1
        if place[a] == place[b]: return 2
        return 3 if place[a][0] == place[b][0] else 4
    seen = {}
    for index, g in f["tests"].items():
        a = g.attrs
        name = text(a["name"])
        assert text(a["status"]) == "passed", (name, text(a["error"]))
        s = g["samples"][()]
        assert len(s) > 0, name
        want = np.array([level(int(r), int(p)) for r, p in zip(s["rank"], s["peer"])])
        assert (s["level"] == want).all(), (name, s["level"], want)
        pairs = {(int(r), int(p)) for r, p in zip(s["rank"], s["peer"])}
        seen[name] = (set(want.tolist()), pairs, a)
    levels, pairs, _ = seen["rails"]
    assert all(local[r] == local[p] and host[r] != host[p] for r, p in pairs), pairs
    assert len({frozenset(p) for p in pairs}) == 2 * (nranks // 2) * (nranks // 2 - 1) // 2, pairs
    _, pairs, _ = seen["cross-rail"]
    assert all(local[r] != local[p] and host[r] != host[p] for r, p in pairs), pairs
    levels, _, _ = seen["hier"]
    assert {1, 3, 4} <= levels, levels  # inside a leaf group, then within and across pods
    _, pairs, a = seen["all"]
    full = nranks * (nranks - 1) // 2
    assert int(a["rounds_left_out"]) > 0 and int(a["pairs_left_out"]) > 0, dict(a)
    assert len({frozenset(p) for p in pairs}) == full - int(a["pairs_left_out"]), (len(pairs), dict(a))
    assert "left out" in text(a["budget_left_out"]), text(a["budget_left_out"])
sys.path.insert(0, analysis)
from fabscope_analysis import open_result
from fabscope_analysis.summary import print_summary
out = io.StringIO()
with open_result(path) as run:
    print_summary(run, out)
text_out = out.getvalue()
assert "by topology level" in text_out and "cross-pod" in text_out and "same-pod" in text_out, text_out
print("topology patterns at %d ranks: pairs, levels, budget and the summary's split check" % nranks)
PY
}

run_patterns() {  # NRANKS
  local n=$1
  run_mpi -np "$n" env OMPI_MCA_mpi_yield_when_idle=1 FABSCOPE_WAITS_YIELD=1 unshare --uts \
      sh -c 'hostname node$((OMPI_COMM_WORLD_RANK / 2)) && exec "$0" "$@"' "$FABSCOPE_BIN" run \
      --scenario "$scratch/patterns.yaml" --output "$scratch/np$n.h5" --no-progress \
      --topology "$scratch/topology.yaml" > "$scratch/np$n.out"
  check "$scratch/np$n.h5" "$scratch/np$n.out" "$n"
}

for n in 8 16; do
  part_wanted "np$n" || continue
  if [ "$(id -u)" = 0 ] && unshare --uts true 2>/dev/null; then
    run_patterns "$n"
  else
    skip_part "np$n" "not root: fake hosts need UTS namespaces"
  fi
done
part_wanted errors || exit 0

# Bad input, refused at load (exit 2) with the scenario's position and what would fit.
expect_refusal() {  # YAML NEEDLE [list options...]
  local yaml=$1 needle=$2; shift 2
  printf '%s\n' "$yaml" > "$scratch/bad.yaml"
  set +e
  "$FABSCOPE_BIN" list --scenario "$scratch/bad.yaml" "$@" > "$scratch/bad.out" 2> "$scratch/bad.err"
  local rc=$?
  set -e
  [ "$rc" = 2 ] || { echo "expected exit 2, got $rc for: $yaml"; cat "$scratch/bad.err"; exit 1; }
  grep -q "bad.yaml:[0-9]*:[0-9]*: .*$needle" "$scratch/bad.err" || {
    echo "expected '$needle' at a file:line:column:"; cat "$scratch/bad.err"; exit 1; }
}
expect_refusal $'tests:\n  - {kind: latency, sizes: [8],\n     pattern: hierarchical}' \
  "no leaf labels .*group: node" --ranks 16
expect_refusal $'tests:\n  - {kind: latency, sizes: [8], pattern: rails}' "all 8 measuring ranks are on one node" --ranks 8
expect_refusal $'tests:\n  - {kind: latency, sizes: [8], pattern: bisection}' "needs at least 4 measuring ranks" --ranks 3
expect_refusal $'budget: 10ms\ntests:\n  - {kind: latency, sizes: [8], pattern: all-pairs}' \
  "with one round per instance: more than its budget .*what would fit: budget: " --ranks 64
# A budget that fits: list shows the thinned plan and the estimate.
printf 'budget: 300ms\ntests:\n  - {kind: latency, sizes: [8], iterations: 100, pattern: all-pairs}\n' > "$scratch/fits.yaml"
"$FABSCOPE_BIN" list --scenario "$scratch/fits.yaml" --ranks 256 > "$scratch/fits.out"
grep -q "kept [0-9]* of 255 rounds" "$scratch/fits.out" || { cat "$scratch/fits.out"; exit 1; }
grep -q "estimated time: .*budget 0.3s" "$scratch/fits.out" || { cat "$scratch/fits.out"; exit 1; }
echo "topology patterns: bad input refused at load with its position"
