# The command line itself: help, version, usage errors and the output-file rules.
# ctest-labels: shares-machine
# (it checks files, messages or packages, not time: tests/run runs two such tests at a time)
source "$(dirname "$0")/lib.bash"
expect_rc() { local want=$1; shift; local rc=0; "$@" > "$scratch/out" 2>&1 || rc=$?; [ $rc -eq "$want" ] || { echo "FAIL: '$*' exit $rc, expected $want"; cat "$scratch/out"; exit 1; }; }
expect_rc 0 "$FABSCOPE_BIN" --help
grep -q "Exit codes" "$scratch/out"
grep -q "mpirun -np 4" "$scratch/out"
expect_rc 0 "$FABSCOPE_BIN" run --help
grep -q -- "--set" "$scratch/out"
grep -q "Example" "$scratch/out"
expect_rc 0 "$FABSCOPE_BIN" --version
grep -q "^fabscope [0-9]" "$scratch/out"
expect_rc 2 "$FABSCOPE_BIN"
expect_rc 2 "$FABSCOPE_BIN" frobnicate
expect_rc 2 "$FABSCOPE_BIN" run --no-such-option
# Test hooks are explicit options, listed apart; an unknown one is a usage error.
expect_rc 0 "$FABSCOPE_BIN" run --help
grep -q "Self-test options (for fabscope's own tests)" "$scratch/out"
grep -q -- "--self-test HOOK" "$scratch/out"
expect_rc 2 "$FABSCOPE_BIN" run --self-test no-such-hook
grep -q "unknown hook; known: corrupt-rank=N, corrupt-sender=N, kv-corrupt, kv-corrupt=P:K, kv-in-order" "$scratch/out"
expect_rc 2 "$FABSCOPE_BIN" run --self-test corrupt-rank=two
grep -q "expected corrupt-rank=N" "$scratch/out"
expect_rc 0 "$FABSCOPE_BIN" list --scenario "$FABSCOPE_SOURCE_DIR/scenarios/smoke.yaml" --ranks 8
grep -q "all-pairs, 7 rounds" "$scratch/out"
! grep -q "transport settings" "$scratch/out" || { echo "FAIL: list named transport settings the smoke scenario does not give"; exit 1; }
# A dry run names the transport keys the scenario gives, and where it gave them.
printf 'transports:\n  mpi: {wait: blocking}\n  verbs: {max_rd_atomic: 4}\ntests:\n  - {kind: latency, sizes: [8]}\n' > "$scratch/keys.yaml"
expect_rc 0 "$FABSCOPE_BIN" list --scenario "$scratch/keys.yaml" --ranks 2
grep -qF "transport settings: mpi wait=blocking ($scratch/keys.yaml:2:15); verbs max_rd_atomic=4 ($scratch/keys.yaml:3:26)" "$scratch/out"
# An existing output file is never overwritten by accident.
echo "precious" > "$scratch/exists.h5"
expect_rc 2 run_mpi -np 2 "$FABSCOPE_BIN" run --output "$scratch/exists.h5"
grep -q "already exists" "$scratch/out"
grep -q precious "$scratch/exists.h5"
expect_rc 2 run_mpi -np 2 "$FABSCOPE_BIN" run --output "$scratch/no/such/folder/x.h5"
grep -q "does not exist" "$scratch/out"
# A symbolic link at the output path is never written through, --overwrite or not;
# --overwrite replaces a regular file only.
ln -s "$scratch/exists.h5" "$scratch/link.h5"
for flag in "" --overwrite; do
  expect_rc 2 run_mpi -np 2 "$FABSCOPE_BIN" run --output "$scratch/link.h5" $flag
  grep -q "is a symbolic link" "$scratch/out"
  grep -q precious "$scratch/exists.h5"
done
mkfifo "$scratch/fifo.h5"
expect_rc 2 run_mpi -np 2 "$FABSCOPE_BIN" run --output "$scratch/fifo.h5" --overwrite
grep -q "replaces only a regular file" "$scratch/out"
expect_rc 0 run_mpi -np 2 "$FABSCOPE_BIN" run --output "$scratch/exists.h5" --overwrite --set iterations=5 --no-verdict
if grep -q precious "$scratch/exists.h5"; then echo "FAIL: --overwrite left the old file"; exit 1; fi
/usr/bin/python3 -c 'import h5py, sys; f = h5py.File(sys.argv[1], "r"); assert f.attrs["complete"] == 1' "$scratch/exists.h5"
# A usage error under mpirun: rank 0 says it once, every rank exits 2 without
# MPI_Abort (so no "MPI_ABORT was invoked" from Open MPI), nothing is written.
# The last case is found only with the run's ranks (an incast condition with no
# ranks left to make the load): it used to surface mid-run as a runtime failure
# (exit 3, MPI_Abort, a partial file).
usage_error_under_mpirun() {  # expected-text output-file args...
  local text=$1 output=$2; shift 2
  expect_rc 2 run_mpi -np 2 "$FABSCOPE_BIN" "$@"
  grep -q -- "$text" "$scratch/out" || { echo "FAIL: '$*': no '$text'"; cat "$scratch/out"; exit 1; }
  ! grep -q "MPI_ABORT was invoked" "$scratch/out" || { echo "FAIL: '$*': MPI_Abort on a usage error"; cat "$scratch/out"; exit 1; }
  ! grep -q "runtime failure" "$scratch/out" || { echo "FAIL: '$*': a usage error reported as a runtime failure"; cat "$scratch/out"; exit 1; }
  [ "$(grep -c "fabscope: error" "$scratch/out")" = 1 ] || { echo "FAIL: '$*': the error not said once, by rank 0"; cat "$scratch/out"; exit 1; }
  [ -z "$output" ] || [ ! -e "$output" ] || { echo "FAIL: '$*' left $output"; exit 1; }
}
usage_error_under_mpirun "the output file already exists" "" run --output "$scratch/exists.h5" --no-verdict
usage_error_under_mpirun "error: --set conditions=.quiet, incast.: test 'p2p-latency' under condition 'incast' needs at least 2 congestor ranks" \
  "$scratch/incast.h5" run --scenario "$FABSCOPE_SOURCE_DIR/scenarios/smoke.yaml" --set 'conditions=[quiet, incast]' \
  --output "$scratch/incast.h5" --no-progress --no-verdict
# A test that needs 2 ranks refuses to start on 1.
expect_rc 2 "$FABSCOPE_BIN" run --scenario "$FABSCOPE_SOURCE_DIR/scenarios/smoke.yaml" --output "$scratch/one.h5"
grep -q "needs at least 2 ranks" "$scratch/out"
[ ! -e "$scratch/one.h5" ]
# A manifest that does not parse stops the run before anything is measured.
for bad in bad-protocol unknown-key syntax-error; do
  expect_rc 2 run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$FABSCOPE_SOURCE_DIR/scenarios/smoke.yaml" \
    --output "$scratch/m-$bad.h5" --manifest "$FABSCOPE_SOURCE_DIR/tests/data/manifests/$bad.yaml"
  grep -q "manifests/$bad.yaml:[0-9]*:[0-9]*: " "$scratch/out" || { echo "FAIL: manifest $bad: no file:line:column"; cat "$scratch/out"; exit 1; }
  [ ! -e "$scratch/m-$bad.h5" ] || { echo "FAIL: manifest $bad left a result file"; exit 1; }
done
echo "cli: ok"
