# transports: {mpi: {wait: blocking}}: a test past its deadline ends the run, bounded
# (docs/transports.md: in blocking mode any missed deadline ends the run). The rank
# that reads the clock (every 64 waits: MPI_Wait has no deadline of its own) fails
# the test at its deadline; its peer, left in MPI_Wait, is ended by the watchdog
# 10 s later with one line naming the rank it waits for, and the job ends with exit 3.
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
[ $rc -eq 3 ] || { cat "$scratch/past.log"; echo "FAIL: a blocking test past its deadline: exit $rc, expected 3"; exit 1; }
grep -Eq "rank [01] \([^)]*\): watchdog: still waiting for .* on rank [01] \([^)]*\) .* after its deadline" \
  "$scratch/past.log" || { cat "$scratch/past.log"; echo "FAIL: no watchdog line naming the peer and its host"; exit 1; }
echo "blocking waits: a test past its deadline ended the run (exit 3), the watchdog naming the peer"
