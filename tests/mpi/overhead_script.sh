# ctest-labels: full
# tests/bench/overhead.sh on tiny runs, so the benchmark script cannot
# rot between the quiet windows it is meant for: it runs every MPI row against its
# reference, keeps the raw figures, gives no verdict on too few rounds, stops at
# --seconds, runs the reference on both sides with --aa, and refuses bad arguments;
# and latency-modes.sh prints every side of the MPI latency split.
# The figures themselves are not judged here (a test machine is busy).
source "$(dirname "$0")/lib.bash"
build=${FABSCOPE_BUILD_DIR:-$FABSCOPE_SOURCE_DIR/build}
bench=$FABSCOPE_SOURCE_DIR/tests/bench/overhead.sh
export READ_ATTRS=$build/tests/bench/fabscope_read_attrs LAT_ITERS=300 BW_ITERS=3
common=(--bin "$FABSCOPE_BIN" --minimal "$build/tests/bench/fabscope_minimal_mpi" --only mpi)
bench_rc() {  # args... -> exit code; output in $scratch/out, $scratch/err
  local rc=0
  timeout --kill-after=10 300 bash "$bench" "$@" >"$scratch/out" 2>"$scratch/err" || rc=$?
  echo "$rc"
}
fail() { echo "--- stdout"; cat "$scratch/out"; echo "--- stderr"; tail -20 "$scratch/err"; echo "FAIL: $*"; exit 1; }

# Six rounds: every MPI row has figures on both sides and a verdict of the method.
rc=$(bench_rc "${common[@]}" --rounds 6 --values "$scratch/v.tsv")
[[ $rc == 0 || $rc == 1 || $rc == 4 ]] || fail "6 rounds: exit $rc (expected 0, 1 or 4)"
grep -q "distribution-free 95% confidence interval" "$scratch/out" || fail "the method is not named"
/usr/bin/python3 - "$scratch/v.tsv" "$scratch/out" <<'PY' || fail "6 rounds: output or values wrong"
import re, sys
vals = {}
for line in open(sys.argv[1]):
    r, row, side, v = line.rstrip("\n").split("\t")
    if v:
        assert float(v) > 0, line
        vals.setdefault((row, side), set()).add(int(r))
for row in ("mpi_lat_p50", "mpi_lat_polled", "mpi_lat_polled_nbc", "mpi_lat_default", "mpi_bw"):
    for side in ("fabscope", "reference"):
        assert vals.get((row, side)) == set(range(1, 7)), (row, side, vals.get((row, side)))
out = open(sys.argv[2]).read()
verdicts = r"(met|MISSED|cannot tell \((busy|at bound)\))"
for label in ("MPI 8 B latency p50", "MPI 8 B lat p50 vs polled", "MPI 4 MiB bw w64 distinct"):
    m = re.search(re.escape(label) + r"\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+([\d.]+)-\s*([\d.]+)\s+[\d.]+%\s+\S+\s+" + verdicts +
                  r" .*6 rounds", out)
    assert m, label
    assert float(m.group(2)) <= float(m.group(1)) <= float(m.group(3)), m.group(0)
assert re.search(re.escape("MPI 8 B lat p50 vs p+nbc") + r".* context ", out), "the libnbc row is context"
assert re.search(re.escape("MPI 8 B lat p50 default") + r".* context ", out), "the default-vs-blocking row is context"
assert out.count(": not run)") == 4, "the UCX rows should say they were not run"
PY

# --seconds: the campaign stops after the first round; one round gives no verdict.
rc=$(bench_rc "${common[@]}" --rounds 8 --seconds 1)
[[ $rc == 4 ]] || fail "--seconds 1: exit $rc (expected 4: cannot tell)"
grep -q "stopping after 1 of 8 rounds" "$scratch/err" || fail "--seconds 1 did not stop the campaign"
grep -q "MPI 8 B latency p50 .*cannot tell (rounds: 1 < 6) .*1 rounds" "$scratch/out" || fail "one round gave a verdict"

# --only mpi-bw: the bandwidth rows alone; the latency rows say they were not run.
rc=$(bench_rc "${common[@]}" --only mpi-bw --rounds 1 --values "$scratch/bw.tsv")
[[ $rc == 4 ]] || fail "--only mpi-bw: exit $rc (expected 4: one round)"
cut -f2 "$scratch/bw.tsv" | sort -u | tr '\n' ' ' | grep -Eqx "mpi_bw (mpi_bw_batch )?" || fail "--only mpi-bw ran rows other than mpi_bw: $(cut -f2 "$scratch/bw.tsv" | sort -u | tr '\n' ' ')"
grep -q "MPI 4 MiB bw w64 distinct .*cannot tell (rounds: 1 < 6)" "$scratch/out" || fail "--only mpi-bw: no bandwidth row"
grep -q "MPI 8 B latency p50 .*: not run)" "$scratch/out" || fail "--only mpi-bw: the latency row should say it was not run"

# --only mpi-lat: the two blocking latency rows alone (their batch row needs OSU).
rc=$(bench_rc "${common[@]}" --only mpi-lat --rounds 1 --values "$scratch/lat.tsv")
[[ $rc == 4 ]] || fail "--only mpi-lat: exit $rc (expected 4: one round)"
cut -f2 "$scratch/lat.tsv" | sort -u | tr '\n' ' ' | grep -Eqx "(mpi_lat_batch )?mpi_lat_p50 " ||
  fail "--only mpi-lat ran rows other than mpi_lat_p50 and mpi_lat_batch: $(cut -f2 "$scratch/lat.tsv" | sort -u | tr '\n' ' ')"
grep -q "MPI 8 B latency p50 .*cannot tell (rounds: 1 < 6)" "$scratch/out" || fail "--only mpi-lat: no latency row"
for label in "MPI 8 B lat p50 vs polled" "MPI 4 MiB bw w64 distinct"; do
  grep -q "$label .*: not run)" "$scratch/out" || fail "--only mpi-lat: '$label' should say it was not run"
done

# --aa: the reference on both sides, said so.
rc=$(bench_rc "${common[@]}" --rounds 1 --aa)
[[ $rc == 4 ]] || fail "--aa: exit $rc (expected 4)"
grep -q "^A/A check: the reference on both sides" "$scratch/out" || fail "--aa does not say it is an A/A check"

# latency-modes.sh (the MPI latency split): one bounded round prints every side.
timeout --kill-after=10 120 env MINIMAL="$build/tests/bench/fabscope_minimal_mpi" \
  bash "$FABSCOPE_SOURCE_DIR/tests/bench/latency-modes.sh" --bin "$FABSCOPE_BIN" --seconds 1 --iters 200 \
  >"$scratch/out" 2>"$scratch/err" || fail "latency-modes.sh failed"
for side in latency latency-send-polled latency-polled latency-polled-nbc latency-persistent fabscope fabscope-blocking; do
  grep -Eq "^$side +[0-9.]+ " "$scratch/out" || fail "latency-modes.sh printed no figure for $side"
done
# --sides: the blocking ping-pong with what fabscope's process has around it (the
# file also closed before the loop), and fabscope with ROMIO and with hdf5=serial;
# an unknown side is refused.
timeout --kill-after=10 120 env MINIMAL="$build/tests/bench/fabscope_minimal_mpi" \
  bash "$FABSCOPE_SOURCE_DIR/tests/bench/latency-modes.sh" --bin "$FABSCOPE_BIN" --seconds 1 --iters 200 \
  --sides latency,latency-nbc,latency-io,latency-nbc-io,latency-io-closed,fabscope-blocking-romio,fabscope-blocking-serial \
  >"$scratch/out" 2>"$scratch/err" || fail "latency-modes.sh --sides failed"
for side in latency latency-nbc latency-io latency-nbc-io latency-io-closed fabscope-blocking-romio fabscope-blocking-serial; do
  grep -Eq "^$side +[0-9.]+ " "$scratch/out" || fail "latency-modes.sh --sides printed no figure for $side"
done
! grep -Eq "^fabscope-blocking +[0-9.]+ " "$scratch/out" || fail "latency-modes.sh --sides ran a side it was not given"
rc=0; bash "$FABSCOPE_SOURCE_DIR/tests/bench/latency-modes.sh" --sides latency,nope >"$scratch/out" 2>"$scratch/err" || rc=$?
[[ $rc == 2 ]] && grep -q "unknown side 'nope'" "$scratch/err" || fail "latency-modes.sh --sides nope: exit $rc"

# Bad arguments: exit 2 with a line that says what was expected.
for bad in "--rounds x" "--rounds 0" "--only nccl" "--seconds soon" "--cpus 1" "--frobnicate"; do
  # shellcheck disable=SC2086
  rc=$(bench_rc "${common[@]}" $bad)
  [[ $rc == 2 ]] || fail "'$bad': exit $rc (expected 2)"
  [[ -s $scratch/err ]] || fail "'$bad': nothing said"
done
echo "overhead script: rows, values, --seconds, --aa and refusals checked"
