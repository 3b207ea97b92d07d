#!/usr/bin/env bash
# The api kind's servers on an emulated 4-host cluster (2 clients, 2 servers):
# they listen on their host's fabric address only (not on every address), and a
# connection from outside the run (the root namespace's address on the bridge,
# which no rank has) is closed at once and counted, while every request of the
# run's own clients is answered and checked.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
up_emulated_cluster fapi 198.18.62.0/24 4
cat > "$scratch/api.yaml" <<'YAML'
name: api-outsiders
tests:
  - name: front
    kind: api
    sizes: [512]
    clients: 2
    rate: 40
    requests: 120
    warmup_requests: 2
    chunks: 4
    service_time: 2ms
    chunk_interval: 2ms
    timeout: 60s
YAML
# The outsider: while the run lasts, find each server host's listening sockets and
# connect to them from the root namespace (198.18.62.254, an address of no rank).
(
  for _ in $(seq 1 100); do
    for host in fapi2 fapi3; do
      # one look per host and round: what is recorded as seen is exactly what is tried
      # (two looks let a server that started between them be reached but not recorded)
      seen=$(ip netns exec "$host" ss -ltnH 2>/dev/null | awk '{print $4}')
      [[ -n $seen ]] && printf '%s\n' "$seen" >>"$scratch/listeners"
      while read -r where; do
        [[ $where == 198.18.62.* ]] || continue
        timeout 1 bash -c "exec 3<>/dev/tcp/${where%:*}/${where##*:}; sleep 0.05" 2>/dev/null && echo "$where" >>"$scratch/connected" || true
      done <<<"$seen"
    done
    # both server hosts reached (two lines from one host while the other's server was
    # still starting once ended the search early on a loaded machine)
    [[ -s $scratch/connected ]] && [[ $(cut -d: -f1 "$scratch/connected" | sort -u | wc -l) -ge 2 ]] && break
    sleep 0.1
  done
) &
outsider=$!
set +e
timeout --kill-after=10 150 "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" --fabric emulated --bin "$FABSCOPE_BIN" \
  -- run --scenario "$scratch/api.yaml" --output "$scratch/api.h5" --no-progress >"$scratch/run.log" 2>&1
rc=$?
set -e
wait "$outsider" || true
((rc == 0)) || { tail -20 "$scratch/run.log" >&2; fail "fabscope exited with $rc"; }
[[ -s $scratch/connected ]] || fail "the outsider never reached a listening server (listeners seen: $(sort -u "$scratch/listeners" 2>/dev/null | tr '\n' ' '))"
/usr/bin/python3 - "$scratch/api.h5" "$scratch/listeners" <<'PY' || fail "the outsider was not refused, or the run's own requests suffered"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    a = f["tests/0000"].attrs
    assert a["status"] == "passed", (a["status"], a["error"])
    assert a["requests_ok"] == a["requests_measured"] == 240, (a["requests_ok"], a["requests_measured"])
    assert a["outsiders_refused"] >= 1, a["outsiders_refused"]
    iface = a["interface"].decode() if isinstance(a["interface"], bytes) else a["interface"]
    assert iface == "eth1", iface
    # each server listened on its own host's fabric address (198.18.62.3/.4 for ranks
    # 2/3 on fapi2/fapi3), and that exact socket is what the hosts showed: bound to
    # the address, not to every address
    eps = a["server_endpoints"].decode() if isinstance(a["server_endpoints"], bytes) else a["server_endpoints"]
    listeners = set(open(sys.argv[2]).read().split())
    for ep in eps.split(", "):
        _, rank, where = ep.split(" ")
        assert where.startswith(f"198.18.62.{int(rank) + 1}:"), (rank, where)
        assert where in listeners, (where, sorted(listeners))
        port = where.rsplit(":", 1)[1]
        assert not any(l.endswith(":" + port) and not l.startswith("198.18.62.") for l in listeners), (port, listeners)
    print(f"outsiders refused: {a['outsiders_refused']}, requests ok: {a['requests_ok']}, servers at {eps}")
PY
note "PASS"
