# Scale at 32 and 64 oversubscribed ranks with yielding
# waits: the small scale scenario (pairs, all-pairs, ring, bisection,
# all-reduce, incast: tests/bench/scale-small.yaml) with FABSCOPE_REPORT_MEMORY=1,
# each rank's peak heap (RssAnon: not MPI's shared memory) and clock-sync time.
# Checks that every rank but 0 keeps a heap that does not grow with the ranks
# (64 ranks within 15 % + 2 MB of 32), that rank 0 holds no more than the
# others plus what docs/scale.md says it holds (the incast receiver's landing
# buffers, (N-1) x window x bytes, and one instance's gathered samples), and
# that clock synchronisation is not serial in N (a tree: 64 ranks take well
# under 2x the time of 32, and under 5 s).
source "$(dirname "$0")/lib.bash"
export FABSCOPE_WAITS_YIELD=1 OMPI_MCA_mpi_yield_when_idle=1 FABSCOPE_REPORT_MEMORY=1
scenario="$FABSCOPE_SOURCE_DIR/tests/bench/scale-small.yaml"
for n in 32 64; do
  timeout --kill-after=10 200 mpirun -np "$n" "$FABSCOPE_BIN" run --scenario "$scenario" --output "$scratch/s$n.h5" \
    --no-progress > "$scratch/s$n.out" 2> "$scratch/s$n.err" || { tail -20 "$scratch/s$n.err"; exit 1; }
done
# Exit 3 from the check: only the clock sync's time was out of bounds (a time, which
# a busy machine stretches); any other failure is the heap's or the file's.
rc=0
/usr/bin/python3 - "$scratch" <<'PY' || rc=$?
import os, re, statistics, sys, h5py
scratch = sys.argv[1]
line = re.compile(r"fabscope: memory: rank (\d+) heap_peak_mb=([\d.]+) .*clock_sync_s=([\d.]+) peak_at=(.*)")
runs = {}
for n in (32, 64):
    with h5py.File(f"{scratch}/s{n}.h5", "r") as f:
        assert int(f.attrs["exit_code"]) in (0, 1), f.attrs["exit_code"]  # 1: validity on a loaded machine
        for g in f["tests"].values():
            assert g.attrs["status"] in ("passed", b"passed"), (g.attrs["name"], g.attrs["error"])
    rows = {int(m[1]): (float(m[2]), float(m[3]), m[4]) for m in map(line.match, open(f"{scratch}/s{n}.err")) if m}
    assert sorted(rows) == list(range(n)), f"{n} ranks, memory lines from {sorted(rows)}"
    runs[n] = rows
for n, rows in runs.items():
    others = [heap for r, (heap, _, _) in rows.items() if r]
    print(f"{n} ranks: heap rank 0 {rows[0][0]} MB (peak at {rows[0][2]}), others max {max(others)} median "
          f"{statistics.median(others)} MB; clock sync max {max(s for _, s, _ in rows.values()):.3f} s")
small, large = (max(h for r, (h, _, _) in runs[n].items() if r) for n in (32, 64))
if os.environ.get("FABSCOPE_SANITIZED"):
    # Under ASan a rank's heap is 4-5x fabscope's own and rank 0's extra includes
    # the quarantine of what it freed: the bounds below would judge ASan.
    print("scale_64: heap bounds not judged in a sanitizer build (ASan's shadow and quarantine)")
else:
    assert large <= 1.15 * small + 2, f"a non-root rank's heap grows with the ranks: {small} MB at 32, {large} MB at 64"
    # Rank 0 = group index 0 of every test: the incast receiver, with a landing
    # buffer per sender and window slot (63 x 2 x 64 KiB), and the gatherer of one
    # instance's samples (all-pairs: 2016 pairs x 10 iterations x 48 B, held twice).
    incast_mb = 63 * 2 * 65536 / 1e6
    gather_mb = 2 * 2016 * 10 * 48 / 1e6
    assert runs[64][0][0] <= large + incast_mb + gather_mb + 6, \
        f"rank 0 holds {runs[64][0][0]} MB, more than the others ({large}) + incast {incast_mb:.1f} + gather {gather_mb:.1f} + 6"
sync = {n: max(s for _, s, _ in runs[n].values()) for n in runs}


def sync_out_of_bounds(why):
    print(f"scale_64: {why}", file=sys.stderr)
    sys.exit(3)


if sync[64] >= 5:
    sync_out_of_bounds(f"clock sync took {sync[64]} s at 64 ranks")
if os.environ.get("FABSCOPE_SANITIZED"):
    # 64 ASan processes on 2 cores: the sync's time is the scheduler's (on this
    # machine 0.20 s at 32 and 0.97 s at 64 in one sanitizer stage, 0.26 and 1.42
    # in another; the normal tree's runs pass the shape check).
    print("scale_64: the clock sync's growth not judged in a sanitizer build (the scheduler's, there)")
else:
    if sync[64] >= 1.6 * sync[32] + 0.5:
        sync_out_of_bounds(f"clock sync grows like N: {sync[32]} s at 32 ranks, {sync[64]} s at 64")
print("scale_64: heap flat for ranks > 0, rank 0 within its stated share, clock sync a tree")
PY
if [[ $rc == 3 ]]; then
  cannot_tell_if_busy "the clock sync is a tree" "$scratch/s64.h5" "$scratch/s32.h5"
  echo "FAIL: the clock sync's time is out of bounds on a machine that was not busy"
fi
exit $rc
