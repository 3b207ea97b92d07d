# Tests in parts (a "# ctest-parts: A B" line in the script): ctest runs each part
# as its own test (bash SCRIPT PART), so a part that cannot run here shows as
# skipped (exit 77) instead of hiding inside a pass. Run by hand without an
# argument, every part runs and a skipped one says so. Sourced (without arguments)
# by tests/mpi/lib.bash and tests/system/lib/system-test.bash: $1 is the script's.
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
# A timing check that failed on a run whose own file records the validity finding
# busy_host (other work held the CPUs it needed) cannot tell whether the product
# is at fault: skip (77) with that finding as the reason; on a machine that was not
# busy, fail as usual.  usage: cannot_tell_if_busy WHAT FILE.h5...   (then fail)
cannot_tell_if_busy() {
  local what=$1 finding; shift
  if finding=$(/usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/busy_machine.py" "$@" 2>/dev/null); then
    echo "$(basename "$0"): SKIP: cannot tell whether $what: the machine was busy ($finding)" >&2
    exit 77
  fi
}
