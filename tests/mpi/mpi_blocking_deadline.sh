# transports: {mpi: {wait: blocking}}: a test past its deadline fails there with a
# timestamped timeout and the run goes on, as with polled waits (tests/mpi/deadline.sh).
# MPI_Wait has no deadline of its own, so MpiTransport reads the clock every 64 waits.
# A million round trips of 64 KiB (MPI_Wait: above MpiTransport::inlineBytes) take many
# seconds here; the deadline is 300 ms, so a transport that never looks at the clock
# lets the test pass.
source "$(dirname "$0")/lib.bash"
cat > "$scratch/past-deadline.yaml" <<'YAML'
name: mpi-blocking-past-deadline
transports: {mpi: {wait: blocking}}
defaults: {transport: mpi}
tests:
  - {name: endless, kind: latency, sizes: [64KiB], iterations: 1000000, warmup: 0, timeout: 300ms}
  - {name: after, kind: latency, sizes: [8], iterations: 20, warmup: 2, timeout: 30s}
YAML
rc=0
run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/past-deadline.yaml" --output "$scratch/past.h5" \
  --no-progress > "$scratch/past.log" 2>&1 || rc=$?
[ $rc -eq 1 ] || { cat "$scratch/past.log"; echo "FAIL: a blocking test past its deadline: exit $rc, expected 1"; exit 1; }
/usr/bin/python3 - "$scratch/past.h5" <<'PY'
import re
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    status = [f[f"tests/{i:04d}"].attrs["status"] for i in range(2)]
    status = [s.decode() if isinstance(s, bytes) else str(s) for s in status]
    assert status == ["timeout", "passed"], status
    error = f["tests/0000"].attrs["error"]
    error = error.decode() if isinstance(error, bytes) else str(error)
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z: deadline exceeded", error), error
print("blocking waits: a test past its deadline is a timestamped timeout, and the next test runs")
PY
