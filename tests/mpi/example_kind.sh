# The example kind (src/kinds/example, the template of a new kind family) end to
# end on 4 ranks: listed by `fabscope list`, run over the MPI transport (a 4 KiB
# token round a ring, one sample per hop on its sender, peer = its successor,
# every byte checked by the receiver), its declared attributes written, and the
# file read back through the analysis: the summary's ring line and the report's
# "Token ring" section give the hops' figures the samples hold.
source "$(dirname "$0")/lib.bash"
cat > "$scratch/ring.yaml" <<'YAML'
name: example-ring
tests:
  - name: ring
    kind: example
    sizes: [4KiB]
    iterations: 40
    warmup: 2
    timeout: 60s
YAML
"$FABSCOPE_BIN" list --scenario "$scratch/ring.yaml" --ranks 4 > "$scratch/list.txt"
grep -q "a token round a ring of 4 ranks, one sample per hop" "$scratch/list.txt" ||
  { cat "$scratch/list.txt"; echo "FAIL: fabscope list does not describe the example's instance"; exit 1; }
run_mpi -np 4 "$FABSCOPE_BIN" run --scenario "$scratch/ring.yaml" --output "$scratch/r.h5" --no-progress > /dev/null
(cd "$FABSCOPE_SOURCE_DIR/analysis" && /usr/bin/python3 -m fabscope_analysis summary "$scratch/r.h5") > "$scratch/summary.txt"
(cd "$FABSCOPE_SOURCE_DIR/analysis" && /usr/bin/python3 -m fabscope_analysis report "$scratch/r.h5" \
  -o "$scratch/report.html") > /dev/null
PYTHONPATH="$FABSCOPE_SOURCE_DIR/analysis" /usr/bin/python3 - "$scratch/r.h5" "$scratch/summary.txt" \
  "$scratch/report.html" <<'PY'
import sys, h5py, numpy as np
from fabscope_analysis.run_analysis import format_number
h5, summary, report = sys.argv[1], open(sys.argv[2]).read(), open(sys.argv[3]).read()
with h5py.File(h5, "r") as f:
    a = dict(f["tests/0000"].attrs)
    assert a["status"] == "passed", a["error"]
    s = f["tests/0000/samples"][()]
# one sample per hop and lap, on the sender, its successor the peer
assert len(s) == 4 * 40, len(s)
assert {(int(r), int(p)) for r, p in zip(s["rank"], s["peer"])} == {(0, 1), (1, 2), (2, 3), (3, 0)}
assert set(s["bytes"].tolist()) == {4096}
ns = (s["t_done_ns"] - s["t_post_ns"]).astype(np.float64)
medians = {r: float(np.median(ns[s["rank"] == r])) for r in range(4)}
slowest = max(medians, key=medians.get)
assert a["ring_ranks"] == 4 and a["slowest_hop_rank"] == slowest, (a["slowest_hop_rank"], medians)
assert abs(a["hop_p50_ns"] - np.median(ns)) < 1e-6 and abs(a["slowest_hop_p50_ns"] - medians[slowest]) < 1e-6
line = (f"0000 ring of 4 ranks: hop p50 {format_number(float(np.median(ns)) / 1e3)} us over 160 hops; "
        f"slowest hop {slowest} -> {(slowest + 1) % 4} p50 {format_number(medians[slowest] / 1e3)} us")
assert line in summary, ("the summary's ring line", line, summary)
section = report.split('<h2 id="ring">', 1)[1].split("<h2", 1)[0]
assert section.startswith("Token ring</h2>"), section[:200]
assert section.count("<tr>") == 1 + 4, ("a header and one row per hop", section)
for r in range(4):
    assert f"<td>{format_number(medians[r] / 1e3)}</td>" in section, (r, medians[r], section)
print("example:", line)
PY

# The receivers check every byte: rank 2 spoils each token it passes on
# (--self-test corrupt-sender=2), so rank 3 must fail the instance, naming rank 2.
run_mpi -np 4 "$FABSCOPE_BIN" run --scenario "$scratch/ring.yaml" --output "$scratch/bad.h5" --no-progress \
  --self-test corrupt-sender=2 > "$scratch/bad.out" 2>&1 || true
/usr/bin/python3 - "$scratch/bad.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    a = dict(f["tests/0000"].attrs)
text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
assert text(a["status"]) == "failed", text(a["status"])
assert "rank 3: the token from rank 2 is wrong at byte" in text(a["error"]), text(a["error"])
print("example: a spoiled token fails the instance:", text(a["error"]))
PY
