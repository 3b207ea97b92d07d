# Contract tests of fabscope run, list and quickcheck and of the wrappers
# (launch/fabscope-mpirun, launch/fabscope-fit): for each outcome row of the docs' tables
# claimed below (tests/structure/check_outcome_contracts.py), the exact exit code and the
# exact closing line. The third outcomes are the point: a run that exits 1 still ends with
# its verdict (FAIL), a refused run or wrapper exits 2 with no file and no verdict, and
# fabscope-fit says CANNOT TELL (exit 1) when the run measured too little to judge.
# Runs of 2 ranks, a few iterations: seconds each. Exit 3 (a runtime failure) needs a full
# disk, root: tests/system/contract_runtime_failure.sh.
source "$(dirname "$0")/lib.bash"
unset FABSCOPE_CLOSING_VERDICT  # the test environment turns the closing verdict off
fail() { echo "FAIL: $*" >&2; exit 1; }
# run_as NAME CMD...: stdout in $scratch/NAME.out, stderr in NAME.err, exit code in $rc.
# Bounded: run_mpi by itself, anything else with `bounded`.
run_as() {
  local name=$1
  shift
  rc=0
  "$@" >"$scratch/$name.out" 2>"$scratch/$name.err" || rc=$?
}
bounded() { timeout --kill-after=10 300 "$@"; }
last_line() { tail -n 1 "$scratch/$1.out"; }
show() { echo "--- $1: exit $rc"; tail -n 8 "$scratch/$1.out" "$scratch/$1.err" >&2; }
# Criteria every run that measured meets (a busy machine says nothing of the verdict's path).
cat >"$scratch/met.yaml" <<'YAML'
fabscope_criteria: 1
require_complete: true
allowed_status: [passed]
allow_validity: true
rules:
  - name: every test measured
    match: {kind: "*"}
    limits:
      samples: {min: 1}
YAML
# scenario NAME CORRUPT: one latency test naming the criteria above; CORRUPT=true makes
# every sender flip a byte, so the data check fails (exit 1).
scenario() {
  cat >"$scratch/$1.yaml" <<YAML
name: contract-$1
criteria: met.yaml
tests:
  - {name: lat, kind: latency, sizes: [4KiB], iterations: 5, warmup: 1, timeout: 60s, corrupt_for_test: $2}
YAML
}
scenario good false
scenario corrupt true
printf 'name: contract-bad\ntests:\n  - {name: lat, kind: latency, sizes: [4KiB], iterations: -5}\n' \
  >"$scratch/bad.yaml"

# outcome-contract: fabscope run | 1 | verdict: FAIL
run_as run-corrupt run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/corrupt.yaml" \
  --output "$scratch/run-corrupt.h5" --no-progress
((rc == 1)) || { show run-corrupt; fail "fabscope run with a corrupted byte exited $rc, expected 1"; }
[[ $(last_line run-corrupt) == "verdict: FAIL ("*" checks failed: status; criteria $scratch/met.yaml, named by scenario contract-corrupt)" ]] \
  || { show run-corrupt; fail "fabscope run that exited 1: the last line is '$(last_line run-corrupt)'"; }

# outcome-contract: fabscope run | 2 | —
run_as run-bad run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/bad.yaml" --output "$scratch/run-bad.h5" \
  --no-progress
((rc == 2)) || { show run-bad; fail "fabscope run of a refused scenario exited $rc, expected 2"; }
grep -q "^fabscope: error: $scratch/bad.yaml:3:" "$scratch/run-bad.err" || { show run-bad; fail "no error naming bad.yaml:3"; }
! grep -q "^verdict:" "$scratch/run-bad.out" || fail "a refused run printed a verdict"
[[ ! -e $scratch/run-bad.h5 ]] || fail "a refused run left $scratch/run-bad.h5"

# outcome-contract: fabscope list | 0 | —
run_as list-good bounded "$FABSCOPE_BIN" list --scenario "$scratch/good.yaml" --ranks 2
((rc == 0)) || { show list-good; fail "fabscope list exited $rc, expected 0"; }
grep -q "^estimated time: " "$scratch/list-good.out" || { show list-good; fail "fabscope list printed no estimate"; }
# outcome-contract: fabscope list | 2 | —
run_as list-bad bounded "$FABSCOPE_BIN" list --scenario "$scratch/bad.yaml" --ranks 2
((rc == 2)) || { show list-bad; fail "fabscope list of a refused scenario exited $rc, expected 2"; }
grep -q "^fabscope: error: $scratch/bad.yaml:3:" "$scratch/list-bad.err" || { show list-bad; fail "list: no error naming bad.yaml:3"; }

# outcome-contract: fabscope quickcheck | 2 | —
run_as qc-bad bounded "$FABSCOPE_BIN" quickcheck --state-dir "$scratch/qc" --manifest "$scratch/no-such-manifest.yaml"
((rc == 2)) || { show qc-bad; fail "quickcheck with an unreadable manifest exited $rc, expected 2"; }
[[ ! -s $scratch/qc-bad.out ]] || { show qc-bad; fail "quickcheck's refusal printed on stdout (a drain reason)"; }
grep -q "no-such-manifest.yaml" "$scratch/qc-bad.err" || { show qc-bad; fail "quickcheck's refusal does not name the manifest"; }

# The wrapper: fabscope's exit code and closing line come through.
mpirun_wrapper=(bounded "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" -np 2 --bind none --bin "$FABSCOPE_BIN" --)
# outcome-contract: launch/fabscope-mpirun | 0 | verdict: PASS
run_as wrap-good "${mpirun_wrapper[@]}" run --scenario "$scratch/good.yaml" --output "$scratch/wrap-good.h5" --no-progress
((rc == 0)) || { show wrap-good; fail "fabscope-mpirun of a clean run exited $rc, expected 0"; }
[[ $(last_line wrap-good) == "verdict: PASS ("*" checks passed; criteria $scratch/met.yaml, named by scenario contract-good)" ]] \
  || { show wrap-good; fail "fabscope-mpirun, clean run: the last line is '$(last_line wrap-good)'"; }
# outcome-contract: launch/fabscope-mpirun | 1 | verdict: FAIL
run_as wrap-corrupt "${mpirun_wrapper[@]}" run --scenario "$scratch/corrupt.yaml" --output "$scratch/wrap-corrupt.h5" \
  --no-progress
((rc == 1)) || { show wrap-corrupt; fail "fabscope-mpirun of a failing run exited $rc, expected 1"; }
[[ $(last_line wrap-corrupt) == "verdict: FAIL ("*" checks failed: status; criteria $scratch/met.yaml, named by scenario contract-corrupt)" ]] \
  || { show wrap-corrupt; fail "fabscope-mpirun, failing run: the last line is '$(last_line wrap-corrupt)'"; }
# outcome-contract: launch/fabscope-mpirun | 2 | —
run_as wrap-option bounded "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" --no-such-option -- run --scenario "$scratch/good.yaml"
((rc == 2)) || { show wrap-option; fail "fabscope-mpirun with an unknown option exited $rc, expected 2"; }
grep -q "^fabscope-mpirun: error: unknown option '--no-such-option'" "$scratch/wrap-option.err" \
  || { show wrap-option; fail "fabscope-mpirun: no error naming the option"; }
run_as wrap-bad "${mpirun_wrapper[@]}" run --scenario "$scratch/bad.yaml" --output "$scratch/wrap-bad.h5" --no-progress
((rc == 2)) || { show wrap-bad; fail "fabscope-mpirun of a refused scenario exited $rc, expected 2"; }
! grep -q "^verdict:" "$scratch/wrap-bad.out" || fail "fabscope-mpirun: a refused run printed a verdict"
[[ ! -e $scratch/wrap-bad.h5 ]] || fail "fabscope-mpirun: a refused run left a file"

# fabscope-fit, plan -> run -> fit, on 2 ranks with 3 iterations per test: too few TP
# all-reduces for a per-token figure and no congested condition, so fit cannot tell.
# outcome-contract: launch/fabscope-fit | 1 | CANNOT TELL
# (--no-calibrate: the --set lines size this run by hand, the probe's estimate is not tested here)
run_as fit-thin bounded env FABSCOPE_BIN="$FABSCOPE_BIN" "$FABSCOPE_SOURCE_DIR/launch/fabscope-fit" --dir "$scratch/fit" \
  --no-calibrate --model llama3-8b --tp 2 --ranks 2 --ranks-per-node 2 --conditions quiet --slo itl_p99=50ms \
  --prefill-chunk none --prompt 64 --set iterations=3 --set warmup=1 -- --bind none
((rc == 1)) || { show fit-thin; fail "fabscope-fit with too few operations exited $rc, expected 1"; }
grep -Eq "^fit llama3-8b TP2 .*\): CANNOT TELL: [a-z0-9_; ]+( \[placement: [^]]*\])?( \[paths: [^]]*\])?$" "$scratch/fit-thin.out" \
  || { show fit-thin; fail "fabscope-fit: no 'fit ...: CANNOT TELL: CHECKS' line"; }
[[ $(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$scratch/fit/fit.json") == "CANNOT TELL" ]] \
  || fail "fabscope-fit: fit.json's verdict is not CANNOT TELL"
echo "PASS: run exit 1 ends 'verdict: FAIL', refusals exit 2 with no file or verdict (run, list, quickcheck," \
  "fabscope-mpirun), fabscope-mpirun passes 0/1 and the closing line through, fabscope-fit CANNOT TELL exits 1"
