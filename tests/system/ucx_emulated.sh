#!/usr/bin/env bash
# The smoke scenario over the UCX transport across an emulated 4-host cluster
# (launch/fabscope-mpirun --fabric emulated: UCX_TLS=tcp,self on the cluster's
# interface). Every test must pass over 'ucx', one rank per host, and the
# bytes the ranks measured must have crossed each host's bridge port.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"

require_root "creates network namespaces and a bridge"
require_fabscope
cluster=$FABSCOPE_SOURCE_DIR/launch/emulated-cluster
export FABSCOPE_CLUSTER_PREFIX=ecucx
subnet=198.18.13.0/24
hosts=(ecucx0 ecucx1 ecucx2 ecucx3)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

scratch=$(mktemp -d /tmp/fabscope-ucx-emulated.XXXXXX)
on_exit "rm -rf '$scratch'"
"$cluster" up 4 --subnet "$subnet"
on_exit "'$cluster' down >/dev/null"  # only once up succeeded: never another run's cluster

port_bytes() {
  echo $(( $(<"/sys/class/net/$1/statistics/rx_bytes") + $(<"/sys/class/net/$1/statistics/tx_bytes") ))
}
declare -A bytes_before
for host in "${hosts[@]}"; do bytes_before[$host]=$(port_bytes "$host-br"); done

result=$scratch/ucx.h5
set +e
timeout --kill-after=10 400 "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" --fabric emulated -N 1 --bin "$FABSCOPE_BIN" -- \
  run --scenario "$FABSCOPE_SOURCE_DIR/scenarios/smoke.yaml" --set transport=ucx --output "$result" --no-progress \
  >"$scratch/run.log" 2>&1
exit_code=$?
set -e
if ((exit_code != 0)); then
  tail -30 "$scratch/run.log" >&2
  ((exit_code != 124 && exit_code != 137)) || fail "fabscope over UCX across the emulated cluster did not finish within 400 s"
  fail "fabscope over UCX across the emulated cluster exited with $exit_code (expected 0)"
fi

payload_by_host=$(/usr/bin/python3 - "$result" "${hosts[@]}" <<'PY'
import sys, h5py
path, expected = sys.argv[1], sorted(sys.argv[2:])
def text(v):
    return v.decode().rstrip("\0") if isinstance(v, bytes) else str(v)
problems = []
with h5py.File(path, "r") as f:
    if int(f.attrs.get("complete", 0)) != 1: problems.append("complete != 1")
    if text(f.attrs.get("launch_preset", b"")) != "emulated": problems.append("launch_preset is not 'emulated'")
    host_of_rank = {int(r["rank"]): text(r["host"]) for r in f["ranks"][()]}
    if sorted(host_of_rank.values()) != expected:
        problems.append(f"/ranks hosts {sorted(host_of_rank.values())}, expected {expected}")
    payload = {h: 0 for h in expected}
    if len(f["tests"]) < 9: problems.append(f"only {len(f['tests'])} test instances")
    for name, t in f["tests"].items():
        if text(t.attrs["transport"]) != "ucx": problems.append(f"/tests/{name}: transport {text(t.attrs['transport'])!r}")
        if text(t.attrs["status"]) != "passed": problems.append(f"/tests/{name}: {text(t.attrs['status'])}: {text(t.attrs['error'])}")
        s = t["samples"][()]
        if len(s) == 0: problems.append(f"/tests/{name}: no samples")
        for rank, nbytes in zip(s["rank"], s["bytes"]):
            if host_of_rank.get(int(rank)) in payload: payload[host_of_rank[int(rank)]] += int(nbytes)
for p in problems: print(f"{path}: {p}", file=sys.stderr)
if problems: sys.exit(1)
for h, n in payload.items(): print(h, n)
PY
) || fail "result file of the UCX run across the emulated cluster is wrong (see above)"
note "result file: complete, every test passed over ucx, one rank on each of ${hosts[*]}"

while read -r host payload; do
  moved=$(( $(port_bytes "$host-br") - bytes_before[$host] ))
  note "bridge port $host-br carried $moved bytes; ranks on $host measured $payload payload bytes"
  ((moved >= payload)) || fail "bridge port $host-br moved only $moved bytes (< $payload measured): UCX traffic did not cross the bridge"
done <<<"$payload_by_host"
note "PASS: UCX over TCP across 4 emulated hosts"
