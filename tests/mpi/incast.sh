# The incast test on 4 ranks: a receiver, a latency probe, two senders; every
# sender's completion samples, the receiver's aggregate, the probe's samples,
# and fairness in [1/n, 1]. Also under the `alltoall` condition on 6 ranks.
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
    assert 0.5 - 1e-9 <= a["jain_fairness"] <= 1 + 1e-9 and a["aggregate_gbps_p50"] > 0 and a["probe_p99_ns"] > 0
    # headline statistics are the senders' completion times only
    assert abs(np.percentile(send["t_done_ns"] - send["t_post_ns"], 50) - a["p50_ns"]) < 1e-6
    print("incast: receiver, probe and sender samples, fairness", round(float(a["jain_fairness"]), 3))
PY
