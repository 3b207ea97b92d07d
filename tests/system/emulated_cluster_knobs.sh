#!/usr/bin/env bash
# The per-host knobs of launch/emulated-cluster act on real packets (receive rate
# limit, egress limit, loss, link down/up, clear), and the tool refuses to use or delete namespaces
# it did not create.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"

require_root "creates network namespaces, qdiscs and nftables rules"
FABSCOPE_SOURCE_DIR=${FABSCOPE_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cluster=$FABSCOPE_SOURCE_DIR/launch/emulated-cluster
rsh_agent=$FABSCOPE_SOURCE_DIR/launch/emulated-cluster-rsh
export FABSCOPE_CLUSTER_PREFIX=ecknob
state_dir=${FABSCOPE_CLUSTER_STATE_DIR:-/run/fabscope-emulated-cluster}
subnet=198.18.11.0/24
sender=ecknob0 receiver=ecknob1 receiver_address=198.18.11.2

# Namespaces this test makes itself (to impersonate someone else's) are
# removed by the test, not by the tool.
foreign_namespaces=()
remove_foreign_namespaces() {
  local ns
  for ns in "${foreign_namespaces[@]+"${foreign_namespaces[@]}"}"; do
    ip netns del "$ns" 2>/dev/null || true
  done
}
errors=$(mktemp /tmp/fabscope-knobs-errors.XXXXXX)
on_exit "rm -f '$errors'"
on_exit "'$cluster' down >/dev/null 2>&1 || true"
on_exit "remove_foreign_namespaces"
on_exit "'$cluster' down >/dev/null 2>&1 || true"

# --- up refuses a name that someone else's namespace already has ---------------
ip netns add ecknob1
foreign_namespaces+=(ecknob1)
if "$cluster" up 2 --subnet "$subnet" 2>"$errors"; then
  fail "up 2 succeeded although namespace ecknob1 already existed"
fi
grep -q "ecknob1' already exists" "$errors" || fail "up refused for an unexpected reason: $(cat "$errors")"
[[ -e /run/netns/ecknob1 ]] || fail "a failed up removed the namespace it did not create"
ip netns del ecknob1
foreign_namespaces=()
note "up refuses to adopt an existing namespace"

"$cluster" up 2 --subnet "$subnet"

# Reachability through the bridge, proven by a TCP round trip: a connection
# to a closed port is answered by a reset (reachable), a cut link or dropped
# packets end in a timeout.
reachable() {
  ip netns exec "$sender" /usr/bin/python3 - "$receiver_address" <<'PY'
import socket, sys
s = socket.socket()
s.settimeout(1.5)
try:
    s.connect((sys.argv[1], 9))
except ConnectionRefusedError:
    sys.exit(0)
except OSError:
    sys.exit(1)
sys.exit(0)
PY
}
unreachable() { ! reachable; }

# Seconds to push BYTES from sender to a receiver inside the receiver host.
transfer_seconds() {
  local bytes=$1
  ip netns exec "$receiver" timeout 60 /usr/bin/python3 -c '
import socket, sys
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", 5901)); srv.listen(1); srv.settimeout(30)
conn, _ = srv.accept(); conn.settimeout(30)
while conn.recv(1 << 16): pass
' &
  local receiver_pid=$!
  local seconds
  seconds=$(ip netns exec "$sender" timeout 60 /usr/bin/python3 - "$receiver_address" "$bytes" <<'PY'
import socket, sys, time
address, total = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 10
while True:  # the receiver may still be starting
    try:
        s = socket.create_connection((address, 5901), timeout=2)
        break
    except ConnectionRefusedError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.05)
chunk = b"x" * (1 << 16)
start = time.monotonic()
sent = 0
while sent < total:
    s.sendall(chunk)
    sent += len(chunk)
s.shutdown(socket.SHUT_WR)
s.recv(1)  # returns when the receiver closed: every byte has arrived
print(f"{time.monotonic() - start:.3f}")
PY
  ) || { stop_pid "$receiver_pid" receiver; fail "transfer from $sender to $receiver failed"; }
  wait "$receiver_pid" || fail "receiver in $receiver failed"
  echo "$seconds"
}

# --- rate: tbf on the receiver's bridge port, measured ------------------------
"$cluster" rate "$receiver" 20mbit --burst 32kb
tc qdisc show dev "$receiver-br" | grep -q 'tbf.*rate 20Mbit' || fail "no 20Mbit tbf on $receiver-br: $(tc qdisc show dev "$receiver-br")"
# 2 MiB at 20 Mbit/s take ~0.84 s; unshaped the bridge moves them in a few ms.
limited=$(transfer_seconds $((2 << 20)))
note "2 MiB into $receiver at 20mbit took $limited s"
awk -v t="$limited" 'BEGIN { exit !(t >= 0.6) }' || fail "2 MiB took only $limited s through a 20mbit limit (expected >= 0.6 s)"

# --- egress: tbf on the host's own eth1 limits what it sends, nothing else -------
"$cluster" clear "$receiver" >/dev/null
"$cluster" egress "$sender" 20mbit --burst 32kb
ip netns exec "$sender" tc qdisc show dev eth1 | grep -q 'tbf.*rate 20Mbit' \
  || fail "no 20Mbit tbf on eth1 in $sender: $(ip netns exec "$sender" tc qdisc show dev eth1)"
limited=$(transfer_seconds $((2 << 20)))
note "2 MiB out of $sender at egress 20mbit took $limited s"
awk -v t="$limited" 'BEGIN { exit !(t >= 0.6) }' || fail "2 MiB left $sender in only $limited s through a 20mbit egress limit (expected >= 0.6 s)"
"$cluster" clear "$sender" >/dev/null
! ip netns exec "$sender" tc qdisc show dev eth1 | grep -q tbf || fail "clear left the egress tbf in $sender"
# The same limit on the receiving host leaves its receive side free (it only sends ACKs).
"$cluster" egress "$receiver" 20mbit --burst 32kb
receive_free=$(transfer_seconds $((2 << 20)))
note "2 MiB into $receiver with its egress at 20mbit took $receive_free s"
awk -v t="$receive_free" 'BEGIN { exit !(t < 0.5) }' || fail "an egress limit on $receiver slowed what it receives: 2 MiB took $receive_free s (expected < 0.5 s)"
"$cluster" status | grep -q "^$receiver .*20Mbit" || fail "status does not show the egress limit of $receiver: $("$cluster" status)"
"$cluster" clear "$receiver" >/dev/null
if "$cluster" egress "$receiver" 20furlongs 2>/dev/null; then
  fail "egress accepted the rate '20furlongs'"
fi

# --- loss: nftables rules in the namespace, 100 % cuts the host off -------------
"$cluster" loss "$receiver" 12.5
# Captured first: `nft ... | grep -q` under pipefail fails when grep stops reading early.
ruleset=$(ip netns exec "$receiver" nft list ruleset)
grep -q 'numgen random mod 10000 < 1250' <<<"$ruleset" || fail "no 12.5 % loss rule in $receiver: $ruleset"
"$cluster" loss "$receiver" 100
unreachable || fail "$receiver is still reachable with 100 % loss"
"$cluster" loss "$receiver" 0
wait_until 5 "$receiver reachable after loss 0" reachable
note "loss rules present, 100 % loss cuts $receiver off, 0 % restores it"

# --- link down / up -----------------------------------------------------------
"$cluster" link "$receiver" down
unreachable || fail "$receiver is reachable with its link down"
"$cluster" link "$receiver" up
wait_until 5 "$receiver reachable after link up" reachable
note "link down makes $receiver unreachable, link up brings it back"

# --- clear ----------------------------------------------------------------------
"$cluster" loss "$receiver" 50
"$cluster" link "$receiver" down
"$cluster" clear "$receiver"
! tc qdisc show dev "$receiver-br" | grep -q tbf || fail "clear left the tbf on $receiver-br"
! ip netns exec "$receiver" nft list tables | grep -q fabscope_emulated || fail "clear left the loss table in $receiver"
wait_until 5 "$receiver reachable after clear" reachable
unshaped=$(transfer_seconds $((2 << 20)))
note "after clear: 2 MiB in $unshaped s"
awk -v t="$unshaped" 'BEGIN { exit !(t < 0.5) }' || fail "2 MiB took $unshaped s after clear (expected < 0.5 s)"

# --- a namespace replaced behind the tool's back is not touched -----------------
ip netns del "$receiver"
ip netns add "$receiver"
foreign_namespaces+=("$receiver")
if "$rsh_agent" "$receiver" true 2>/dev/null; then
  fail "the rsh agent entered a namespace the tool did not create"
fi
if "$cluster" rate "$receiver" 1gbit 2>/dev/null; then
  fail "rate acted on a namespace the tool did not create"
fi
if "$cluster" down 2>"$errors"; then
  fail "down reported success although it had to leave the foreign namespace $receiver"
fi
grep -q "refusing to delete namespace '$receiver'" "$errors" || fail "down did not say why it failed: $(cat "$errors")"
[[ -e /run/netns/$receiver ]] || fail "down deleted namespace $receiver, which it did not create"
[[ ! -e /run/netns/$sender ]] || fail "down kept its own namespace $sender"
! ip link show ecknob-br >/dev/null 2>&1 || fail "down kept its own bridge ecknob-br"
note "down refuses to delete a namespace it did not create and removes the rest"

# Our impostor goes; then down finishes (nothing of its own is left).
remove_foreign_namespaces
foreign_namespaces=()
"$cluster" down
[[ ! -e $state_dir/ecknob.state ]] || fail "state file still there after the final down"
note "PASS"
