# Congestion control / QoS on this machine's own interfaces, end to end: the
# DCB of every interface with a driver is asked of the kernel over rtnetlink;
# this machine has no DCB-capable NIC, so each is recorded as "not configured"
# (not an error, no note) in /hosts/<host>/inventory. A manifest 'qos' item
# with must_match that differs (PFC on priority 3 intended) exits 1; the same
# item advisory exits 0. `fabscope inventory` prints the QoS block.
# ctest-labels: shares-machine
# (it checks files, messages or packages, not time: tests/run runs two such tests at a time)
source "$(dirname "$0")/lib.bash"
iface=""
for dir in /sys/class/net/*; do
  name=$(basename "$dir")
  [[ $name != lo && -e $dir/device/driver ]] && { iface=$name; break; }
done
[[ -n $iface ]] || { echo "SKIP: no interface with a driver on this machine"; exit 77; }

cat > "$scratch/tiny.yaml" <<'YAML'
name: qos-manifest
tests:
  - name: lat
    kind: latency
    sizes: [8]
    iterations: 20
    warmup: 2
    timeout: 60s
YAML
manifest() {  # MUST_MATCH
  cat <<YAML
name: lossless-design
qos:
  interfaces: [$iface]
  pfc_priorities: [3]
  must_match: $1
YAML
}
manifest true > "$scratch/must.yaml"
manifest false > "$scratch/advisory.yaml"

timeout 60 "$FABSCOPE_BIN" inventory > "$scratch/inventory.txt"
grep -q "congestion control / QoS" "$scratch/inventory.txt"
grep -qE "^  $iface  dcb not configured  dcb_detail the interface has no DCB support" "$scratch/inventory.txt" \
  || { echo "FAIL: $iface not recorded as 'not configured'"; cat "$scratch/inventory.txt"; exit 1; }

set +e
run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/tiny.yaml" --output "$scratch/must.h5" --no-progress \
  --manifest "$scratch/must.yaml" > "$scratch/must.out" 2>&1
rc=$?
set -e
[ "$rc" = 1 ] || { echo "FAIL: a must-match qos difference exited $rc, expected 1"; cat "$scratch/must.out"; exit 1; }
grep -q "manifest mismatch: .*qos/pfc_priorities@$iface intended '3', found 'DCB not configured'" "$scratch/must.out"

run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/tiny.yaml" --output "$scratch/advisory.h5" --no-progress \
  --manifest "$scratch/advisory.yaml" > "$scratch/advisory.out"
grep -q "manifest (advisory): .*qos/pfc_priorities@$iface" "$scratch/advisory.out"

/usr/bin/python3 - "$scratch" "$iface" <<'PY'
import sys, h5py
d, iface = sys.argv[1], sys.argv[2]
text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
with h5py.File(d + "/must.h5", "r") as f:
    assert int(f.attrs["manifest_failed"]) == 1 and int(f.attrs["exit_code"]) == 1
    (host,) = list(f["hosts"])
    facts = {text(r["key"]): text(r["value"]) for r in f["hosts"][host]["inventory"][()]}
    assert facts[f"qos/net/{iface}/dcb"] == "not configured", facts
    assert facts[f"qos/net/{iface}/ecn_np"] == "unknown", facts
    assert not any(k.startswith("note/") and "qos:" in v for k, v in facts.items()), facts
    assert "qos/net/lo/dcb" not in facts
with h5py.File(d + "/advisory.h5", "r") as f:
    assert int(f.attrs["manifest_failed"]) == 0 and int(f.attrs["exit_code"]) == 0
PY
echo "PASS: $iface recorded as DCB not configured; must-match qos difference exits 1, advisory exits 0"
