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
# Tests in parts (a "# ctest-parts: A B" line in the script): ctest runs each part
# as its own test (bash SCRIPT PART), so a part that cannot run here shows as
# skipped (exit 77) instead of hiding inside a pass. Run by hand without an
# argument, every part runs and a skipped one says so.
test_part=${1:-all}
part_wanted() { [[ $test_part == all || $test_part == "$1" ]]; }
skip_part() {  # PART WHY
  if [[ $test_part == all ]]; then
    echo "$(basename "$0"): part '$1' SKIPPED: $2" >&2
  else
    echo "$(basename "$0"): SKIP: $2" >&2
    exit 77
  fi
}
