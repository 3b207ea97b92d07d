#!/usr/bin/env bash
# API traffic apart from the fabric: an emulated 4-host cluster with a
# front-end network (emulated-cluster up --frontend: bridge, eth2 in every host).
# Two ranks per host; the measuring ranks (one per host) are 2 API clients and 2
# servers, the other ranks make an incast onto the last server's host, whose
# fabric receive link is limited. The same API test runs quiet and under the
# incast twice: over the fabric (eth1), where its p99 must be inflated, and over
# the front-end network (eth2), where it must stay well below that.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
require_root "creates network namespaces and bridges"
require_fabscope
cluster=$FABSCOPE_SOURCE_DIR/launch/emulated-cluster
export FABSCOPE_CLUSTER_PREFIX=fapife OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
scratch=$(mktemp -d /tmp/fabscope-fapife.XXXXXX)
on_exit "rm -rf '$scratch'"
"$cluster" up 4 --subnet 198.18.65.0/24 --frontend 198.18.66.0/24
on_exit "'$cluster' down >/dev/null"
"$cluster" rate fapife3 100mbit
cat > "$scratch/api.yaml" <<'YAML'
name: api-frontend-isolation
seed: 5
defaults:
  conditions: [quiet, incast]
  roles: {canaries: 4, placement: spread}
  load_bytes: 1MiB
  timeout: 60s
tests:
  - name: over-fabric
    kind: api
    sizes: [1KiB]
    network: fabric
    clients: 2
    rate: 40
    requests: 80
    warmup_requests: 4
    chunks: 4
    service_time: 1ms
    chunk_interval: 1ms
  - name: over-frontend
    kind: api
    sizes: [1KiB]
    interface: eth2
    network: frontend
    clients: 2
    rate: 40
    requests: 80
    warmup_requests: 4
    chunks: 4
    service_time: 1ms
    chunk_interval: 1ms
YAML
set +e
# 8 ranks on a 2-core machine: idle ranks must yield the CPU.
timeout --kill-after=10 300 "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" --fabric emulated -N 2 --bin "$FABSCOPE_BIN" \
  --env OMPI_MCA_mpi_yield_when_idle=1 -- \
  run --scenario "$scratch/api.yaml" --output "$scratch/api.h5" --no-progress >"$scratch/run.log" 2>&1
rc=$?
set -e
((rc == 0)) || { tail -30 "$scratch/run.log" >&2; fail "fabscope exited with $rc"; }
/usr/bin/python3 - "$scratch/api.h5" <<'PY' || fail "front-end traffic was not kept apart from the fabric's incast"
import sys, h5py
def text(v): return v.decode() if isinstance(v, bytes) else str(v)
with h5py.File(sys.argv[1], "r") as f:
    impact, iface = {}, {}
    for g in f["tests"].values():
        a = g.attrs
        assert text(a["status"]) == "passed", (text(a["name"]), text(a["status"]), text(a["error"]))
        assert a["requests_ok"] == a["requests_measured"] == 160
        t = g["api_requests"][()]
        assert set(t["network"]) == {b"fabric" if text(a["name"]) == "over-fabric" else b"frontend"}
        iface[text(a["name"])] = set(x.decode() for x in t["interface"])
        if text(a["condition"]) != "quiet":
            impact[text(a["name"])] = float(a["impact_p99"])
    print(f"impact p99 under the incast: over the fabric {impact['over-fabric']:.2f}, "
          f"over the front-end network {impact['over-frontend']:.2f}; interfaces {iface}")
    assert iface == {"over-fabric": {"eth1"}, "over-frontend": {"eth2"}}, iface
    assert impact["over-fabric"] > 1.5, impact
    assert impact["over-frontend"] < impact["over-fabric"] / 2, impact
PY
note "PASS"
