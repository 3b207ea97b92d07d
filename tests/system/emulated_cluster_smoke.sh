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
on_exit "'$cluster' down >/dev/null"
"$cluster" up 4 --subnet "$subnet"

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

declare -A bytes_moved
for host in "${hosts[@]}"; do
  bytes_moved[$host]=$(( $(port_bytes "$host-br") - bytes_before[$host] ))
  note "bridge port $host-br carried ${bytes_moved[$host]} bytes during the run"
  # MPI wire-up alone is a few KiB; any rank talking to its peers moves far more.
  ((bytes_moved[$host] >= 16384)) || fail "bridge port $host-br moved only ${bytes_moved[$host]} bytes: traffic of rank on $host did not cross the bridge"
done

[[ -s $result ]] || fail "result file $result is missing"
/usr/bin/python3 - "$result" "${hosts[@]}" <<'PY' || fail "result file $result does not show 4 ranks on 4 emulated hosts"
import sys, h5py
path, expected = sys.argv[1], sorted(sys.argv[2:])
with h5py.File(path, "r") as f:
    problems = []
    if int(f.attrs.get("complete", 0)) != 1:
        problems.append(f"complete={f.attrs.get('complete')}, expected 1")
    if int(f.attrs.get("nranks", 0)) != 4:
        problems.append(f"nranks={f.attrs.get('nranks')}, expected 4")
    preset = f.attrs.get("launch_preset", b"")
    preset = preset.decode() if isinstance(preset, bytes) else str(preset)
    if preset != "emulated":
        problems.append(f"launch_preset={preset!r}, expected 'emulated'")
    hosts = sorted(h.decode().rstrip("\0") if isinstance(h, bytes) else str(h) for h in f["ranks"]["host"])
    if hosts != expected:
        problems.append(f"/ranks hosts {hosts}, expected one rank on each of {expected}")
for p in problems:
    print(f"{path}: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
note "result file: complete, 4 ranks on hosts ${hosts[*]}, launch_preset emulated"

"$cluster" down
for host in "${hosts[@]}"; do
  ! ip netns list | grep -qw "$host" || fail "namespace $host still exists after down"
  ! ip link show "$host-br" >/dev/null 2>&1 || fail "bridge port $host-br still exists after down"
done
! ip link show ecsmoke-br >/dev/null 2>&1 || fail "bridge ecsmoke-br still exists after down"
[[ ! -e ${FABSCOPE_CLUSTER_STATE_DIR:-/run/fabscope-emulated-cluster}/ecsmoke.state ]] || fail "state file still exists after down"
note "PASS: down left no namespace, port, bridge or state behind"
