# Helpers for tests/system/*.sh: root check, failure, cleanup on exit, bounded waits.
# Sourced, not run (the .bash name keeps it out of ctest's *.sh glob).

system_test_name=$(basename "${BASH_SOURCE[1]:-$0}" .sh)

note() { echo "[$system_test_name] $*"; }

fail() {
  echo "[$system_test_name] FAIL: $*" >&2
  exit 1
}

require_root() {
  if ((EUID != 0)); then
    echo "[$system_test_name] SKIP: needs root ($1); you are uid $EUID" >&2
    exit 77
  fi
}

require_fabscope() {
  [[ -n ${FABSCOPE_SOURCE_DIR:-} ]] || FABSCOPE_SOURCE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
  FABSCOPE_BIN=${FABSCOPE_BIN:-$FABSCOPE_SOURCE_DIR/build/fabscope}
  [[ -x $FABSCOPE_BIN ]] || fail "fabscope binary '$FABSCOPE_BIN' is not executable (ctest sets FABSCOPE_BIN; build first)"
  export FABSCOPE_BIN FABSCOPE_SOURCE_DIR
}

# Sets `spack` to a Spack to run: FABSCOPE_SPACK, else `spack` on PATH, else
# /work/spack-src/bin/spack; skips (77) saying so when there is none.
require_spack() {
  spack=${FABSCOPE_SPACK:-$(command -v spack || true)}
  [[ -n $spack ]] || spack=/work/spack-src/bin/spack
  if [[ ! -x $spack ]]; then
    echo "[$system_test_name] SKIP: no Spack (set FABSCOPE_SPACK, put spack on PATH, or clone spack into /work/spack-src)" >&2
    exit 77
  fi
}

# Cleanup actions run in reverse order when the script exits, whatever the
# reason (failure, signal, success); they see the exit status in
# $system_test_exit_status.
cleanup_actions=()
on_exit() { cleanup_actions+=("$1"); }

# small_disk DIR SIZE NAME: a tmpfs of SIZE (1m, 2m) mounted on DIR/disk, unmounted on exit:
# a result file there runs out of room mid-run.
small_disk() {
  mkdir "$1/disk"
  mount -t tmpfs -o "size=$2,mode=0755" "$3" "$1/disk"
  on_exit "umount -l '$1/disk'"
}
run_cleanup() {
  local status=$? i
  system_test_exit_status=$status
  trap - EXIT INT TERM
  for ((i = ${#cleanup_actions[@]} - 1; i >= 0; i--)); do
    eval "${cleanup_actions[$i]}" || echo "[$system_test_name] cleanup step failed: ${cleanup_actions[$i]}" >&2
  done
  exit "$status"
}
trap run_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_until SECONDS WHAT COMMAND...: polls COMMAND every 0.2 s until it
# succeeds; fails the test after SECONDS.
wait_until() {
  local seconds=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + seconds))
  until "$@"; do
    ((SECONDS < deadline)) || fail "timed out after ${seconds} s waiting for: $what"
    sleep 0.2
  done
}

# Stops a process we started, by pid: TERM, then KILL after a deadline.
stop_pid() {
  local pid=$1 what=$2 i
  [[ -n $pid ]] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.2
  done
  echo "[$system_test_name] $what (pid $pid) ignored TERM for 10 s; killing it" >&2
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# Prints root attribute NAME of an HDF5 result file (h5py of the system Python).
h5_root_attribute() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    value = f.attrs.get(sys.argv[2])
    if value is None:
        sys.exit(f"{sys.argv[1]}: no root attribute {sys.argv[2]!r}")
    if isinstance(value, bytes):
        value = value.decode()
    print(value)
PY
}

# up_emulated_cluster PREFIX SUBNET HOSTS: a cluster of the test's own (prefix and
# subnet apart from other tests), removed on exit together with the scratch
# folder it creates. Sets $cluster and $scratch for the caller.
up_emulated_cluster() {
  local prefix=$1 subnet=$2 hosts=$3
  require_root "creates network namespaces and a bridge"
  require_fabscope
  cluster=$FABSCOPE_SOURCE_DIR/launch/emulated-cluster
  export FABSCOPE_CLUSTER_PREFIX=$prefix
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  scratch=$(mktemp -d "/tmp/fabscope-$prefix.XXXXXX")
  on_exit "rm -rf '$scratch'"
  # Registered only once `up` succeeded: a cluster of the same prefix that
  # another run holds (up refuses then) must not be taken down by this one.
  "$cluster" up "$hosts" --subnet "$subnet"
  on_exit "'$cluster' down >/dev/null"
}

source "$(dirname "${BASH_SOURCE[0]}")/../../support/test-parts.bash"
