#!/usr/bin/env bash
# NOT RUN BY CTEST (work in progress, issue 7): the drill itself passes and the
# survivors write a complete file, but after the loss Open MPI 4.1 cannot finish
# MPI_Finalize, fabscope leaves without it, and mpirun then ends with 137
# instead of 0. Run by hand: FABSCOPE_BIN=build/fabscope bash tests/manual/fault_kill.sh
# Fault drill `kill`: 4 ranks (client, 2 workers, spare) over UCX TCP
# loopback; rank 1 SIGKILLs itself while requests flow. The survivors must
# detect it within detect_within, re-route to the spare, leave no request
# hung, and write a complete file (exit 0).
source "$(dirname "$0")/../mpi/lib.bash"

cat >"$scratch/fault.yaml" <<'YAML'
name: fault-kill
seed: 1
tests:
  - name: kill-worker
    kind: fault
    transport: ucx
    memory: host
    sizes: [64]
    timeout: 30s
    fault: kill
    victim: 1
    at: 1s
    detect_within: 2s
    heartbeat: 100ms
    requests: 2500
    rate: 1000
YAML

rc=0
UCX_TLS=tcp,self UCX_NET_DEVICES=lo UCX_KEEPALIVE_INTERVAL=1s \
  timeout --kill-after=10 120 mpirun -np 4 --mca orte_abort_on_non_zero_status 0 \
  -x UCX_TLS -x UCX_NET_DEVICES -x UCX_KEEPALIVE_INTERVAL \
  "$FABSCOPE_BIN" run --scenario "$scratch/fault.yaml" --output "$scratch/fault.h5" --overwrite --no-progress \
  >"$scratch/log" 2>&1 || rc=$?
if [[ $rc -ne 0 ]]; then
  echo "FAIL: the drill exited $rc (expected 0); log:" >&2
  grep -v "UCX  WARN" "$scratch/log" | tail -30 >&2
  exit 1
fi

/usr/bin/python3 - "$scratch/fault.h5" <<'PY'
import sys
import h5py
f = h5py.File(sys.argv[1], "r")
assert f.attrs["complete"] == 1, "file not complete"
assert f.attrs["exit_code"] == 0, f"exit_code {f.attrs['exit_code']}"
t = f["/tests/0000"]
a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in t.attrs.items()}
assert a["status"] == "passed", f"status {a['status']}: {a.get('error')}"
ev = t["events"][()]
kinds = [k.decode() for k in ev["kind"]]
for need in ("fault", "detected", "rerouted", "recovered"):
    assert need in kinds, f"no '{need}' event; events: {sorted(set(kinds))}"
times = list(ev["t_ns"])
assert times == sorted(times), "events not in time order"
assert a["detected"] == 1, "not detected"
assert 0 <= a["detection_ms"] <= a["detect_within_ms"], f"detection {a['detection_ms']} ms"
assert a["hung"] == 0, f"{a['hung']} hung"
assert a["failed_requests"] == 0, f"{a['failed_requests']} failed"
assert a["completed"] == a["requests"], f"{a['completed']} of {a['requests']} completed"
assert a["rerouted"] >= 1
assert len(t["samples"]) == a["completed"]
print(f"detected after {a['detection_ms']:.1f} ms via {a['detection_path'][:60]}; "
      f"{a['rerouted']} re-routed, {a['reposted']} reposted, recovered after {a['recovered_ms']:.0f} ms, "
      f"{a['completed']}/{a['requests']} completed")
for row in ev:
    if row["kind"].decode() != "rerouted":
        print(f"  {row['t_ns']} {row['kind'].decode():10s} peer {row['peer']:2d} {row['detail'].decode()}")
PY
