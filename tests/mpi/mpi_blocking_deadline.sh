# transports: {mpi: {wait: blocking}}: a test past its deadline ends bounded
# (docs/transports.md). Each rank reads the clock every 64 waits (MPI_Wait has no
# deadline of its own) and fails the test at its deadline; a peer left in MPI_Wait
# when the other gave up is ended by the watchdog 10 s later with one line naming
# the rank it waits for (in blocking mode any missed deadline may end the run).
# So: exit 1 with the test a timestamped timeout, or exit 3 with that watchdog line.
# A million round trips of 64 KiB (MPI_Wait: above MpiTransport::inlineBytes) take
# far longer than the 300 ms deadline here: a transport that never reads the clock
# lets the test run on (and pass, or meet this script's 90 s bound).
source "$(dirname "$0")/lib.bash"
cat > "$scratch/past-deadline.yaml" <<'YAML'
name: mpi-blocking-past-deadline
transports: {mpi: {wait: blocking}}
defaults: {transport: mpi}
tests:
  - {name: endless, kind: latency, sizes: [64KiB], iterations: 1000000, warmup: 0, timeout: 300ms}
YAML
rc=0
timeout --kill-after=10 90 mpirun -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/past-deadline.yaml" \
  --output "$scratch/past.h5" --no-progress > "$scratch/past.log" 2>&1 || rc=$?
case $rc in
  1) /usr/bin/python3 - "$scratch/past.h5" <<'PY' || { cat "$scratch/past.log"; exit 1; }
import re
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    a = f["tests/0000"].attrs
    text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
    assert text(a["status"]) == "timeout", text(a["status"])
    assert re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z: deadline exceeded", text(a["error"])), text(a["error"])
PY
     ;;
  3) grep -Eq "rank [01] \([^)]*\): watchdog: still waiting for .* on rank [01] \([^)]*\) .* after its deadline" \
       "$scratch/past.log" || { cat "$scratch/past.log"; echo "FAIL: exit 3 without a watchdog line naming the peer"; exit 1; } ;;
  *) cat "$scratch/past.log"; echo "FAIL: a blocking test past its deadline: exit $rc, expected 1 or 3"; exit 1 ;;
esac
echo "blocking waits: a test past its deadline ended with exit $rc, bounded"
