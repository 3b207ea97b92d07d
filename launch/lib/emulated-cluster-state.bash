# Shared by launch/emulated-cluster and launch/emulated-cluster-rsh: where the
# state of an emulated cluster lives and how to read it.
#
# The state file is the only authority on what the emulated cluster created.
# Every line is "kind fields...":
#   version 1
#   prefix  <prefix>
#   subnet  <cidr>
#   bridge  <name> <ifindex> <root address/len>
#   host    <name> <netns inode> <bridge port> <port ifindex> <address/len>
# Lines are appended the moment the object exists, so an interrupted `up` can
# still be undone by `down`. The netns inode and the ifindex are recorded
# because a name alone does not prove that we created the object: a namespace
# deleted and re-created by someone else under the same name has a new inode.

EMULATED_CLUSTER_STATE_DIR=${FABSCOPE_CLUSTER_STATE_DIR:-/run/fabscope-emulated-cluster}

emulated_cluster_die() {
  echo "emulated-cluster: error: $*" >&2
  exit 1
}

emulated_cluster_state_file() {
  echo "$EMULATED_CLUSTER_STATE_DIR/$1.state"
}

# Prints the field list of every state line of the given kind.
emulated_cluster_state_lines() {
  local state_file=$1 kind=$2
  [[ -r $state_file ]] || return 0
  awk -v kind="$kind" '$1 == kind { $1 = ""; sub(/^ /, ""); print }' "$state_file"
}

emulated_cluster_state_value() {
  emulated_cluster_state_lines "$1" "$2" | head -n 1
}

# The inode of a named network namespace: its identity, unlike its name.
emulated_cluster_netns_inode() {
  stat -L -c %i "/run/netns/$1" 2>/dev/null
}

# Finds the state file that created the namespace HOST and checks that the
# namespace present now is still the one it created. Prints the state file.
emulated_cluster_find_host() {
  local host=$1 state_file name inode _rest
  shopt -s nullglob
  for state_file in "$EMULATED_CLUSTER_STATE_DIR"/*.state; do
    while read -r name inode _rest; do
      [[ $name == "$host" ]] || continue
      if [[ $(emulated_cluster_netns_inode "$host") != "$inode" ]]; then
        emulated_cluster_die "namespace '$host' is listed in $state_file (inode $inode) but the namespace present now is not the one this tool created; refusing to use it"
      fi
      echo "$state_file"
      return 0
    done < <(emulated_cluster_state_lines "$state_file" host)
  done
  emulated_cluster_die "host '$host' is not part of any emulated cluster in $EMULATED_CLUSTER_STATE_DIR (run 'launch/emulated-cluster status')"
}
