# A test that cannot finish inside its deadline becomes a timestamped
# `timeout` (exit 1) in a complete file, and the run carries on: the tests
# after it run on a fresh data path (its transfers may still be in flight on
# the old one), the file counts the miss (`missed_deadlines`), the closing
# table says so. After more misses than the run recovers from (3), the rest
# is recorded as not run, counted in the file and the closing table.
# A missed deadline is a result, never a hang.
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
    assert after["status"] == "passed", (after["status"], after["error"])
    assert f.attrs["missed_deadlines"] == 1 and f.attrs["not_run_after_missed_deadlines"] == 0
print("deadline: timeout recorded with its timestamp; the next test ran and passed")
PY
grep -q "1 test(s) missed their deadline; each following test ran on a fresh data path$" "$scratch/out" ||
  { echo "FAIL: the closing table does not report the missed deadline"; cat "$scratch/out"; exit 1; }

# Five misses in a row, then a test that could pass: the run recovers three
# times, then stops recovering; the last two are recorded as not run.
cat > "$scratch/many.yaml" <<'YAML'
name: deadline-many
tests:
  - name: too-slow
    kind: bandwidth
    sizes: [4MiB, 8MiB, 16MiB, 32MiB, 64MiB]
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
run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/many.yaml" --output "$scratch/m.h5" --no-progress \
  > "$scratch/out-many" 2>&1 || rc=$?
[ $rc -eq 1 ] || { echo "FAIL: exit $rc, expected 1"; cat "$scratch/out-many"; exit 1; }
/usr/bin/python3 - "$scratch/m.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    status = [f["tests"][g].attrs["status"] for g in sorted(f["tests"])]
    assert status == ["timeout"] * 4 + ["skipped"] * 2, status
    assert "not run: 4 tests missed their deadline" in f["tests/0005"].attrs["error"], f["tests/0005"].attrs["error"]
    assert f.attrs["missed_deadlines"] == 4 and f.attrs["not_run_after_missed_deadlines"] == 2, dict(f.attrs)
print("deadline: after 4 misses the remaining 2 tests are recorded as not run and counted")
PY
grep -q "2 test(s) were NOT RUN" "$scratch/out-many" ||
  { echo "FAIL: the closing table does not count the tests not run"; cat "$scratch/out-many"; exit 1; }
