#!/usr/bin/env bash
# The smoke scenario over the UCX transport on 2 and 4 ranks of this host,
# once over shared memory (UCX_TLS=sm,self) and once over TCP on the loopback
# interface (UCX_TLS=tcp,self, UCX_NET_DEVICES=lo). Each run must exit 0 and
# leave a complete result file whose tests all ran over 'ucx' with samples.
set -euo pipefail

src=${FABSCOPE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${FABSCOPE_BIN:-$src/build/fabscope}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

work=$(mktemp -d /tmp/fabscope-ucx-p2p.XXXXXX)
trap 'rm -rf "$work"' EXIT

check_result() {  # file ranks
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys, h5py
path, ranks = sys.argv[1], int(sys.argv[2])
problems = []
with h5py.File(path, "r") as f:
    if int(f.attrs["complete"]) != 1: problems.append("complete != 1")
    if int(f.attrs["nranks"]) != ranks: problems.append(f"nranks {f.attrs['nranks']} != {ranks}")
    tests = f["tests"]
    if len(tests) < 9: problems.append(f"only {len(tests)} test instances")
    for name, t in tests.items():
        tr = t.attrs["transport"]
        tr = tr.decode() if isinstance(tr, bytes) else str(tr)
        st = t.attrs["status"]
        st = st.decode() if isinstance(st, bytes) else str(st)
        if tr != "ucx": problems.append(f"/tests/{name}: transport '{tr}', expected 'ucx'")
        if st != "passed": problems.append(f"/tests/{name}: status '{st}': {t.attrs['error']}")
        if t["samples"].shape[0] == 0: problems.append(f"/tests/{name}: no samples")
        elif (t["samples"]["t_done_ns"] <= t["samples"]["t_post_ns"]).any():
            problems.append(f"/tests/{name}: a sample ends before it starts")
for p in problems: print(f"{path}: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
}

failures=0
run_case() {  # label ranks env...
  local label=$1 ranks=$2
  shift 2
  local out=$work/$label-$ranks.h5
  echo "== UCX over $label, $ranks ranks ($*)"
  local rc=0
  env "$@" timeout 300 mpirun -np "$ranks" -x UCX_TLS -x UCX_NET_DEVICES \
    "$bin" run --scenario "$src/scenarios/smoke.yaml" --set transport=ucx --output "$out" --overwrite \
    >"$work/$label-$ranks.log" 2>&1 || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "FAIL: UCX over $label on $ranks ranks exited $rc (expected 0); log:" >&2
    tail -30 "$work/$label-$ranks.log" >&2
    failures=$((failures + 1))
    return
  fi
  if check_result "$out" "$ranks"; then
    echo "ok: UCX over $label, $ranks ranks"
  else
    echo "FAIL: result file of UCX over $label on $ranks ranks (see above)" >&2
    failures=$((failures + 1))
  fi
}

for ranks in 2 4; do
  run_case shm "$ranks" UCX_TLS=sm,self UCX_NET_DEVICES=all
  run_case tcp-loopback "$ranks" UCX_TLS=tcp,self UCX_NET_DEVICES=lo
done
[[ $failures -eq 0 ]] || { echo "$failures UCX run(s) failed" >&2; exit 1; }
echo "all UCX point-to-point runs passed"
