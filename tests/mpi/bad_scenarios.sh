# Every file of the bad-input corpus: exit 2, a message with file:line:column,
# and no result file left behind — through the real command under mpirun.
source "$(dirname "$0")/lib.bash"
failures=0
for f in "$FABSCOPE_SOURCE_DIR"/tests/data/bad-scenarios/*.yaml; do
  where=$(sed -n '1s/^# expect: \([0-9]*:[0-9]*\):.*/\1/p' "$f")
  out="$scratch/$(basename "$f" .yaml).h5"
  rc=0
  run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$f" --output "$out" 2> "$scratch/err" >/dev/null || rc=$?
  if [ $rc -ne 2 ]; then echo "FAIL $f: exit $rc, expected 2"; failures=$((failures + 1)); fi
  if ! grep -q "$f:$where: " "$scratch/err"; then echo "FAIL $f: message lacks $f:$where:"; cat "$scratch/err"; failures=$((failures + 1)); fi
  if [ -e "$out" ]; then echo "FAIL $f: a result file was left behind"; failures=$((failures + 1)); fi
done
# `list` rejects them the same way, without mpirun.
rc=0; "$FABSCOPE_BIN" list --scenario "$FABSCOPE_SOURCE_DIR/tests/data/bad-scenarios/zero-size.yaml" 2>/dev/null || rc=$?
[ $rc -eq 2 ] || { echo "FAIL list: exit $rc"; failures=$((failures + 1)); }
[ $failures -eq 0 ]
