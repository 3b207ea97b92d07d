# The point-to-point and incast data checks can fail: with the test key
# corrupt_for_test every sender flips one byte of its message, and the
# receivers must notice it (test status failed, the error names the byte, run
# exit 1, the error starts with a UTC timestamp and the rank). The same scenario without the key passes, so the check is what fails.
# Then one sender at a time (--self-test corrupt-sender=N): the check covers every pair.
source "$(dirname "$0")/lib.bash"
write_scenario() {
  cat > "$scratch/$1.yaml" <<YAML
name: data-check-$1
tests:
  - {name: lat, kind: latency, sizes: [4KiB], iterations: 5, warmup: 1, timeout: 60s, corrupt_for_test: $2}
  - {name: bw, kind: bandwidth, sizes: [64KiB], window: 2, iterations: 5, warmup: 1, timeout: 60s, corrupt_for_test: $2}
  - {name: bibw, kind: bibw, sizes: [64KiB], window: 2, iterations: 5, warmup: 1, timeout: 60s, corrupt_for_test: $2}
  - {name: incast, kind: incast, sizes: [64KiB], window: 2, iterations: 5, warmup: 1, timeout: 60s, corrupt_for_test: $2}
YAML
}
write_scenario clean false
write_scenario corrupt true
run_mpi -np 3 "$FABSCOPE_BIN" run --scenario "$scratch/clean.yaml" --output "$scratch/clean.h5" --no-progress > "$scratch/clean.out" 2>&1 \
  || { cat "$scratch/clean.out"; echo "FAIL: the uncorrupted run failed"; exit 1; }
rc=0
run_mpi -np 3 "$FABSCOPE_BIN" run --scenario "$scratch/corrupt.yaml" --output "$scratch/corrupt.h5" --no-progress > "$scratch/corrupt.out" 2>&1 || rc=$?
[[ $rc == 1 ]] || { cat "$scratch/corrupt.out"; echo "FAIL: one wrong byte per message gave exit $rc, expected 1"; exit 1; }
/usr/bin/python3 - "$scratch/clean.h5" "$scratch/corrupt.h5" <<'PY'
import re, sys, h5py
def text(v): return v.decode() if isinstance(v, bytes) else str(v)
for path, corrupt in ((sys.argv[1], False), (sys.argv[2], True)):
    with h5py.File(path, "r") as f:
        tests = {text(g.attrs["name"]): g.attrs for g in f["tests"].values()}
        assert set(tests) == {"lat", "bw", "bibw", "incast"}, sorted(tests)
        for name, a in tests.items():
            status, error = text(a["status"]), text(a["error"])
            if corrupt:
                assert status == "failed", f"{name}: status {status} with a corrupted byte"
                assert "wrong at byte" in error, f"{name}: error '{error}'"
                assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z: rank \d", error), f"{name}: no timestamp/rank: '{error}'"
            else:
                assert status == "passed", f"{name}: status {status}: {error}"
print("data_check: a flipped byte fails latency, bandwidth, bidirectional-bandwidth and incast; clean runs pass")
PY

# Every pair's data is checked, not only the first pair's: with --self-test
# corrupt-sender=N world rank N alone spoils what it sends; every test in which
# N sends (all pairs: every rank; incast: ranks 1 and 2 send to rank 0) must fail
# naming rank N as the sender, the others must pass.
cat > "$scratch/sweep.yaml" <<YAML
name: data-check-senders
tests:
  - {name: lat, kind: latency, pattern: all-pairs, sizes: [4KiB], iterations: 5, warmup: 1, timeout: 60s}
  - {name: bw, kind: bandwidth, pattern: all-pairs, sizes: [64KiB], window: 2, iterations: 5, warmup: 1, timeout: 60s}
  - {name: bibw, kind: bibw, pattern: all-pairs, sizes: [64KiB], window: 2, iterations: 5, warmup: 1, timeout: 60s}
  - {name: incast, kind: incast, probe: false, sizes: [64KiB], window: 2, iterations: 5, warmup: 1, timeout: 60s}
YAML
for sender in 0 2; do
  rc=0
  run_mpi -np 3 "$FABSCOPE_BIN" run --self-test corrupt-sender=$sender --scenario "$scratch/sweep.yaml" \
    --output "$scratch/sweep-$sender.h5" --no-progress > "$scratch/sweep.out" 2>&1 || rc=$?
  [[ $rc == 1 ]] || { cat "$scratch/sweep.out"; echo "FAIL: corrupt-sender=$sender gave exit $rc, expected 1"; exit 1; }
  /usr/bin/python3 - "$scratch/sweep-$sender.h5" "$sender" <<'PY'
import sys, h5py
def text(v): return v.decode() if isinstance(v, bytes) else str(v)
sender = int(sys.argv[2])
# All pairs adds a serial retest instance of the same name, skipped once the parallel pass failed: the
# instances that ran are judged.
with h5py.File(sys.argv[1], "r") as f:
    tests = {text(g.attrs["name"]): (text(g.attrs["status"]), text(g.attrs["error"])) for g in f["tests"].values()
             if text(g.attrs["status"]) != "skipped"}
assert set(tests) == {"lat", "bw", "bibw", "incast"}, sorted(tests)
for name, (status, error) in tests.items():
    if name == "incast" and sender == 0:  # the incast's receiver: it sends nothing to spoil
        assert status == "passed", f"corrupt-sender=0: incast {status}: {error}"
        continue
    assert status == "failed", f"corrupt-sender={sender}: {name} {status} with rank {sender}'s byte spoiled"
    assert f"data from rank {sender} wrong at byte" in error, f"corrupt-sender={sender}: {name}: error '{error}'"
print(f"data_check: corrupt-sender={sender} fails every test rank {sender} sends in, naming it")
PY
done
