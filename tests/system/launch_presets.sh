#!/usr/bin/env bash
# launch/fabscope-mpirun's presets and command line (--dry-run) against a fake
# sysfs with RoCE and InfiniBand ports, launch/lib/bind-gpu against a fake
# nvidia-smi, and fabscope's exit code passed through mpirun. Needs no root.
# ctest-parts: presets mpirun-exit
# ctest-labels: shares-machine
# (it checks files, messages or packages, not time: tests/run runs two such tests at a time)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"

FABSCOPE_SOURCE_DIR=${FABSCOPE_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
wrapper=$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun
bind_gpu=$FABSCOPE_SOURCE_DIR/launch/lib/bind-gpu
scratch=$(mktemp -d /tmp/fabscope-launch-presets.XXXXXX)
on_exit "rm -rf '$scratch'"

if part_wanted presets; then
# --- a fake sysfs: two active RoCE ports, one RoCE port down, one IB port ------
sysfs=$scratch/sys
make_port() {  # device port link_layer state
  local dir=$sysfs/class/infiniband/$1/ports/$2
  mkdir -p "$dir/gid_attrs/types" "$dir/gids"
  echo "$3" >"$dir/link_layer"
  echo "$4" >"$dir/state"
}
make_port mlx5_0 1 Ethernet "4: ACTIVE"
make_port mlx5_1 1 Ethernet "4: ACTIVE"
make_port mlx5_2 1 Ethernet "1: DOWN"
make_port mlx5_3 1 InfiniBand "4: ACTIVE"
mkdir -p "$sysfs/class/infiniband/mlx5_0/device/net/ens1f0np0"
# GIDs of mlx5_0 port 1: only index 5 is RoCE v2 with an IPv4-mapped address.
gid_dir=$sysfs/class/infiniband/mlx5_0/ports/1
for index in 0 1 2 3 4 5; do
  case $index in
    0|2|4) type="IB/RoCE v1" ;;
    *) type="RoCE v2" ;;
  esac
  echo "$type" >"$gid_dir/gid_attrs/types/$index"
  case $index in
    4|5) echo 0000:0000:0000:0000:0000:ffff:0a00:0001 >"$gid_dir/gids/$index" ;;
    *) echo fe80:0000:0000:0000:0a88:66ff:fe01:0203 >"$gid_dir/gids/$index" ;;
  esac
done
export FABSCOPE_SYSFS_ROOT=$sysfs

dry() {
  "$wrapper" --bin /bin/true --dry-run "$@" -- run --scenario s.yaml --output r.h5 \
    || fail "fabscope-mpirun --dry-run $* failed"
}
expect_line() {  # output pattern what
  grep -qE -- "$2" <<<"$1" || fail "$3: no line matching '$2' in:
$1"
}

out=$(dry --fabric roce --hosts a,b --ranks-per-node 2)
expect_line "$out" '^  export NCCL_IB_HCA=mlx5_0:1,mlx5_1:1$' "roce: active Ethernet ports only"
expect_line "$out" '^  export NCCL_IB_GID_INDEX=5$' "roce: the RoCE v2 IPv4 GID"
expect_line "$out" '^  export UCX_IB_GID_INDEX=5$' "roce: UCX GID"
expect_line "$out" '^  export NCCL_IB_TC=106$' "roce: default traffic class"
expect_line "$out" '^  export NCCL_SOCKET_IFNAME=ens1f0np0$' "roce: the HCA's netdev"
expect_line "$out" '^  export UCX_NET_DEVICES=mlx5_0:1,mlx5_1:1$' "roce: UCX devices"
expect_line "$out" '^  export OMPI_MCA_pml=ucx$' "roce: UCX PML"
expect_line "$out" '^  export FABSCOPE_FABRIC=roce$' "roce: preset recorded"
expect_line "$out" '^  mpirun --host a:2,b:2 --map-by ppr:2:node -np 4 --bind-to none .*-x NCCL_IB_GID_INDEX .*-x FABSCOPE_FABRIC .*/launch/lib/bind-gpu /bin/true run --scenario s.yaml --output r.h5$' "roce: mpirun command (preset default: --bind gpu)"

out=$(dry --fabric roce --hca mlx5_9:2 --gid-index 7 --traffic-class 98 --iface eth9 --hosts a --bind none --fault-tolerant --env NCCL_DEBUG=INFO)
expect_line "$out" '^  export NCCL_IB_HCA=mlx5_9:2$' "roce: --hca override"
expect_line "$out" '^  export NCCL_IB_GID_INDEX=7$' "roce: --gid-index override"
expect_line "$out" '^  export UCX_IB_TRAFFIC_CLASS=98$' "roce: --traffic-class override"
expect_line "$out" '^  export OMPI_MCA_oob_tcp_if_include=eth9$' "roce: --iface override"
expect_line "$out" '^  export NCCL_DEBUG=INFO$' "--env"
expect_line "$out" '--mca orte_abort_on_non_zero_status 0 ' "--fault-tolerant"

out=$(dry --fabric ib --hostfile <(printf 'n1 slots=8\n# comment\nn2 slots=8\n') --gpus-per-node 8 --bind gpu)
expect_line "$out" '^  export NCCL_IB_HCA=mlx5_3:1$' "ib: the active InfiniBand port"
expect_line "$out" '--map-by ppr:8:node -np 16 --bind-to none .*/launch/lib/bind-gpu /bin/true run' "ib: one rank per GPU through bind-gpu"

out=$(dry --fabric tcp --iface enp1s0 --hosts a,b,c --bind core)
expect_line "$out" '^  export NCCL_SOCKET_IFNAME=enp1s0$' "tcp: interface"
expect_line "$out" '^  export OMPI_MCA_btl_tcp_if_include=enp1s0$' "tcp: Open MPI interface"
expect_line "$out" '^  export NCCL_IB_DISABLE=1$' "tcp: no IB in NCCL"
expect_line "$out" '--host a:1,b:1,c:1 -np 3 --bind-to core ' "tcp: hosts and core binding"
note "presets and overrides resolve as expected"

# --- roce: the exported traffic class against what the ports are configured for --
# A fake iproute2 `dcb` answering in the format of dcb-app(8)/dcb-pfc(8):
# DSCP 24 and 26 -> priority 3, PFC on priority 3 only (or only on 4 with PFC_ON=4).
fake_dcb=$scratch/dcb
cat >"$fake_dcb" <<'SH'
#!/bin/sh
case "$*" in
  *"app show dev ens1f0np0 dscp-prio"*) echo "dscp-prio 0:0 24:3 26:3 48:6" ;;
  *"pfc show dev ens1f0np0 prio-pfc"*)
    on=${PFC_ON:-3}; line=prio-pfc
    for p in 0 1 2 3 4 5 6 7; do if [ "$p" = "$on" ]; then line="$line $p:on"; else line="$line $p:off"; fi; done
    echo "$line" ;;
  *) exit 1 ;;
esac
SH
chmod +x "$fake_dcb"
export FABSCOPE_DCB_TOOL=$fake_dcb
roce_err() { "$wrapper" --bin /bin/true --dry-run --fabric roce --hosts a --bind none "$@" -- run --scenario s.yaml --output r.h5 2>&1 >/dev/null; }
err=$(roce_err)
[[ -z $err ]] || fail "roce with a matching configuration warned: $err"
mkdir -p "$sysfs/class/infiniband/mlx5_0/tc/1"
echo "Global tclass=96" >"$sysfs/class/infiniband/mlx5_0/tc/1/traffic_class"
expect_line "$(roce_err)" 'warning: mlx5_0 port 1 forces traffic class 96 .*the preset exports 106' "roce: port-forced class differs"
[[ -z $(roce_err --traffic-class 96) ]] || fail "roce --traffic-class 96 still warned: $(roce_err --traffic-class 96)"
rm -r "$sysfs/class/infiniband/mlx5_0/tc"
mkdir -p "$sysfs/kernel/config/rdma_cm/mlx5_1/ports/1"
echo 96 >"$sysfs/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_tos"
expect_line "$(roce_err)" "warning: mlx5_1 port 1: rdma_cm's default ToS is 96, the preset exports traffic class 106" "roce: rdma_cm ToS differs"
rm -r "$sysfs/kernel"
expect_line "$(PFC_ON=4 roce_err)" 'warning: ens1f0np0: traffic class 106 = DSCP 26 -> priority 3, but PFC on priority 3 is .off.' "roce: PFC off on the priority"
expect_line "$(roce_err --traffic-class 40)" 'warning: ens1f0np0: no DSCP 10 entry in the DCB APP table' "roce: DSCP not in the APP table"
mkdir -p "$sysfs/class/net/ens1f0np0/ecn/roce_np/enable"
echo 0 >"$sysfs/class/net/ens1f0np0/ecn/roce_np/enable/3"
expect_line "$(roce_err)" 'warning: ens1f0np0: ECN \(roce_np\) is off on priority 3' "roce: ECN off on the priority"
rm -r "$sysfs/class/net"
FABSCOPE_DCB_TOOL=/nonexistent/dcb expect_line "$(FABSCOPE_DCB_TOOL=/nonexistent/dcb roce_err)" "note: '/nonexistent/dcb' \(iproute2\) is not installed" "roce: no dcb tool is said"
unset FABSCOPE_DCB_TOOL
note "roce preset warns when the ports are configured for another traffic class or PFC/ECN are off on its priority"

# --- usage errors exit 2 with a message -----------------------------------------
expect_usage_error() {  # pattern args...
  local pattern=$1 status=0 output
  shift
  output=$("$wrapper" --bin /bin/true --dry-run "$@" 2>&1) || status=$?
  ((status == 2)) || fail "'fabscope-mpirun $*' exited $status, expected 2"
  grep -q -- "$pattern" <<<"$output" || fail "'fabscope-mpirun $*' did not explain: $output"
}
expect_usage_error "unknown fabric 'myrinet'" --fabric myrinet -- run
expect_usage_error "--bind must be gpu, core or none" --bind socket -- run
expect_usage_error "no fabscope arguments" --hosts a
expect_usage_error "give --hostfile or --hosts, not both" --hosts a --hostfile /dev/null -- run
FABSCOPE_SYSFS_ROOT=$scratch/empty expect_usage_error "no ACTIVE InfiniBand port" --fabric ib -- run
note "usage errors exit 2 with a message"

# --- bind-gpu: local rank -> GPU, NUMA node from the GPU's PCI device --------------
mkdir -p "$scratch/bin" "$sysfs/bus/pci/devices/0000:17:00.0" "$sysfs/bus/pci/devices/0000:b1:00.0" "$sysfs/devices/system/node/node0"
cat >"$scratch/bin/nvidia-smi" <<'EOF'
#!/bin/sh
printf '00000000:17:00.0\n00000000:B1:00.0\n'
EOF
chmod +x "$scratch/bin/nvidia-smi"
echo -1 >"$sysfs/bus/pci/devices/0000:17:00.0/numa_node"
echo 0 >"$sysfs/bus/pci/devices/0000:b1:00.0/numa_node"
cut -d- -f1 /sys/devices/system/cpu/online >"$sysfs/devices/system/node/node0/cpulist"
out=$(PATH=$scratch/bin:$PATH OMPI_COMM_WORLD_LOCAL_RANK=0 "$bind_gpu" sh -c 'echo "$CUDA_VISIBLE_DEVICES $FABSCOPE_BIND_NUMA $CUDA_DEVICE_ORDER"')
[[ $out == "0 -1 PCI_BUS_ID" ]] || fail "bind-gpu local rank 0: got '$out', expected GPU 0, no NUMA node"
out=$(PATH=$scratch/bin:$PATH SLURM_LOCALID=1 "$bind_gpu" sh -c 'echo "$CUDA_VISIBLE_DEVICES $FABSCOPE_BIND_NUMA $(taskset -cp $$ | sed "s/.*: //")"')
[[ $out == "1 0 $(cat "$sysfs/devices/system/node/node0/cpulist")" ]] || fail "bind-gpu local rank 1: got '$out', expected GPU 1 on NUMA node 0 bound to its CPUs"
status=0
output=$(PATH=$scratch/bin:$PATH OMPI_COMM_WORLD_LOCAL_RANK=2 "$bind_gpu" true 2>&1) || status=$?
((status == 2)) && grep -q "local rank 2 has no GPU" <<<"$output" || fail "bind-gpu with more ranks than GPUs: exit $status, '$output'"
note "bind-gpu picks the local rank's GPU and its NUMA node's CPUs, refuses extra ranks"

fi

# --- fabscope's exit code comes back through mpirun ------------------------------
if ! part_wanted mpirun-exit; then
  :
elif ! command -v mpirun >/dev/null; then
  skip_part mpirun-exit "no mpirun here"
else
  printf '#!/bin/sh\nexit 3\n' >"$scratch/exit3"
  chmod +x "$scratch/exit3"
  status=0
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 60 \
    "$wrapper" --bin "$scratch/exit3" --hosts localhost -N 2 --bind none -- run >/dev/null 2>&1 || status=$?
  ((status == 3)) || fail "fabscope-mpirun returned $status for ranks that exited 3"
  note "exit code 3 of the ranks passed through"
fi
note "PASS"
