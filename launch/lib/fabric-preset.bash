# Fabric presets, shared by launch/fabscope-mpirun and launch/slurm/fabscope.sbatch.
#
# A preset is launch/presets/<name>.env, a bash fragment that states what NCCL,
# UCX and Open MPI need on that fabric by calling `fabric_set NAME VALUE`.
# Its inputs, filled from the launcher's options or detected from sysfs:
#   FABRIC_HCA            HCA ports, "mlx5_0:1,mlx5_1:1"       (--hca)
#   FABRIC_GID_INDEX      RoCE GID index                       (--gid-index)
#   FABRIC_TRAFFIC_CLASS  IB traffic class (DSCP << 2)         (--traffic-class)
#   FABRIC_IFACE          IP interface for sockets/bootstrap   (--iface)
# Its outputs besides the variables: FABRIC_DEFAULT_HOSTS (comma list) and
# FABRIC_DEFAULT_BIND, used when the user gave no hosts / no binding.
# A preset sets its values unconditionally (it is the statement of what the
# fabric needs); users change single variables with the launcher's --env.

FABRIC_SYSFS=${FABSCOPE_SYSFS_ROOT:-/sys}
FABRIC_ENV_NAMES=()

fabric_die() {
  echo "fabric preset: error: $*" >&2
  exit 2
}

fabric_set() {
  local name=$1 value=$2
  [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || fabric_die "bad variable name '$name'"
  local known
  for known in "${FABRIC_ENV_NAMES[@]+"${FABRIC_ENV_NAMES[@]}"}"; do
    [[ $known == "$name" ]] && { export "$name=$value"; return 0; }
  done
  FABRIC_ENV_NAMES+=("$name")
  export "$name=$value"
}

# Active ports of RDMA devices whose link layer is $1 ("InfiniBand" or
# "Ethernet"), as "dev:port,dev:port".
fabric_detect_hcas() {
  local want=$1 port_dir dev port layer state found=()
  shopt -s nullglob
  for port_dir in "$FABRIC_SYSFS"/class/infiniband/*/ports/*; do
    dev=$(basename "$(dirname "$(dirname "$port_dir")")")
    port=$(basename "$port_dir")
    layer=$(<"$port_dir/link_layer") || continue
    state=$(<"$port_dir/state") || continue
    [[ $layer == "$want" && $state == *ACTIVE* ]] && found+=("$dev:$port")
  done
  local IFS=,
  echo "${found[*]}"
}

# The RoCE v2 GID index with an IPv4-mapped address on the first HCA port
# (what NCCL and UCX need for routable RoCE); empty if not found.
fabric_detect_roce_gid_index() {
  local hca_port=${1%%,*} dev port type_file index gid
  dev=${hca_port%%:*}; port=${hca_port##*:}
  shopt -s nullglob
  for type_file in "$FABRIC_SYSFS/class/infiniband/$dev/ports/$port/gid_attrs/types"/*; do
    index=$(basename "$type_file")
    [[ $(<"$type_file") == "RoCE v2" ]] 2>/dev/null || continue
    gid=$(<"$FABRIC_SYSFS/class/infiniband/$dev/ports/$port/gids/$index") || continue
    if [[ $gid == 0000:0000:0000:0000:0000:ffff:* ]]; then
      echo "$index"
      return 0
    fi
  done
}

# The netdev behind the first HCA (RoCE: its Ethernet interface).
fabric_detect_hca_netdev() {
  local dev=${1%%:*} net
  shopt -s nullglob
  for net in "$FABRIC_SYSFS/class/infiniband/$dev/device/net"/*; do
    basename "$net"
    return 0
  done
}

fabric_default_route_iface() {
  ip -4 route show default 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i+1); exit } }'
}

fabric_preset_names() {
  local f names=()
  for f in "$FABSCOPE_LAUNCH_DIR"/presets/*.env; do names+=("$(basename "$f" .env)"); done
  echo "${names[*]}"
}

# Loads preset $1; exports its variables and FABSCOPE_FABRIC.
fabric_preset_load() {
  local name=$1 file="$FABSCOPE_LAUNCH_DIR/presets/$1.env"
  [[ -r $file ]] || fabric_die "unknown fabric '$name' (no $file); known: $(fabric_preset_names)"
  # shellcheck disable=SC1090
  source "$file"
  fabric_set FABSCOPE_FABRIC "$name"
}

# Quotes a word for a shell only when it needs it (readable commands to copy).
fabric_shell_word() {
  if [[ $1 =~ ^[A-Za-z0-9_./:,=@%^+-]+$ ]]; then
    printf '%s' "$1"
  else
    printf "'%s'" "${1//\'/\'\\\'\'}"
  fi
}

fabric_print_env() {
  local name
  for name in "${FABRIC_ENV_NAMES[@]+"${FABRIC_ENV_NAMES[@]}"}"; do
    printf '  export %s=%s\n' "$name" "$(fabric_shell_word "${!name}")"
  done
}

fabric_print_command() {
  local word line="  "
  for word in "$@"; do line+="$(fabric_shell_word "$word") "; done
  echo "${line% }"
}

fabric_warn() {
  echo "fabric preset: warning: $*" >&2
}

# Compares the traffic class a preset exports ($2) with what the HCA ports $1
# ("dev:port,...") are configured for on this host: a class the port forces
# (MLNX_OFED <dev>/tc/<port>/traffic_class), rdma_cm's default ToS (configfs),
# and, when iproute2's `dcb` is installed, that the priority the DSCP
# (class >> 2) maps to has PFC on, plus ECN on that priority (mlx5 sysfs).
# Warns on every mismatch; never fails the launch.
fabric_check_traffic_class() {
  local hcas=$1 tc=$2 hca dev port text forced tos net dscp=$(($2 >> 2)) prio pfc ecn
  local dcb_tool=${FABSCOPE_DCB_TOOL:-dcb}
  local IFS=,
  for hca in $hcas; do
    dev=${hca%%:*}; port=${hca##*:}
    [[ $port != "$hca" ]] || port=1
    text=$(cat "$FABRIC_SYSFS/class/infiniband/$dev/tc/$port/traffic_class" 2>/dev/null || true)
    forced=$(sed -n 's/.*tclass=\([0-9]\+\).*/\1/p; s/^\([0-9]\+\)$/\1/p' <<<"$text" | head -n 1)
    if [[ -n $forced && $forced != "$tc" ]]; then
      fabric_warn "$dev port $port forces traffic class $forced ($FABRIC_SYSFS/class/infiniband/$dev/tc/$port/traffic_class: '$text'), the preset exports $tc; the port's class wins"
    fi
    tos=$(cat "$FABRIC_SYSFS/kernel/config/rdma_cm/$dev/ports/$port/default_roce_tos" 2>/dev/null || true)
    if [[ -n $tos && $tos != "$tc" ]]; then
      fabric_warn "$dev port $port: rdma_cm's default ToS is $tos, the preset exports traffic class $tc (connections set up through rdma_cm use $tos)"
    fi
    net=$(fabric_detect_hca_netdev "$dev")
    [[ -n $net ]] || continue
    if ! command -v "$dcb_tool" >/dev/null 2>&1; then
      echo "fabric preset: note: '$dcb_tool' (iproute2) is not installed: PFC on the priority of DSCP $dscp not checked" >&2
      continue
    fi
    local app_table
    if ! app_table=$("$dcb_tool" -N app show dev "$net" dscp-prio 2>&1); then
      echo "fabric preset: note: DCB of $net not readable ('$dcb_tool app show dev $net': ${app_table:-failed}): PFC on the priority of DSCP $dscp not checked" >&2
      continue
    fi
    prio=$(tr ' ' '\n' <<<"$app_table" | sed -n "s/^$dscp:\([0-7]\)$/\1/p" | head -n 1)
    if [[ -z $prio ]]; then
      fabric_warn "$net: no DSCP $dscp entry in the DCB APP table ('$dcb_tool app show dev $net'): traffic class $tc does not map to a configured priority"
      continue
    fi
    pfc=$({ "$dcb_tool" pfc show dev "$net" prio-pfc 2>/dev/null || true; } | tr ' ' '\n' | sed -n "s/^$prio:\(on\|off\)$/\1/p" | head -n 1)
    [[ $pfc == on ]] || fabric_warn "$net: traffic class $tc = DSCP $dscp -> priority $prio, but PFC on priority $prio is '${pfc:-unknown}' ('$dcb_tool pfc show dev $net')"
    ecn=$(cat "$FABRIC_SYSFS/class/net/$net/ecn/roce_np/enable/$prio" 2>/dev/null || true)
    [[ -z $ecn || $ecn == 1 ]] || fabric_warn "$net: ECN (roce_np) is off on priority $prio that traffic class $tc maps to"
  done
}
