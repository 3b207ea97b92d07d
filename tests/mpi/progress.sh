# Progress: a single long test is not silent, and the count never grows.
#  - A ~10 s test (100 KV requests arriving at 10 per second, open loop) prints
#    at least one line while it runs, with rank 0's samples so far and the time
#    left (a thread on rank 0 reads the sample count; the timed loop is untouched).
#  - The serial retest of an all-pairs test is planned from the start: the
#    header, every "[i/N]" line, the table and the file all count it.
#  - A retest whose parallel pass did not pass (it missed its 300 ms deadline)
#    is recorded as skipped, so the count still holds.
source "$(dirname "$0")/lib.bash"

cat > "$scratch/long.yaml" <<'YAML'
name: progress
# With seed 1, placement random puts rank 1 first: rank 1 is the prefill worker,
# rank 0 the decode worker, which records the samples (one per request).
seed: 1
model: llama3-8b
parallel: {tp: 8}
defaults: {transport: mpi, memory: host, timeout: 60s}
tests:
  - {name: kv-paced, kind: kvpush, strategy: per-block, prefill_ranks: 1, decode_ranks: 1,
     sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [64]}, loop: {mode: open, rate: 10},
     iterations: 100, warmup_requests: 0, roles: {placement: random}}
  - {name: ap, kind: latency, pattern: all-pairs, sizes: [8], iterations: 50, all_pairs: {retest_worst: 1}}
YAML
rc=0
run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/long.yaml" --output "$scratch/long.h5" --no-verdict \
  > "$scratch/out" 2> "$scratch/err" || rc=$?
cat "$scratch/err" "$scratch/out"
[ $rc = 0 ] || { echo "FAIL: the run exited $rc"; exit 1; }
grep -q "^fabscope .*, 3 test instances (1 of them serial retests), seed 1$" "$scratch/err" \
  || { echo "FAIL: the header does not count the serial retest"; exit 1; }
grep -Eq '^\[1/3\] kv-paced/[^ ]+ \[quiet, parallel\]: running [0-9]+s, rank 0: [1-9][0-9]* of 100 samples \([0-9]+%\).*, ~[0-9]+s left' \
  "$scratch/err" || { echo "FAIL: no progress line while the 10 s test ran"; exit 1; }
totals=$(grep -o '^\[[0-9]*/[0-9]*\]' "$scratch/err" | sed 's|.*/||; s|]||' | sort -u)
[ "$totals" = 3 ] || { echo "FAIL: progress totals '$totals', expected only 3"; exit 1; }
rows=$(grep -cE '^[0-9]+ +(kv-paced|ap) ' "$scratch/out")
[ "$rows" = 3 ] || { echo "FAIL: $rows table rows, expected 3"; exit 1; }

cat > "$scratch/retest-not-run.yaml" <<'YAML'
name: retest-not-run
seed: 1
defaults: {transport: mpi, memory: host}
tests:
  - {name: ap, kind: latency, pattern: all-pairs, sizes: [8], iterations: 10000000, timeout: 300ms,
     all_pairs: {retest_worst: 1}}
  - {name: after, kind: latency, sizes: [8], iterations: 10}
YAML
rc=0
run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/retest-not-run.yaml" --output "$scratch/skip.h5" --no-verdict \
  --no-progress > "$scratch/out" 2> "$scratch/err" || rc=$?
[ $rc = 1 ] || { cat "$scratch/err" "$scratch/out"; echo "FAIL: a missed deadline: exit $rc, expected 1"; exit 1; }
grep -q ", 3 test instances (1 of them serial retests)," "$scratch/err" || { cat "$scratch/err"; echo "FAIL: header"; exit 1; }
/usr/bin/python3 - "$scratch/skip.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    tests = f["tests"]
    assert len(tests) == 3, f"{len(tests)} instances in the file, the header said 3"
    parallel, retest = tests["0000"].attrs, tests["0001"].attrs
    assert parallel["status"] == "timeout", parallel["status"]
    assert (retest["pass"], retest["status"], int(retest["retest_of"])) == ("serial-retest", "skipped", 0), dict(retest)
    assert "did not pass" in retest["error"], retest["error"]
    assert tests["0002"].attrs["status"] == "passed"
PY
echo "progress: a line while the long test ran; header, progress, table and file count the retest: ok"
