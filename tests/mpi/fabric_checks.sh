# The fabric checks end to end: a manifest whose must-match item differs makes
# the run exit 1 (manifest_failed=1, the mismatch in /hosts/<host>/manifest and
# in the closing summary); the same difference marked advisory exits 0 and the
# summary still says how many intended items matched. Every rank's NIC binding
# is checked, not only rank 0's: ranks 2 and 3 bound to a NIC this host lacks
# are flagged.
source "$(dirname "$0")/lib.bash"
cat > "$scratch/tiny.yaml" <<'YAML'
name: fabric-checks
tests:
  - name: lat
    kind: latency
    sizes: [8]
    iterations: 20
    warmup: 2
    timeout: 60s
YAML
manifest() {  # MUST_MATCH
  cat <<YAML
manifest_version: 1
name: wrong-mtu
fabric:
  protocol: tcp
  mtu: 1234
  must_match: $1
YAML
}
manifest true > "$scratch/must.yaml"
manifest false > "$scratch/advisory.yaml"

set +e
run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/tiny.yaml" --output "$scratch/must.h5" --no-progress \
  --manifest "$scratch/must.yaml" > "$scratch/must.out" 2>&1
rc=$?
set -e
[ "$rc" = 1 ] || { echo "FAIL: a must-match manifest difference exited $rc, expected 1"; cat "$scratch/must.out"; exit 1; }
grep -q "the manifest check FAILED" "$scratch/must.out"
grep -q "manifest mismatch: .*fabric/mtu@.* intended '1234'" "$scratch/must.out"
grep -q "manifest 'wrong-mtu' (.*must.yaml): [0-9]* of [0-9]* intended items match" "$scratch/must.out"

run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/tiny.yaml" --output "$scratch/advisory.h5" --no-progress \
  --manifest "$scratch/advisory.yaml" > "$scratch/advisory.out"
grep -q "manifest (advisory): .*fabric/mtu@" "$scratch/advisory.out"
if grep -q "FAILED" "$scratch/advisory.out"; then echo "FAIL: an advisory difference failed the run"; exit 1; fi

run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/tiny.yaml" --output "$scratch/bind.h5" --no-progress \
  : -np 2 env FABSCOPE_NIC=nosuchnic9 "$FABSCOPE_BIN" run --scenario "$scratch/tiny.yaml" --output "$scratch/bind.h5" \
  --no-progress > "$scratch/bind.out"
grep -q "rank is bound to a NIC this host does not have" "$scratch/bind.out"

/usr/bin/python3 - "$scratch" <<'PY'
import sys, h5py
d = sys.argv[1]
text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
with h5py.File(d + "/must.h5", "r") as f:
    assert int(f.attrs["manifest_failed"]) == 1 and int(f.attrs["exit_code"]) == 1
    (host,) = list(f["hosts"])
    rows = f["hosts"][host]["manifest"][()]
    bad = [r for r in rows if text(r["status"]) != "match"]
    assert any(text(r["component"]).startswith("fabric/mtu@") and r["must_match"] == 1 for r in bad), rows
with h5py.File(d + "/advisory.h5", "r") as f:
    assert int(f.attrs["manifest_failed"]) == 0 and int(f.attrs["exit_code"]) == 0
with h5py.File(d + "/bind.h5", "r") as f:
    (host,) = list(f["hosts"])
    flags = f["hosts"][host]["consistency"][()]
    bound = sorted(text(r["component"]) for r in flags if "bound to a NIC" in text(r["what"]))
    assert bound == ["rank/2/binding", "rank/3/binding"], bound
    assert int(f.attrs["consistency_flags"]) >= 2
    nics = {int(r["rank"]): text(r["nic"]) for r in f["ranks"][()]}
    assert nics[2] == nics[3] == "nosuchnic9", nics
print("fabric checks: manifest exit codes, advisory items, every rank's binding")
PY
