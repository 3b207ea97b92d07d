# The run's closing line is the verdict: the same line `accept` and
# `verdict --brief` print for the file, computed by the analysis; the run's exit
# code does not change with it. Without the analysis it says it could not compute
# it and how to get it; --no-verdict leaves it out.
source "$(dirname "$0")/lib.bash"
fail() { echo "FAIL: $*" >&2; exit 1; }
analysis() { PYTHONPATH="$FABSCOPE_SOURCE_DIR/analysis" /usr/bin/python3 -m fabscope_analysis "$@"; }
run() {  # run NAME EXTRA...: the smoke scenario, small, stdout in $scratch/NAME.log
  local name=$1; shift
  set +e
  run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$FABSCOPE_SOURCE_DIR/scenarios/smoke.yaml" --set iterations=20 \
    --output "$scratch/$name.h5" --no-progress "$@" >"$scratch/$name.log"
  rc=$?
  set -e
}
run with
((rc == 0)) || { tail -20 "$scratch/with.log"; fail "the run exited $rc"; }
last=$(tail -n 1 "$scratch/with.log")
[[ $last == "verdict: "* ]] || { tail -5 "$scratch/with.log"; fail "the run's last line is not a verdict: $last"; }
set +e; accept=$(analysis accept "$scratch/with.h5" | tail -n 1); accept_rc=$?; set -e
[[ $accept == "$last" ]] || fail "accept says '$accept', the run said '$last'"
[[ $(analysis verdict "$scratch/with.h5" --brief) == "$last" ]] || fail "verdict --brief differs from the run's line"
# Exit code: the measurement's (0), whatever the verdict says.
echo "closing line agrees with accept: $last"

FABSCOPE_PYTHON=/nonexistent/python3 run without  # ranks inherit mpirun's environment
((rc == 0)) || fail "a run whose verdict cannot be computed exited $rc (the measurement ran: 0)"
last=$(tail -n 1 "$scratch/without.log")
[[ $last == "verdict: not computed here (python3 -m fabscope_analysis: exit 127"*"get it with: python3 -m fabscope_analysis verdict $scratch/without.h5" ]] \
  || fail "without Python the closing line is: $last"

run off --no-verdict
grep -q "^verdict:" "$scratch/off.log" && fail "--no-verdict still printed a verdict"
[[ $(tail -n 1 "$scratch/off.log") == "result file: $scratch/off.h5 (complete)" ]] || fail "--no-verdict: the last line is not the result file"
echo "PASS: the closing verdict is accept's; without the analysis it says so; --no-verdict leaves it out"
