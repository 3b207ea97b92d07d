# `repeats: 3` (docs/scenarios.md, docs/file-format.md): each case measured three times in
# rounds over the whole matrix, written as replicates (attributes replicate/repeats)
# that the closing table and summary label `quiet #k` and compare pools into one
# row with three replicates a side; a file without repeats keeps its layout.
source "$(dirname "$0")/lib.bash"
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$scratch/rep.yaml" <<'YAML'
name: repeats
seed: 3
defaults: {iterations: 40, warmup: 5, timeout: 30s, transport: mpi, memory: host, repeats: 3}
tests:
  - {name: lat, kind: latency, pattern: pairs, sizes: [8, 1KiB]}
  - {name: bw, kind: bandwidth, pattern: pairs, sizes: [64KiB], window: 4, repeats: 2}
YAML
out="$scratch/rep.h5"
run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/rep.yaml" --output "$out" --no-progress >"$scratch/run.log"
grep -q "quiet #3" "$scratch/run.log" || { cat "$scratch/run.log"; fail "the closing table does not label replicate 3 'quiet #3'"; }
/usr/bin/python3 - "$out" <<'PY' || fail "the replicates are not what repeats asked for"
import sys, h5py
def text(v): return v.decode().rstrip("\0") if isinstance(v, bytes) else v
with h5py.File(sys.argv[1], "r") as f:
    rows = [(text(g.attrs["case"]), int(g.attrs["replicate"]), int(g.attrs["repeats"]))
            for _, g in sorted(f["tests"].items())]
expected = [("lat/8B", 0, 3), ("lat/1KiB", 0, 3), ("bw/64KiB", 0, 2),
            ("lat/8B", 1, 3), ("lat/1KiB", 1, 3), ("bw/64KiB", 1, 2),
            ("lat/8B", 2, 3), ("lat/1KiB", 2, 3)]
assert rows == expected, rows
print("instances in rounds:", rows)
PY
summary=$(PYTHONPATH="$FABSCOPE_SOURCE_DIR/analysis" /usr/bin/python3 -m fabscope_analysis summary "$out")
grep -q "quiet #2" <<<"$summary" || { echo "$summary"; fail "summary does not label replicate 2 'quiet #2'"; }
# compare pools a side's repeats inside its run: one file a side, three repeats each; repeats
# are not runs, so run-to-run variation is still unknown
cmp=$(PYTHONPATH="$FABSCOPE_SOURCE_DIR/analysis" /usr/bin/python3 -m fabscope_analysis compare "$out" "$out" --resamples 50)
grep -q "runs per side: 1 vs 1 (repeats inside a run: 3 vs 3, not runs)" <<<"$cmp" || { echo "$cmp"; fail "compare did not pool the 3 repeats of a side's run"; }
grep -q "run-to-run variation is unknown" <<<"$cmp" || fail "compare counts repeats inside one file as runs"
grep -q "#2" <<<"$cmp" && fail "compare labels a pooled row with one replicate's number"
# without repeats nothing changes: no replicate attribute
run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/rep.yaml" --set repeats=1 --set bw.repeats=1 \
  --output "$scratch/once.h5" --no-progress >/dev/null
/usr/bin/python3 -c "
import sys, h5py
with h5py.File(sys.argv[1], 'r') as f:
    assert len(f['tests']) == 3 and not any('replicate' in g.attrs for g in f['tests'].values())
" "$scratch/once.h5" || fail "a run without repeats has replicate attributes or a different matrix"
echo "PASS: repeats 3 and 2 run in rounds, labelled #k, pooled by compare; repeats 1 leaves the layout alone"
