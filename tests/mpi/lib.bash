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
source "$(dirname "${BASH_SOURCE[0]}")/../support/test-parts.bash"
