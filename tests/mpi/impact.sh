# Neighbour traffic and repeats together (docs/scenarios.md, docs/file-format.md): two cases,
# each quiet and under bidirectional load, in two rounds. Every congested instance must point
# at the quiet instance of its own case, round and pass, and its impact must be its own mean
# and p99 over that instance's (check_result.py recomputes them); a quiet instance has none.
source "$(dirname "$0")/lib.bash"
cat >"$scratch/impact.yaml" <<'YAML'
name: impact
seed: 5
defaults: {iterations: 30, warmup: 5, timeout: 30s, transport: mpi, memory: host, repeats: 2}
tests:
  - {name: lat, kind: latency, pattern: pairs, sizes: [8, 1KiB], conditions: [quiet, bidirectional],
     roles: {canaries: 2}}
YAML
out="$scratch/impact.h5"
run_mpi -np 4 "$FABSCOPE_BIN" run --scenario "$scratch/impact.yaml" --output "$out" --no-progress >"$scratch/run.log"
check_result "$out" 4
# The matrix this test relies on: both cases, both conditions, both rounds; each congested
# instance compared with a quiet one (a test whose congested instances had no impact would
# check nothing above).
/usr/bin/python3 - "$out" <<'PY'
import sys, h5py
def text(v): return v.decode() if isinstance(v, bytes) else str(v)
with h5py.File(sys.argv[1], "r") as f:
    rows = sorted((text(g.attrs["case"]), text(g.attrs["condition"]), int(g.attrs["replicate"]),
                   "quiet_index" in g.attrs and "impact_mean" in g.attrs) for g in f["tests"].values())
want = sorted((case, condition, replicate, condition != "quiet")
              for case in ("lat/8B", "lat/1KiB") for condition in ("quiet", "bidirectional")
              for replicate in (0, 1))
assert rows == want, rows
PY
echo "PASS: every congested instance compared with the quiet instance of its case, round and pass"
