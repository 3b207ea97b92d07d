#!/usr/bin/env bash
# fabscope over UCX against UCX's own ucx_perftest (package ucx-utils) on the
# same host, same transports, same error-handling mode (-e = peer, as
# fabscope uses): 8-byte tag latency p50 and 4 MiB tag bandwidth, over shared
# memory and over TCP loopback. Prints fabscope/reference ratios.
# Targets (issue 5): latency ratio <= 1.05, bandwidth ratio >= 0.97.
# Not a ctest test: numbers need a quiet machine. Usage:
#   tests/bench/ucx_vs_perftest.sh [path/to/fabscope]
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-${FABSCOPE_BIN:-$src/build/fabscope}}
lat_iters=${LAT_ITERS:-50000}
bw_iters=${BW_ITERS:-400}   # 4 MiB messages
window=16
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export UCX_WARN_UNUSED_ENV_VARS=n UCX_POSIX_ERROR_HANDLING=y UCX_SYSV_ERROR_HANDLING=y
command -v ucx_perftest >/dev/null || { echo "ucx_perftest not found (apt-get install ucx-utils)" >&2; exit 2; }
[[ -x $bin ]] || { echo "fabscope binary not found at $bin" >&2; exit 2; }

work=$(mktemp -d /tmp/fabscope-ucx-bench.XXXXXX)
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/bench.yaml" <<YAML
name: ucx-vs-perftest
description: 8-byte tag latency and 4 MiB tag bandwidth, one pair
seed: 7
defaults: {transport: ucx, memory: host, timeout: 300s}
tests:
  - {name: lat, kind: latency, pattern: pairs, sizes: [8], iterations: $lat_iters, warmup: 2000}
  - {name: bw, kind: bandwidth, pattern: pairs, sizes: [4MiB], window: $window, iterations: $((bw_iters / window)), warmup: 3}
YAML

port=$((20000 + RANDOM % 20000))
# Final line of a ucx_perftest client run: iterations, p50 us, avg us, overall us,
# avg MB/s, overall MB/s, avg msg/s, overall msg/s (MB = 2^20 bytes).
perftest() {  # test size iters warmup -> final numbers line
  port=$((port + 1))
  ucx_perftest -p "$port" -e -c 0 >"$work/server.log" 2>&1 &
  server_pid=$!
  sleep 1
  ucx_perftest 127.0.0.1 -p "$port" -e -c 1 -t "$1" -s "$2" -n "$3" -w "$4" -f >"$work/client.log" 2>&1
  wait "$server_pid" || true
  server_pid=
  grep -E '^[[:space:]]+[0-9]+[[:space:]]' "$work/client.log" | tail -1
}

fabscope_numbers() {  # -> "p50_latency_us bandwidth_MBps" (MB = 2^20 bytes)
  mpirun -np 2 --bind-to core -x UCX_TLS -x UCX_NET_DEVICES -x UCX_POSIX_ERROR_HANDLING -x UCX_SYSV_ERROR_HANDLING \
    -x UCX_WARN_UNUSED_ENV_VARS "$bin" run --scenario "$work/bench.yaml" --output "$work/f.h5" --overwrite \
    --no-progress >"$work/fabscope.log" 2>&1 || { cat "$work/fabscope.log" >&2; exit 1; }
  /usr/bin/python3 - "$work/f.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as f:
    lat = bw = None
    for t in f["tests"].values():
        name = t.attrs["name"]; name = name.decode() if isinstance(name, bytes) else str(name)
        s = t["samples"][()]
        if name == "lat":
            lat = float(np.median((s["t_done_ns"] - s["t_post_ns"]) / 2.0)) / 1e3
        elif name == "bw":
            bw = float(s["bytes"].sum()) / (float((s["t_done_ns"] - s["t_post_ns"]).sum()) / 1e9) / 2**20
print(f"{lat:.3f} {bw:.1f}")
PY
}

printf '%-14s %-22s %12s %12s %8s %s\n' fabric metric fabscope ucx_perftest ratio target
status=0
for fabric in shm tcp-loopback; do
  if [[ $fabric == shm ]]; then
    export UCX_TLS=sm,self UCX_NET_DEVICES=all
  else
    export UCX_TLS=tcp,self UCX_NET_DEVICES=lo
  fi
  read -r f_lat f_bw < <(fabscope_numbers)
  ref_lat=$(perftest tag_lat 8 "$lat_iters" 2000 | awk '{print $2}')
  ref_bw=$(perftest tag_bw 4194304 "$bw_iters" 20 | awk '{print $6}')
  lat_ratio=$(/usr/bin/python3 -c "print(f'{$f_lat / $ref_lat:.3f}')")
  bw_ratio=$(/usr/bin/python3 -c "print(f'{$f_bw / $ref_bw:.3f}')")
  lat_ok=$(/usr/bin/python3 -c "print('ok' if $lat_ratio <= 1.05 else 'MISSED')")
  bw_ok=$(/usr/bin/python3 -c "print('ok' if $bw_ratio >= 0.97 else 'MISSED')")
  printf '%-14s %-22s %12s %12s %8s %s\n' "$fabric" "8B tag latency p50 us" "$f_lat" "$ref_lat" "$lat_ratio" "<=1.05 $lat_ok"
  printf '%-14s %-22s %12s %12s %8s %s\n' "$fabric" "4MiB tag bw MB/s" "$f_bw" "$ref_bw" "$bw_ratio" ">=0.97 $bw_ok"
  [[ $lat_ok == ok && $bw_ok == ok ]] || status=1
done
exit $status
