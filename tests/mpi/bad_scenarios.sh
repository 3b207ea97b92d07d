# Every file of the bad-input corpus: exit 2, a message with file:line:column,
# and no result file left behind — through the real command under mpirun.
# ctest-labels: shares-machine
# (it checks files, messages or packages, not time: tests/run runs two such tests at a time)
source "$(dirname "$0")/lib.bash"
failures=0
# check FILE LAUNCH...: the run must exit 2 with FILE:LINE:COLUMN and leave no file.
# Prints why not (nothing when it passed).
check() {
  local f=$1; shift
  local where out rc=0
  where=$(sed -n '1s/^# expect: \([0-9]*:[0-9]*\):.*/\1/p' "$f")
  out="$scratch/$(basename "$f" .yaml).h5"
  "$@" "$FABSCOPE_BIN" run --scenario "$f" --output "$out" 2> "$scratch/err" >/dev/null || rc=$?
  [ $rc -eq 2 ] || echo "exit $rc, expected 2"
  grep -q "$f:$where: " "$scratch/err" || echo "message lacks $f:$where: ($(cat "$scratch/err"))"
  [ ! -e "$out" ] || echo "a result file was left behind"
}
# Every file as a singleton (one rank, no mpirun: 0.4 s instead of 1.4 s each);
# a file whose expected error needs the ranks of a real launch (a point-to-point
# test refuses one rank first) and a few fixed ones go through mpirun -np 2.
under_mpirun=(zero-size.yaml fault-on-mpi.yaml too-many-ranks.yaml)
# The loader's message for every file is checked in-process by the unit test
# Scenario.BadInputCorpusNamesFileLineColumnAndProblem; through the real command the
# default run takes the mpirun files and every fifth other file (the sorted corpus
# spans every section of a scenario), tests/run --full every file.
files=()
i=0
for f in "$FABSCOPE_SOURCE_DIR"/tests/data/bad-scenarios/*.yaml; do
  if [[ ${FABSCOPE_FULL_TESTS:-0} == 1 || " ${under_mpirun[*]} " == *" $(basename "$f") "* ]] || ((i % 5 == 0)); then
    files+=("$f")
  fi
  i=$((i + 1))
done
echo "bad_scenarios: ${#files[@]} of $i files through the real command"
for f in "${files[@]}"; do
  why=""
  if [[ " ${under_mpirun[*]} " != *" $(basename "$f") "* ]]; then why=$(check "$f" env); fi
  if [[ -n $why || " ${under_mpirun[*]} " == *" $(basename "$f") "* ]]; then why=$(check "$f" run_mpi -np 2); fi
  if [[ -n $why ]]; then echo "FAIL $f: $why"; failures=$((failures + 1)); fi
done
# `list` rejects them the same way, without mpirun.
rc=0; "$FABSCOPE_BIN" list --scenario "$FABSCOPE_SOURCE_DIR/tests/data/bad-scenarios/zero-size.yaml" 2>/dev/null || rc=$?
[ $rc -eq 2 ] || { echo "FAIL list: exit $rc"; failures=$((failures + 1)); }
[ $failures -eq 0 ]
