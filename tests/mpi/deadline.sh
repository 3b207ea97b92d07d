# A test that cannot finish inside its deadline becomes a timestamped
# `timeout` (exit 1) in a complete file; the tests after it are recorded as
# skipped (its transfers may still be in flight): a missed deadline is a
# result, never a hang.
source "$(dirname "$0")/lib.bash"
cat > "$scratch/deadline.yaml" <<'YAML'
name: deadline
tests:
  - name: too-slow
    kind: bandwidth
    sizes: [4MiB]
    window: 64
    iterations: 1000
    timeout: 50ms
  - name: after
    kind: latency
    sizes: [8]
    iterations: 100
    timeout: 30s
YAML
rc=0
run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/deadline.yaml" --output "$scratch/d.h5" --no-progress \
  > "$scratch/out" 2>&1 || rc=$?
[ $rc -eq 1 ] || { echo "FAIL: exit $rc, expected 1"; cat "$scratch/out"; exit 1; }
/usr/bin/python3 - "$scratch/d.h5" <<'PY'
import sys, h5py, re
with h5py.File(sys.argv[1], "r") as f:
    assert f.attrs["complete"] == 1 and f.attrs["exit_code"] == 1
    slow, after = f["tests/0000"].attrs, f["tests/0001"].attrs
    assert slow["status"] == "timeout", slow["status"]
    # "rank R (host): 2026-...Z: deadline exceeded while waiting for ..."
    assert re.search(r"rank \d .*\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z: deadline exceeded", slow["error"]), slow["error"]
    assert after["status"] == "skipped" and "missed its deadline" in after["error"], (after["status"], after["error"])
print("deadline: timeout recorded with its timestamp; the rest recorded as skipped")
PY
