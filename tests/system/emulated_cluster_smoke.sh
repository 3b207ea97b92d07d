#!/usr/bin/env bash
# Runs the smoke scenario across an emulated 4-host cluster through
# launch/fabscope-mpirun --fabric emulated: one rank per host, each rank must
# report its own host in /ranks, the traffic must cross the bridge (port byte
# counters move), and `down` must leave nothing behind.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"

require_root "creates network namespaces and a bridge"
require_fabscope
scenario=${FABSCOPE_SMOKE_SCENARIO:-$FABSCOPE_SOURCE_DIR/scenarios/smoke.yaml}
[[ -r $scenario ]] || fail "scenario $scenario is missing"
cluster=$FABSCOPE_SOURCE_DIR/launch/emulated-cluster
# A prefix and subnet of its own, so it can run next to other cluster tests.
export FABSCOPE_CLUSTER_PREFIX=ecsmoke
subnet=198.18.10.0/24
hosts=(ecsmoke0 ecsmoke1 ecsmoke2 ecsmoke3)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

scratch=$(mktemp -d /tmp/fabscope-emulated-smoke.XXXXXX)
on_exit "rm -rf '$scratch'"
# A state folder others can write (they could plant a state file naming any link
# for 'down' to delete) is refused before anything is created.
mkdir -m 0777 "$scratch/open-state" && chmod 0777 "$scratch/open-state"
if FABSCOPE_CLUSTER_STATE_DIR=$scratch/open-state "$cluster" up 2 --subnet "$subnet" >"$scratch/open.out" 2>&1; then
  FABSCOPE_CLUSTER_STATE_DIR=$scratch/open-state "$cluster" down >/dev/null 2>&1 || true
  fail "up accepted a state folder writable by others"
fi
grep -q "writable by others" "$scratch/open.out" || { cat "$scratch/open.out"; fail "up's refusal does not say why"; }
! ip netns list | grep -qw ecsmoke0 || fail "the refused up created namespace ecsmoke0"
"$cluster" up 4 --subnet "$subnet"
on_exit "'$cluster' down >/dev/null"  # only once up succeeded: never another run's cluster

# Plain mpirun with the cluster's hostfile and rsh agent: every process runs
# inside its own host and sees that host's name.
"$cluster" hostfile >"$scratch/hostfile"
names=$(timeout --kill-after=5 60 mpirun --hostfile "$scratch/hostfile" -np 4 --bind-to none \
  --mca plm_rsh_agent "$FABSCOPE_SOURCE_DIR/launch/emulated-cluster-rsh" \
  --mca oob_tcp_if_include "$subnet" hostname | sort | paste -sd' ') \
  || fail "mpirun with the cluster's hostfile failed"
[[ $names == "${hosts[*]}" ]] || fail "mpirun hostname across the hostfile printed '$names', expected '${hosts[*]}'"
note "mpirun --hostfile: one process on each of $names"

port_bytes() {
  local port=$1
  echo $(( $(<"/sys/class/net/$port/statistics/rx_bytes") + $(<"/sys/class/net/$port/statistics/tx_bytes") ))
}
declare -A bytes_before
for host in "${hosts[@]}"; do bytes_before[$host]=$(port_bytes "$host-br"); done

result=$scratch/smoke.h5
set +e
timeout --kill-after=10 300 "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" --fabric emulated -N 1 --bin "$FABSCOPE_BIN" -- \
  run --scenario "$scenario" --output "$result"
exit_code=$?
set -e
((exit_code != 124 && exit_code != 137)) || fail "fabscope across the emulated cluster did not finish within 300 s"
((exit_code == 0)) || fail "fabscope across the emulated cluster exited with $exit_code (expected 0)"

[[ -s $result ]] || fail "result file $result is missing"
# Prints "host payload_bytes" per host: the payload the result file says the
# ranks of that host measured (a lower bound of what crossed its bridge port,
# since every peer is on another host).
payload_per_host() {
  /usr/bin/python3 - "$@" <<'PY'
import os, sys, h5py
path, expected = sys.argv[1], sorted(sys.argv[2:])
def text(value):
    return value.decode().rstrip("\0") if isinstance(value, bytes) else str(value)
with h5py.File(path, "r") as f:
    problems = []
    if int(f.attrs.get("complete", 0)) != 1:
        problems.append(f"complete={f.attrs.get('complete')}, expected 1")
    if int(f.attrs.get("nranks", 0)) != 4:
        problems.append(f"nranks={f.attrs.get('nranks')}, expected 4")
    if text(f.attrs.get("launch_preset", b"")) != "emulated":
        problems.append(f"launch_preset={text(f.attrs.get('launch_preset', b''))!r}, expected 'emulated'")
    ranks = f["ranks"][()]
    host_of_rank = {int(r["rank"]): text(r["host"]) for r in ranks}
    if sorted(host_of_rank.values()) != expected:
        problems.append(f"/ranks hosts {sorted(host_of_rank.values())}, expected one rank on each of {expected}")
    payload = {host: 0 for host in expected}
    for name, group in f.get("tests", {}).items():
        if "samples" not in group:
            continue
        samples = group["samples"][()]
        for rank, nbytes in zip(samples["rank"], samples["bytes"]):
            host = host_of_rank.get(int(rank))
            if host in payload:
                payload[host] += int(nbytes)
    # What the launcher set per job or rank is not recorded (launcher-variables.txt,
    # compiled into FabricEnvironment.cpp); the preset's real settings are.
    sys.path.insert(0, os.path.join(os.environ["FABSCOPE_SOURCE_DIR"], "analysis"))
    from fabscope_analysis.inventory import is_launcher_fact
    for host in f.get("hosts", {}):
        keys = [text(k) for k in f[f"hosts/{host}/inventory"]["key"]]
        launcher = [k for k in keys if is_launcher_fact(k)]
        if launcher:
            problems.append(f"/hosts/{host}/inventory records launcher variables: {launcher[:6]}")
        if "env/OMPI_MCA_btl" not in keys:
            problems.append(f"/hosts/{host}/inventory lost the real setting env/OMPI_MCA_btl")
        flags = [text(r["component"]) for r in f[f"hosts/{host}/consistency"][()]]
        if any(c.startswith("env/") for c in flags):
            problems.append(f"/hosts/{host}/consistency flags environment variables: {flags}")
for p in problems:
    print(f"{path}: {p}", file=sys.stderr)
if problems:
    sys.exit(1)
for host, nbytes in payload.items():
    print(host, nbytes)
PY
}
payload_by_host=$(payload_per_host "$result" "${hosts[@]}") \
  || fail "result file $result does not show 4 complete ranks on 4 emulated hosts"
note "result file: complete, 4 ranks on hosts ${hosts[*]}, launch_preset emulated"

while read -r host payload; do
  moved=$(( $(port_bytes "$host-br") - bytes_before[$host] ))
  note "bridge port $host-br carried $moved bytes; the ranks on $host measured $payload payload bytes"
  # MPI start-up alone moves ~7-11 KB per port here; the measured payload
  # must have crossed the port on top of it.
  ((moved >= payload && moved >= 16384)) \
    || fail "bridge port $host-br moved only $moved bytes (payload measured on $host: $payload): the traffic did not cross the bridge"
done <<<"$payload_by_host"

"$cluster" down
for host in "${hosts[@]}"; do
  ! ip netns list | grep -qw "$host" || fail "namespace $host still exists after down"
  ! ip link show "$host-br" >/dev/null 2>&1 || fail "bridge port $host-br still exists after down"
done
! ip link show ecsmoke-br >/dev/null 2>&1 || fail "bridge ecsmoke-br still exists after down"
[[ ! -e ${FABSCOPE_CLUSTER_STATE_DIR:-/run/fabscope-emulated-cluster}/ecsmoke.state ]] || fail "state file still exists after down"
note "PASS: down left no namespace, port, bridge or state behind"
