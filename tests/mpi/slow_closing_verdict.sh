# ctest-labels: full
# A closing verdict slower than MPI_Finalize's bound (30 s, then the watchdog's 10 s) is
# still the run's last line: the other ranks wait for rank 0's verdict under its own
# timeout (120 s), not in MPI_Finalize, whose bound ended such a job with exit 3 and no
# verdict (a 512-rank diagnose can take that long). A stand-in analysis that answers after
# 50 s; about 55 s in all, hence `full`.
source "$(dirname "$0")/lib.bash"
unset FABSCOPE_CLOSING_VERDICT  # the test environment turns it off for the other tests
fail() { echo "FAIL: $*" >&2; exit 1; }
cat > "$scratch/slow-python" <<'SH'
#!/bin/bash
sleep 50
echo "verdict: PASS (a slow analysis stand-in)"
SH
chmod +x "$scratch/slow-python"
cat > "$scratch/small.yaml" <<'YAML'
name: slow-closing-verdict
tests:
  - {name: lat, kind: latency, pattern: pairs, sizes: [8], iterations: 20, warmup: 2, timeout: 60s}
YAML
set +e
started=$SECONDS
FABSCOPE_PYTHON="$scratch/slow-python" run_mpi -x FABSCOPE_PYTHON -np 2 "$FABSCOPE_BIN" run \
  --scenario "$scratch/small.yaml" --output "$scratch/slow.h5" --no-progress > "$scratch/slow.log" 2>&1
rc=$?
set -e
((rc == 0)) || { tail -20 "$scratch/slow.log"; fail "a run whose closing verdict took 50 s exited $rc, expected 0"; }
[[ $(tail -n 1 "$scratch/slow.log") == "verdict: PASS (a slow analysis stand-in)" ]] \
  || { tail -5 "$scratch/slow.log"; fail "the slow verdict is not the last line"; }
echo "PASS: a closing verdict of 50 s closed the run ($((SECONDS - started)) s), exit 0"
