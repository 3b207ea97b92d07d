#!/usr/bin/env bash
# tests/run stage: the unit tests (with the fuzz-corpus replays) and the MPI
# tests again, built with AddressSanitizer + UndefinedBehaviorSanitizer in a
# second tree (build-asan), leak detection on. Suppressions (next to this
# script, see docs/hardening.md) cover reports inside Open MPI, its components
# and UCX only; a report in fabscope's own code fails the stage.
#
# By default the MPI tests are the subset in default-mpi-tests.txt (each line
# says what it guards), to keep the stage within its 6 minutes; --full runs every
# MPI test not in excluded-tests.txt.
#
#   tests/run.d/sanitizers.sh [--full] [CTEST-ARGS...]   (CTEST-ARGS narrow the MPI tests, e.g. -R run_np2)
set -uo pipefail
full=0
[ "${1:-}" = --full ] && { full=1; shift; }
cd "$(dirname "$0")/../.."
root=$(pwd)
here=$root/tests/run.d/sanitizers
tree=${FABSCOPE_ASAN_BUILD:-$root/build-asan}
jobs=$(nproc)

# -O1 -g1: what ASan needs for useful reports, and the quickest to compile on 2 cores;
# a unity build, as tests/run's (half the compile time); clang where installed (it
# compiles this tree with ASan in 269 s against GCC's 335, 2026-12-03, 2 cores).
compilers=()
command -v clang++ >/dev/null && command -v clang >/dev/null \
  && compilers=(-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang)
nice cmake -S . -B "$tree" "${compilers[@]}" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DCMAKE_C_FLAGS_DEBUG="-O1 -g1" \
  -DFABSCOPE_SANITIZE=ON -DFABSCOPE_ENABLE_CUDA=OFF -DCMAKE_UNITY_BUILD=ON >/dev/null || exit 1
# Only what the selected tests run; the benchmarks stay out of this tree.
targets=(fabscope fabscope_unit_tests)
for t in fabscope_replay_scenario fabscope_replay_sizes; do
  grep -q "^$t:" <(cmake --build "$tree" --target help 2>/dev/null | sed -n 's/^\.\.\. \([^ ]*\).*/\1:/p') && targets+=("$t")
done
nice cmake --build "$tree" -j "$jobs" --target "${targets[@]}" || exit 1

# abort_on_error: a report kills the process with SIGABRT, which every test
# (and mpirun) sees as a failure. detect_odr_violation=0: Open MPI's components
# define the same globals as libmpi (an Open MPI matter, not ours).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1:detect_odr_violation=0:strict_string_checks=1:check_initialization_order=1:detect_stack_use_after_return=0
export LSAN_OPTIONS=suppressions=$here/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$here/ubsan.supp
# Keep Open MPI's components loaded until exit, so leak reports inside them
# name the component (and match the suppressions) instead of '<unknown module>'.
export OMPI_MCA_mca_base_component_disable_dlclose=1
# UCX's malloc/mmap hooks patch the allocator that ASan owns.
export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none UCX_MEM_EVENTS=no
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Heap sizes here are ASan's as much as fabscope's (shadow memory, redzones, the
# quarantine of freed blocks): tests that bound a rank's heap read this and keep
# only their other checks.
export FABSCOPE_SANITIZED=1

# The MPI tests that kill ranks on purpose (crash_*, *_peer_lost) measure
# recovery timing that ASan's slowdown would distort; they run in the normal
# tree only. See docs/hardening.md for the list and why.
exclude=$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$here/excluded-tests.txt" | paste -sd'|')
# Unit tests: memory errors, undefined behaviour and leaks. The unit tests
# that start MPI (ResultFile.*) and the MPI tests: memory errors and undefined
# behaviour, but no leak check — an MPI process leaks inside Open MPI's
# components at exit (their frames show as "<unknown module>", so no
# suppression can name them); fabscope's own allocations are leak-checked by
# the other unit tests.
# The unit tests run as one process per group (ctest would start one per test:
# about 400 ASan start-ups): everything but ResultFile.* with the leak check, then
# ResultFile.* without it; the fuzz replays through ctest (their own programs).
unit_bin=$tree/tests/fabscope_unit_tests
# FABSCOPE_TEST_RESULTS=DIR (tests/run): their JUnit files go there (the slowest tests).
junit() { [ -n "${FABSCOPE_TEST_RESULTS:-}" ] && echo "--gtest_output=xml:$FABSCOPE_TEST_RESULTS/asan-unit-$1.xml"; }
timeout --kill-after=10 600 "$unit_bin" --gtest_brief=1 --gtest_filter='-ResultFile.*' $(junit leaks) || exit 1
no_leaks=${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0}
ASAN_OPTIONS=$no_leaks timeout --kill-after=10 300 "$unit_bin" --gtest_brief=1 --gtest_filter='ResultFile.*' \
  $(junit mpi) || exit 1
ctest --test-dir "$tree" --output-on-failure -R '^fuzz_replay\.' --timeout 300 || exit 1
mpi_subset=()
if [ $full -eq 0 ]; then
  subset=$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$here/default-mpi-tests.txt" | paste -sd'|')
  mpi_subset=(-R "^($subset)\$")
fi
ASAN_OPTIONS=$no_leaks ctest --test-dir "$tree" --output-on-failure -L mpi ${exclude:+-E "$exclude"} \
  "${mpi_subset[@]}" --timeout 600 "$@"
