# The run's closing line is the verdict: the same line `accept` and `verdict
# --brief` print for the file, computed by the analysis; the run's exit code does
# not change with it. Criteria the run meets give PASS, criteria it cannot meet
# FAIL (both named by the scenario, so the verdict does not depend on how loaded
# this machine is). Without the analysis it says it could not compute it and how
# to get it; --no-verdict leaves it out.
source "$(dirname "$0")/lib.bash"
unset FABSCOPE_CLOSING_VERDICT  # the test environment turns it off for the other tests
fail() { echo "FAIL: $*" >&2; exit 1; }
analysis() { PYTHONPATH="$FABSCOPE_SOURCE_DIR/analysis" /usr/bin/python3 -m fabscope_analysis "$@"; }
# A small scenario, alone and naming criteria NAME.yaml (next to it, in $scratch).
cat > "$scratch/small.yaml" <<'YAML'
name: verdict-check
tests:
  - {name: p2p-latency, kind: latency, pattern: pairs, sizes: [8, 1KiB], iterations: 20, warmup: 2, timeout: 60s}
YAML
scenario_with() {
  { echo "criteria: $1.yaml"; cat "$scratch/small.yaml"; } > "$scratch/small-$1.yaml"
}
cat > "$scratch/met.yaml" <<'YAML'
fabscope_criteria: 1
require_complete: true
allowed_status: [passed]
allow_validity: true  # a busy or oversubscribed machine says nothing of the verdict's path
rules:
  - name: every test measured
    match: {kind: "*"}
    limits:
      samples: {min: 1}
YAML
cat > "$scratch/unmet.yaml" <<'YAML'
fabscope_criteria: 1
require_complete: true
allowed_status: [passed]
allow_validity: true  # a busy or oversubscribed machine says nothing of the verdict's path
rules:
  - name: more samples than any run takes
    match: {kind: "*"}
    limits:
      samples: {min: 1000000000}
YAML
scenario_with met
scenario_with unmet
run() {  # run NAME SCENARIO EXTRA...: stdout in $scratch/NAME.log
  local name=$1 scenario=$2; shift 2
  set +e
  run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scenario" \
    --output "$scratch/$name.h5" --no-progress "$@" >"$scratch/$name.log"
  rc=$?
  set -e
}
# outcome-contract: fabscope run | 0 | verdict: PASS
# outcome-contract: fabscope run | 0 | verdict: FAIL
for criteria in met unmet; do
  run "$criteria" "$scratch/small-$criteria.yaml"
  # Exit code: the measurement's (0), whatever the verdict says.
  ((rc == 0)) || { tail -20 "$scratch/$criteria.log"; fail "the run with criteria $criteria exited $rc"; }
  last=$(tail -n 1 "$scratch/$criteria.log")
  expected=PASS expected_rc=0
  [[ $criteria == unmet ]] && expected=FAIL expected_rc=1
  [[ $last == "verdict: $expected ("*"criteria $scratch/$criteria.yaml, named by scenario verdict-check)" ]] \
    || { tail -5 "$scratch/$criteria.log"; fail "criteria $criteria: the last line is not a $expected verdict: $last"; }
  set +e; accept=$(analysis accept "$scratch/$criteria.h5" | tail -n 1); accept_rc=$?; set -e
  [[ $accept == "$last" ]] || fail "accept says '$accept', the run said '$last'"
  ((accept_rc == expected_rc)) || fail "accept exited $accept_rc on the $expected verdict"
  [[ $(analysis verdict "$scratch/$criteria.h5" --brief) == "$last" ]] \
    || fail "verdict --brief differs from the run's line"
  echo "closing line agrees with accept: $last"
done

# outcome-contract: fabscope run | 0 | verdict: CANNOT TELL
# A rule that cannot tell on any machine: the latency test passes, but the reference test's
# tool is not there (skipped), so a rule bounding the reference ratio cannot tell. The run
# exits 0 (the measurement ran) and closes with CANNOT TELL; accept exits 1 on the same line.
cat > "$scratch/cannot-tell.yaml" <<'YAML'
fabscope_criteria: 1
require_complete: true
allowed_status: [passed]
allow_validity: true  # a busy or oversubscribed machine says nothing of the verdict's path
rules:
  - name: every latency test measured
    match: {kind: latency}
    limits:
      samples: {min: 1}
  - name: agrees with its reference tool
    match: {kind: reference}
    reference_ratio_max: 2
YAML
{ echo "criteria: cannot-tell.yaml"; cat "$scratch/small.yaml"
  echo "  - {name: ref, kind: reference, sizes: [8], iterations: 20}"; } > "$scratch/small-cannot-tell.yaml"
run cannot-tell "$scratch/small-cannot-tell.yaml" --set ref.program=/nonexistent/ucx_perftest
((rc == 0)) || { tail -20 "$scratch/cannot-tell.log"; fail "the run whose rule cannot tell exited $rc (the measurement ran: 0)"; }
last=$(tail -n 1 "$scratch/cannot-tell.log")
[[ $last == "verdict: CANNOT TELL ("*"1 check cannot tell (agrees with its reference tool); criteria $scratch/cannot-tell.yaml, named by scenario verdict-check)" ]] \
  || { tail -5 "$scratch/cannot-tell.log"; fail "a rule that cannot tell: the last line is: $last"; }
set +e; accept=$(analysis accept "$scratch/cannot-tell.h5" | tail -n 1); accept_rc=$?; set -e
[[ $accept == "$last" ]] || fail "accept says '$accept', the run said '$last'"
((accept_rc == 1)) || fail "accept exited $accept_rc on the CANNOT TELL verdict, expected 1"
echo "closing line agrees with accept: $last"

# outcome-contract: fabscope run | 0 | verdict: not computed here
FABSCOPE_PYTHON=/nonexistent/python3 run without "$scratch/small.yaml"  # ranks inherit mpirun's environment
((rc == 0)) || fail "a run whose verdict cannot be computed exited $rc (the measurement ran: 0)"
last=$(tail -n 1 "$scratch/without.log")
not_computed="verdict: not computed here (python3 -m fabscope_analysis: cannot start /nonexistent/python3:"
not_computed+=" No such file or directory); get it with: python3 -m fabscope_analysis verdict $scratch/without.h5"
[[ $last == "$not_computed" ]] \
  || fail "without Python the closing line is: $last"

run off "$scratch/small.yaml" --no-verdict
grep -q "^verdict:" "$scratch/off.log" && fail "--no-verdict still printed a verdict"
[[ $(tail -n 1 "$scratch/off.log") == "result file: $scratch/off.h5 (complete)" ]] || fail "--no-verdict: the last line is not the result file"
# The environment's switch: off is --no-verdict, a wrong value is bad usage (exit 2), named.
FABSCOPE_CLOSING_VERDICT=off run env-off "$scratch/small.yaml"
grep -q "^verdict:" "$scratch/env-off.log" && fail "FABSCOPE_CLOSING_VERDICT=off still printed a verdict"
((rc == 0)) || fail "FABSCOPE_CLOSING_VERDICT=off: the run exited $rc"
FABSCOPE_CLOSING_VERDICT=on run env-on "$scratch/small.yaml"
grep -q "^verdict: " "$scratch/env-on.log" || fail "FABSCOPE_CLOSING_VERDICT=on printed no verdict"
FABSCOPE_CLOSING_VERDICT=maybe run env-bad "$scratch/small.yaml" 2>"$scratch/env-bad.err"
((rc == 2)) || fail "FABSCOPE_CLOSING_VERDICT=maybe: exit $rc, expected 2 (bad usage)"
grep -q "FABSCOPE_CLOSING_VERDICT is 'maybe': expected off, 0, on or 1" "$scratch/env-bad.err" "$scratch/env-bad.log" \
  || fail "FABSCOPE_CLOSING_VERDICT=maybe: no error naming the variable and what is expected"
echo "PASS: the closing verdict is accept's, PASS, FAIL and CANNOT TELL as the criteria say; without the analysis it says so;" \
  "--no-verdict and FABSCOPE_CLOSING_VERDICT=off leave it out, a bad value of it is refused"
