# A fault-tolerant launch (mpirun --mca orte_abort_on_non_zero_status 0) ends
# on rank 0's result line, not on mpirun's status: mpirun ends 0 even when
# every rank exits 2, and non-zero after a rank was lost on purpose. After a
# drill the line comes only once the survivors closed a complete file.
#
# Open MPI 4.1's mpirun may also never end after the ranks have: seen here
# with a rank stopped (SIGSTOP) and continued during the run, then a rank
# killed, then the others exiting 1: every rank gone, mpirun waiting in poll()
# for ever (a 10-line MPI program does the same; with exit 0 it ends). So once
# the result line is out, mpirun gets FABSCOPE_RESULT_GRACE_S (default 40 s:
# past the 30 s the survivors themselves allow one another to close) to end,
# and is then ended (SIGTERM, SIGKILL 10 s later); the result line stands.
#
#   run_for_result_line NAME COMMAND...
# Runs COMMAND (its stdout also goes to ours) and sets RESULT_LINE_CODE: the
# result line's exit code; without one mpirun's status, or 3 when that is 0
# (fabscope printed no result). NAME prefixes what this says.
#
#   result_line_grace
# Prints the grace in seconds, or says what is wrong with FABSCOPE_RESULT_GRACE_S and
# returns 2: the wrappers check it (and print it) before they start anything.
result_line_grace() {
  local grace=${FABSCOPE_RESULT_GRACE_S:-40}
  if [[ ! $grace =~ ^[1-9][0-9]{0,5}$ ]]; then
    echo "FABSCOPE_RESULT_GRACE_S must be a whole number of seconds from 1 to 999999, got '$grace'"
    return 2
  fi
  echo "$grace"
}

# shellcheck disable=SC2034  # RESULT_LINE_CODE is the caller's
run_for_result_line() {
  local name=$1 grace copy pid seen_at=0 status code
  grace=$(result_line_grace) || { echo "$name: error: $grace" >&2; RESULT_LINE_CODE=2; return 0; }
  shift
  copy=$(mktemp)  # in $TMPDIR, else /tmp
  "$@" > >(tee "$copy") &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if ((seen_at == 0)) && grep -q '^fabscope: result: exit code' "$copy"; then
      seen_at=$SECONDS
    elif ((seen_at > 0 && SECONDS - seen_at >= grace)); then
      echo "$name: mpirun had not ended ${grace} s after fabscope's result line (every rank should have): ending it" >&2
      kill -TERM "$pid" 2>/dev/null
      for _ in 1 2 3 4 5 6 7 8 9 10; do
        kill -0 "$pid" 2>/dev/null || break
        sleep 1
      done
      kill -KILL "$pid" 2>/dev/null
      break
    fi
    sleep 1
  done
  # (Callers may run under set -e: a non-zero status is data here.)
  wait "$pid" && status=0 || status=$?
  wait || true  # the tee (bash >= 5.1 waits for the last process substitution too)
  code=$(sed -n 's/^fabscope: result: exit code \([0-9]\+\).*/\1/p' "$copy" | tail -n 1)
  rm -f "$copy"
  if [[ -n $code ]]; then
    ((code == status)) || echo "$name: mpirun ended with $status; fabscope's result: exit code $code"
    RESULT_LINE_CODE=$code
  elif ((status == 0)); then
    echo "$name: mpirun ended 0 but fabscope printed no result line: exit code 3" >&2
    RESULT_LINE_CODE=3
  else
    RESULT_LINE_CODE=$status
  fi
}
