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
