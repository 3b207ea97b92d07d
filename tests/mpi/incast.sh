# The incast test on 4 ranks: a receiver, a latency probe, two senders; every
# sender's completion samples, the receiver's aggregate, the probe's samples,
# and fairness in [1/n, 1]. Then on 6 ranks (3 canaries measure, 3 congestors
# make load) quiet and under the `alltoall`, `bidirectional` and `copy`
# conditions: each congested instance must have run its load (the congestor
# ranks, the load's description, GB/s moved > 0), the canaries alone measured,
# and its impact is taken against the quiet instance of the same case.
source "$(dirname "$0")/lib.bash"
cat > "$scratch/incast.yaml" <<'YAML'
name: incast-check
tests:
  - name: incast
    kind: incast
    sizes: [64KiB]
    window: 4
    iterations: 30
    warmup: 3
    timeout: 60s
YAML
run_mpi -np 4 "$FABSCOPE_BIN" run --scenario "$scratch/incast.yaml" --output "$scratch/i.h5" --no-progress > /dev/null
/usr/bin/python3 - "$scratch/i.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    g = f["tests/0000"]; a = g.attrs
    assert a["status"] == "passed", a["error"]
    s = g["samples"][()]
    recv = s[(s["flags"] & 0x100) != 0]; probe = s[(s["flags"] & 0x200) != 0]; send = s[(s["flags"] & 0xff00) == 0]
    assert len(recv) == 30 and set(recv["rank"]) == {a["receiver_rank"]}, len(recv)
    assert sorted(set(send["rank"])) == [2, 3] and len(send) == 60 and set(send["peer"]) == {0}
    assert len(probe) > 0 and set(probe["rank"]) == {1} and set(probe["peer"]) == {0}
    # the probe is a ping-pong of 8-byte messages (docs/scenarios.md), whatever the test's sizes
    assert set(probe["bytes"]) == {8}, set(probe["bytes"])
    # the attribute names the probe's rank, not the receiver's
    assert int(a["probe_rank"]) == 1 and int(a["receiver_rank"]) == 0, (a["probe_rank"], a["receiver_rank"])
    assert int(a["probe_samples"]) == len(probe) and int(a["senders"]) == 2
    # a receiver sample is one round: every sender's window delivered to it
    window_bytes = int(a["bytes"]) * int(a["window"])
    assert set(recv["bytes"].tolist()) == {2 * window_bytes}, (set(recv["bytes"].tolist()), window_bytes)
    assert 0.5 - 1e-9 <= a["jain_fairness"] <= 1 + 1e-9
    # headline statistics are the senders' completion times only
    assert abs(np.percentile(send["t_done_ns"] - send["t_post_ns"], 50) - a["p50_ns"]) < 1e-6
    print("incast: receiver, probe and sender samples, fairness", round(float(a["jain_fairness"]), 3))
PY
# the incast's own figures (the receiver's GB/s, Jain's fairness, the probe's one-way
# times) and every other derived figure, recomputed from the samples
/usr/bin/python3 "$FABSCOPE_SOURCE_DIR/tests/support/recompute.py" "$scratch/i.h5"

cat > "$scratch/conditions.yaml" <<'YAML'
name: incast-conditions
tests:
  - name: incast
    kind: incast
    sizes: [64KiB]
    window: 2
    iterations: 20
    warmup: 2
    timeout: 60s
    probe: false
    roles: {canaries: 3}
    conditions: [quiet, alltoall, bidirectional, copy]
YAML
OMPI_MCA_mpi_yield_when_idle=1 run_mpi -np 6 "$FABSCOPE_BIN" run --scenario "$scratch/conditions.yaml" \
  --output "$scratch/c.h5" --no-progress > "$scratch/c.out" 2>&1 || { cat "$scratch/c.out"; echo "FAIL: 6-rank incast under conditions"; exit 1; }
/usr/bin/python3 - "$scratch/c.h5" <<'PY'
import math, sys, h5py
def text(v): return v.decode() if isinstance(v, bytes) else str(v)
def ranks(v): return {int(x) for x in text(v).split(",") if x}
with h5py.File(sys.argv[1], "r") as f:
    groups = [f["tests"][k] for k in sorted(f["tests"])]
    by_condition = {text(g.attrs["condition"]): g for g in groups}
    assert sorted(by_condition) == ["alltoall", "bidirectional", "copy", "quiet"], sorted(by_condition)
    quiet = by_condition["quiet"]
    canaries = ranks(quiet.attrs["canaries"])
    assert len(canaries) == 3, text(quiet.attrs["canaries"])
    load_words = {"alltoall": "all-to-all among 3 congestors", "bidirectional": "congestor pairs streaming both ways",
                  "copy": "congestors copying"}
    for condition, words in load_words.items():
        g = by_condition[condition]; a = g.attrs
        assert text(a["status"]) == "passed", (condition, text(a["error"]))
        congestors = ranks(a["congestors"])
        assert len(congestors) == 3 and not congestors & canaries, (condition, text(a["congestors"]), canaries)
        assert ranks(a["canaries"]) == canaries, (condition, "the same canaries measure under every condition")
        assert words in text(a["load"]), (condition, text(a["load"]))
        assert a["load_bytes"] > 0 and a["load_gbps"] > 0, (condition, a["load_bytes"], a["load_gbps"])
        assert text(a["case"]) == text(quiet.attrs["case"]), condition
        assert int(a["quiet_index"]) == int(quiet.name.split("/")[-1]), (condition, a["quiet_index"])
        assert math.isfinite(a["impact_p99"]) and a["impact_p99"] > 0, (condition, a["impact_p99"])
        s = g["samples"][()]
        assert len(s) > 0 and set(int(r) for r in s["rank"]) <= canaries, (condition, "samples from a congestor")
        print(f"incast/{condition}: {text(a['load'])}, {a['load_gbps']:.2f} GB/s of load, impact p99 {a['impact_p99']:.2f}")
PY
