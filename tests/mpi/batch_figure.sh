# The batch figure: each point-to-point pair's timed loop as one batch,
# the way osu_latency and osu_bw report, stored beside the per-sample statistics
# and printed by the run and by the analysis; receive_buffers decides where a
# window's messages land, and a wrong value is refused at load.
source "$(dirname "$0")/lib.bash"
cat >"$scratch/batch.yaml" <<'YAML'
name: batch-figure
seed: 3
tests:
  - {name: lat, kind: latency, sizes: [8], iterations: 300, warmup: 20}
  - {name: bw, kind: bandwidth, sizes: [64KiB], window: 8, iterations: 30, warmup: 3}
  - {name: bw-one, kind: bandwidth, sizes: [64KiB], window: 8, iterations: 30, warmup: 3, receive_buffers: one}
  - {name: bibw, kind: bibw, sizes: [64KiB], window: 4, iterations: 20, warmup: 3}
YAML
out=$scratch/batch.h5
run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/batch.yaml" --output "$out" --no-progress >"$scratch/run.log" 2>&1 ||
  { cat "$scratch/run.log"; echo "FAIL: the run failed"; exit 1; }
grep -q "batch: loop time / iterations" "$scratch/run.log" || { cat "$scratch/run.log"; echo "FAIL: the closing table has no batch column"; exit 1; }
/usr/bin/python3 - "$out" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    tests = {g.attrs["name"]: g for g in f["tests"].values()}
    for name, g in tests.items():
        a = g.attrs
        s = g["samples"][()]
        n = len(s)
        assert n > 0, name
        # Never below the samples' own time: the loop holds them and more.
        own = float((s["t_done_ns"] - s["t_post_ns"]).sum()) / n / a["sample_divisor"]
        assert a["batch_mean_ns"] >= own * (1 - 1e-9), (name, a["batch_mean_ns"], own)
        # ... and not above the loop's wall time (first post to last completion).
        span = float(s["t_done_ns"].max() - s["t_post_ns"].min()) / n / a["sample_divisor"]
        assert a["batch_mean_ns"] <= span * (1 + 1e-9), (name, a["batch_mean_ns"], span)
        assert 0 < a["clock_read_ns"] < 10_000, a["clock_read_ns"]
        if a["metric"] == "bandwidth":
            expect = float(s["bytes"].sum()) / (a["batch_mean_ns"] * n)
            assert abs(a["batch_gbps"] - expect) <= 1e-6 * expect, (name, a["batch_gbps"], expect)
    assert tests["bw"].attrs["receive_slices"] == 8, tests["bw"].attrs["receive_slices"]
    assert tests["bw-one"].attrs["receive_slices"] == 1, tests["bw-one"].attrs["receive_slices"]
    assert "receive_slices" not in tests["lat"].attrs
print("batch figures consistent with the samples")
PY
(cd "$FABSCOPE_SOURCE_DIR/analysis" && /usr/bin/python3 -m fabscope_analysis summary "$out") >"$scratch/summary.txt" 2>&1
# The summary's batch column holds each test's figure in the table's unit, with one footnote.
(cd "$FABSCOPE_SOURCE_DIR/analysis" && /usr/bin/python3 - "$out" "$scratch/summary.txt") <<'PY' ||
import sys, h5py
from fabscope_analysis.run_analysis import format_number
text = open(sys.argv[2]).read()
with h5py.File(sys.argv[1], "r") as f:
    for g in f["tests"].values():
        a = g.attrs
        table = next(t for t in text.split("\n== ") if t.startswith(a["name"] + " "))
        header, row = table.splitlines()[1:3]
        end = header.index(" batch ") + len(" batch")
        want = a["batch_gbps"] if a["metric"] == "bandwidth" else a["batch_mean_ns"] / 1e3
        assert row[:end].split()[-1] == format_number(want), (a["name"], row, format_number(want))
        assert table.count("  batch: each pair's timed loop / iterations, as osu_latency") == 1, table
PY
  { cat "$scratch/summary.txt"; echo "FAIL: the summary's batch column is not each test's figure"; exit 1; }
grep -q "receive buffers: 1 (one, as osu_bw)" "$scratch/summary.txt" ||
  { cat "$scratch/summary.txt"; echo "FAIL: the summary does not say where bw-one's window lands"; exit 1; }

sed 's/receive_buffers: one/receive_buffers: two/' "$scratch/batch.yaml" >"$scratch/bad.yaml"
set +e
run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/bad.yaml" --output "$scratch/bad.h5" --no-progress >"$scratch/bad.log" 2>&1
rc=$?
set -e
[[ $rc -eq 2 ]] && grep -q "bad.yaml:6:[0-9]*: .receive_buffers. in test .bw-one. is .two.; expected one of: distinct, one" "$scratch/bad.log" ||
  { cat "$scratch/bad.log"; echo "FAIL: receive_buffers: two was not refused at load with file:line (rc $rc)"; exit 1; }
echo "batch_figure: ok"
