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
# roles.groups on 4 ranks, groups of 2 packed ranks, rank 3 spoiling its result: every
# group measured on its own ranks (read from DATASET's rank column), the others loading,
# each instance's case, group and roles naming it, and only group 1's instance failing
# (rank 3 named). usage: check_group_rotation SCENARIO CASE DATASET
check_group_rotation() {
  local scenario=$1 case=$2 dataset=$3 out="$scratch/groups.h5" rc=0
  run_mpi -np 4 "$FABSCOPE_BIN" run --self-test corrupt-rank=3 --scenario "$scenario" \
    --output "$out" --no-progress > "$scratch/groups.out" 2>&1 || rc=$?
  [ $rc -eq 1 ] || { echo "FAIL: the rotation with a spoiled rank 3 gave exit $rc, expected 1"; cat "$scratch/groups.out"; return 1; }
  /usr/bin/python3 - "$out" "$case" "$dataset" <<'PY'
import sys, h5py
path, case, dataset = sys.argv[1:4]
with h5py.File(path, "r") as f:
    got = []
    for name, g in sorted(f["tests"].items()):
        a = g.attrs
        measured = sorted(set(int(r) for r in g[dataset][()]["rank"]))
        got.append((int(a["group"]), int(a["groups"]), str(a["case"]), str(a["canaries"]),
                    str(a["congestors"]), measured, str(a["status"])))
    assert got == [(0, 2, f"{case}/group0", "0,1", "2,3", [0, 1], "passed"),
                   (1, 2, f"{case}/group1", "2,3", "0,1", [2, 3], "failed")], got
    assert "rank 3" in f["tests/0001"].attrs["error"], f["tests/0001"].attrs["error"]
PY
}
