# Shared by the MPI tests: where things are, and a scratch folder removed on exit.
set -euo pipefail
: "${FABSCOPE_BIN:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/fabscope}"
: "${FABSCOPE_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
scratch=$(mktemp -d /tmp/fabscope-test.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
check_result() { /usr/bin/python3 "$FABSCOPE_SOURCE_DIR/tests/mpi/check_result.py" "$@"; }
# A bounded mpirun: a hang becomes a failure, not a stuck CI job.
run_mpi() { timeout --kill-after=10 300 mpirun "$@"; }
# A command whose output only matters when it fails: kept in LOG, its tail shown
# on failure (CI shows the head of a failing test's output, so a long success
# output would push the failure out of sight).  usage: run_logged LOG CMD...
run_logged() {
  local log=$1 rc=0
  shift
  "$@" > "$log" 2>&1 || rc=$?
  if [[ $rc != 0 ]]; then
    echo "--- last lines of $(basename "$log") (exit $rc): $*" >&2
    tail -n 60 "$log" >&2
  fi
  return "$rc"
}
# Under set -e, the script line that ended the test (errexit off: a deliberate
# failure, no line). errtrace: a command failing inside a function counts too.
report_failed_line() {
  local rc=$1 cmd=$2 n=${#BASH_LINENO[@]}
  # BASH_LINENO[n-2]: the line of the test script that was running (the call site
  # when the failure is inside a function).
  [[ $- == *e* ]] && echo "$(basename "$0"): FAILED at line ${BASH_LINENO[n-2]} (exit $rc): $cmd" >&2
  return 0
}
set -E
trap 'report_failed_line $? "$BASH_COMMAND"' ERR
source "$(dirname "${BASH_SOURCE[0]}")/../support/test-parts.bash"
