#!/usr/bin/env bash
# fabscope against the tools admins trust, on the same 2 ranks of one host, in one
# script: rounds alternate fabscope and the reference (ABBA order), and
# each row prints the medians, the median of the per-round ratios and their spread.
#
#   MPI   8 B latency p50         fabscope p50 (wait: blocking) / minimal ping-pong p50 (blocking)  <= 1.05
#   MPI   8 B latency p50         fabscope p50 (default)  / the same, polled with MPI_Test   <= 1.05  (latency-polled:
#                                                           fabscope's own share; a deadline needs a polled wait)
#   (context)                     fabscope p50 (default)  / the same after one non-blocking collective (-nbc)
#   (context)                     fabscope p50 (default)  / minimal ping-pong p50 (blocking): what the default's
#                                                           polled waits cost in all
#   MPI   8 B latency, batch      fabscope batch_mean_ns (wait: blocking) / osu_latency average     <= 1.05
#   MPI   4 MiB bandwidth, w 64   fabscope gbps_mean      / minimal stream          >= 0.97  (both: distinct receive slices)
#   MPI   4 MiB bandwidth, batch  fabscope batch_gbps     / osu_bw                  >= 0.97  (both: one receive buffer)
#   UCX   8 B tag latency p50     fabscope p50            / ucx_perftest tag_lat    <= 1.05  (shm, tcp loopback)
#   UCX   4 MiB tag bw, w 16      fabscope batch_gbps     / ucx_perftest tag_bw -O 16  >= 0.97  (both: one receive buffer)
# Receive buffers decide bandwidth through the caches (one buffer: 9.7 against 6.6 GB/s
# for osu_bw here), so every pair compares equal policies (fabscope's receive_buffers).
#
# The verdict of a row (round_verdict.py beside this script): the median of the
# per-round ratios and its distribution-free 95 % confidence interval (sign-test order
# statistics). met / MISSED when the whole interval lies on one side of the target;
# "cannot tell (busy)" when half its width exceeds the row's margin (5 % latency, 3 %
# bandwidth); "cannot tell (at bound)" when it straddles the target; 6 rounds at least.
# Many short rounds beat a few long ones: on a VM the noise is between launches
# (where the ranks land), not within one, so the default is 30 rounds of short runs.
# --seconds S: start no round that would end past S seconds (a bounded campaign).
# --values FILE keeps the raw per-round figures (round, row, side, value).
# --aa runs the reference on both sides (an A/A check of the method on this machine:
# every row should read met, none MISSED, ratios near 1).
# The references: build/tests/bench/fabscope_minimal_mpi (this tree), ucx_perftest
# (Debian's ucx-utils), osu_latency and osu_bw (OSU micro-benchmarks: OSU_DIR=dir or
# on PATH; their rows are skipped, saying so, when not found).
# --only mpi-lat: the two blocking latency rows alone (fabscope with wait: blocking, the
# blocking minimal ping-pong, osu_latency: 3 launches a round instead of 8), for the rows
# whose verdict sits nearest its bound.
# --only mpi-bw: the two MPI bandwidth rows alone (3 launches a round instead of 7: twice
# the rounds in a bounded window, for the rows whose noise is widest).
# usage: tests/bench/overhead.sh [--rounds N] [--cpus A,B] [--bin FABSCOPE] [--minimal PATH] [--only mpi|mpi-lat|mpi-bw|ucx] [--aa] [--values FILE] [--seconds S]
#   --cpus: the two cores both sides are bound to (default 0,1; on a VM, cores away from 0 are often quieter)
# Env: LAT_ITERS (5000), BW_ITERS (30; UCX sends 16 times as many), BENCH_MPIRUN_ARGS.
# Exit: 0 every row with a target met, 1 a target missed, 4 a row could not tell, 2 usage.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
here=$(cd "$(dirname "$0")" && pwd)
rounds=30 cpus=0,1 bin=$src/build/fabscope minimal=$src/build/tests/bench/fabscope_minimal_mpi only=all aa=0 keep_values= seconds=0
read_attrs=${READ_ATTRS:-$src/build/tests/bench/fabscope_read_attrs}
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --minimal) minimal=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --aa) aa=1; shift ;;
    --values) keep_values=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--cpus A,B] [--bin FABSCOPE] [--minimal PATH] [--only mpi|mpi-lat|mpi-bw|ucx] [--aa] [--values FILE] [--seconds S]" >&2; exit 2 ;;
  esac
done
[[ -x $bin ]] || { echo "fabscope binary not found at $bin (cmake --build build)" >&2; exit 2; }
[[ -x $read_attrs ]] || { echo "fabscope_read_attrs not found at $read_attrs (cmake --build build)" >&2; exit 2; }
[[ -x $minimal ]] || { echo "minimal MPI program not found at $minimal (cmake --build build)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export UCX_WARN_UNUSED_ENV_VARS=n UCX_POSIX_ERROR_HANDLING=y UCX_SYSV_ERROR_HANDLING=y
[[ $cpus =~ ^[0-9]+,[0-9]+$ ]] || { echo "--cpus takes two core numbers, e.g. 2,3 (got '$cpus')" >&2; exit 2; }
mpirun_args=(-np 2 --cpu-set "$cpus" --bind-to core ${BENCH_MPIRUN_ARGS:-})
osu_lat=$(command -v "${OSU_DIR:+$OSU_DIR/}osu_latency" || true)
osu_bw=$(command -v "${OSU_DIR:+$OSU_DIR/}osu_bw" || true)
perftest=$(command -v ucx_perftest || true)

work=$(mktemp -d /tmp/fabscope-overhead.XXXXXX)
server_pid=
cleanup() { [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
values=$work/values.tsv; : >"$values"
put() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$values"; }  # round row side value

[[ $seconds =~ ^[0-9]+$ ]] || { echo "--seconds takes whole seconds (got '$seconds')" >&2; exit 2; }
[[ $rounds =~ ^[0-9]+$ && $rounds -ge 1 ]] || { echo "--rounds takes a positive count (got '$rounds')" >&2; exit 2; }
[[ $only == all || $only == mpi || $only == mpi-lat || $only == mpi-bw || $only == ucx ]] ||
  { echo "--only takes mpi, mpi-lat, mpi-bw or ucx (got '$only')" >&2; exit 2; }
[[ -f $here/round_verdict.py ]] || { echo "round_verdict.py not found beside $0" >&2; exit 2; }
lat_iters=${LAT_ITERS:-5000} bw_iters=${BW_ITERS:-30}
# The same three tests per transport; MPI's window as osu_bw's (64), UCX's as the -O 16 it is compared with.
write_scenario() {  # transport window
  cat >"$work/$1.yaml" <<YAML
name: overhead-$1
seed: 7
defaults: {transport: $1, memory: host, timeout: 300s}
tests:
  - {name: lat, kind: latency, sizes: [8], iterations: $lat_iters, warmup: 2000}
  - {name: bw, kind: bandwidth, sizes: [4MiB], window: $2, iterations: $bw_iters, warmup: 10}
  - {name: bw1, kind: bandwidth, sizes: [4MiB], window: $2, iterations: $bw_iters, warmup: 10, receive_buffers: one}
YAML
}
write_scenario mpi 64
write_scenario ucx 16
# fabscope waiting as osu_latency and the blocking minimal program do (transports:
# {mpi: {wait: blocking}}: MPI_Wait, bounded by the watchdog; docs/transports.md).
cat >"$work/mpi-blocking.yaml" <<YAML
name: overhead-mpi-blocking
seed: 7
transports: {mpi: {wait: blocking}}
defaults: {transport: mpi, memory: host, timeout: 300s}
tests:
  - {name: lat, kind: latency, sizes: [8], iterations: $lat_iters, warmup: 2000}
YAML

fabscope_run() {  # scenario
  mpirun "${mpirun_args[@]}" -x UCX_TLS -x UCX_NET_DEVICES -x UCX_POSIX_ERROR_HANDLING -x UCX_SYSV_ERROR_HANDLING \
    -x UCX_WARN_UNUSED_ENV_VARS "$bin" run --scenario "$1" --output "$work/f.h5" --overwrite --no-progress \
    >"$work/fabscope.log" 2>&1 || { cat "$work/fabscope.log" >&2; exit 1; }
}

# -> "p50_ns batch_mean_ns" of lat, gbps_mean of bw (distinct slices), batch_gbps of bw1 (one buffer)
fabscope_figures() {  # scenario
  fabscope_run "$1"
  local lat bt gb bg
  read -r lat bt < <("$read_attrs" "$work/f.h5" lat p50_ns batch_mean_ns)
  read -r gb < <("$read_attrs" "$work/f.h5" bw gbps_mean)
  read -r bg < <("$read_attrs" "$work/f.h5" bw1 batch_gbps)
  echo "$lat $bt $gb $bg"
}

# ucx_perftest's final line: iterations, p50 us, avg us, overall us, avg MB/s, overall MB/s, ... (MB = 2^20 B)
perftest_line() {  # test size iters warmup [extra...]
  # A random port can be taken (bind() failed: Address already in use): three tries.
  local try port
  for try in 1 2 3; do
    port=$((20000 + RANDOM % 20000))
    taskset -c "${cpus%,*}" "$perftest" -p "$port" -e -c 0 >"$work/server.log" 2>&1 &
    server_pid=$!
    sleep 0.5
    if taskset -c "${cpus#*,}" "$perftest" 127.0.0.1 -p "$port" -e -t "$1" -s "$2" -n "$3" -w "$4" "${@:5}" -f \
      >"$work/client.log" 2>&1; then
      wait "$server_pid" || true
      server_pid=
      grep -E '^[[:space:]]+[0-9]+[[:space:]]' "$work/client.log" | tail -1
      return
    fi
    kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true
    server_pid=
    grep -q 'Address already in use' "$work/server.log" || break
  done
  cat "$work/server.log" "$work/client.log" >&2
  exit 1
}

mpi_fabscope_blocking() {  # round: the rows against the blocking references
  local lat bt
  fabscope_run "$work/mpi-blocking.yaml"
  read -r lat bt < <("$read_attrs" "$work/f.h5" lat p50_ns batch_mean_ns)
  put "$1" mpi_lat_p50 fabscope "$lat"; put "$1" mpi_lat_batch fabscope "$bt"
}

mpi_fabscope() {  # round
  local lat bt gb bg
  if [[ $only == mpi-lat ]]; then mpi_fabscope_blocking "$1"; return; fi
  read -r lat bt gb bg < <(fabscope_figures "$work/mpi.yaml")
  if [[ $only != mpi-bw ]]; then
    put "$1" mpi_lat_polled fabscope "$lat"; put "$1" mpi_lat_polled_nbc fabscope "$lat"
    put "$1" mpi_lat_default fabscope "$lat"
    mpi_fabscope_blocking "$1"
  fi
  put "$1" mpi_bw fabscope "$gb"; put "$1" mpi_bw_batch fabscope "$bg"
}

mpi_references() {  # round side (side: reference, or fabscope's place in an A/A run)
  local r=$1 side=$2
  if [[ $only != mpi-bw ]]; then
    local blocking
    blocking=$(mpirun "${mpirun_args[@]}" "$minimal" latency 8 "$lat_iters" 2000 | awk '{print $2}')
    put "$r" mpi_lat_p50 "$side" "$blocking"
  fi
  if [[ $only != mpi-bw && $only != mpi-lat ]]; then
    put "$r" mpi_lat_default "$side" "$blocking"
    put "$r" mpi_lat_polled "$side" "$(mpirun "${mpirun_args[@]}" "$minimal" latency-polled 8 "$lat_iters" 2000 | awk '{print $2}')"
    put "$r" mpi_lat_polled_nbc "$side" "$(mpirun "${mpirun_args[@]}" "$minimal" latency-polled-nbc 8 "$lat_iters" 2000 | awk '{print $2}')"
  fi
  [[ $only == mpi-lat ]] ||
    put "$r" mpi_bw "$side" "$(mpirun "${mpirun_args[@]}" "$minimal" bandwidth $((4 << 20)) "$bw_iters" 10 64 | awk '{print $2}')"
  if [[ -n $osu_lat && $only != mpi-bw ]]; then  # average us -> ns
    put "$r" mpi_lat_batch "$side" "$(mpirun "${mpirun_args[@]}" "$osu_lat" -m 8:8 -i "$lat_iters" -x 2000 |
      awk '$1 == 8 {print $2 * 1000}')"
  fi
  if [[ -n $osu_bw && $only != mpi-lat ]]; then  # MB/s (10^6) -> GB/s
    put "$r" mpi_bw_batch "$side" "$(mpirun "${mpirun_args[@]}" "$osu_bw" -m 4194304:4194304 -i "$bw_iters" -x 10 |
      awk '$1 == 4194304 {print $2 / 1000}')"
  fi
}

ucx_fabscope() {  # round fabric
  local lat bt gb bg
  read -r lat bt gb bg < <(fabscope_figures "$work/ucx.yaml")
  put "$1" "ucx_${2}_lat" fabscope "$lat"; put "$1" "ucx_${2}_bw" fabscope "$bg"
}

ucx_references() {  # round fabric side; p50 us -> ns; overall MB/s (2^20) -> GB/s (10^9)
  put "$1" "ucx_${2}_lat" "$3" "$(perftest_line tag_lat 8 "$lat_iters" 2000 | awk '{print $2 * 1000}')"
  put "$1" "ucx_${2}_bw" "$3" "$(perftest_line tag_bw 4194304 $((bw_iters * 16)) 160 -O 16 |
    awk '{print $6 * 1048576 / 1e9}')"
}

mpi_round() {  # round order
  for side in $2; do
    if [[ $side == reference ]]; then mpi_references "$1" reference
    elif ((aa)); then mpi_references "$1" fabscope
    else mpi_fabscope "$1"; fi
  done
}

ucx_round() {  # round order fabric
  if [[ $3 == shm ]]; then export UCX_TLS=sm,self UCX_NET_DEVICES=all; else export UCX_TLS=tcp,self UCX_NET_DEVICES=lo; fi
  for side in $2; do
    if [[ $side == reference ]]; then ucx_references "$1" "$3" reference
    elif ((aa)); then ucx_references "$1" "$3" fabscope
    else ucx_fabscope "$1" "$3"; fi
  done
}

started=$SECONDS done_rounds=0
for r in $(seq "$rounds"); do
  order="reference fabscope"; (( r % 2 == 0 )) && order="fabscope reference"
  [[ $only == ucx ]] || mpi_round "$r" "$order"
  if [[ $only != mpi* ]]; then
    if [[ -n $perftest ]]; then ucx_round "$r" "$order" shm; ucx_round "$r" "$order" tcp; fi
  fi
  done_rounds=$r elapsed=$((SECONDS - started))
  echo "round $r of $rounds done (${elapsed} s)" >&2
  # --seconds: no round is started that would end past the bound (at the mean round's length)
  if ((seconds > 0 && r < rounds && elapsed + (elapsed + r - 1) / r > seconds)); then
    echo "stopping after $r of $rounds rounds: the next would pass --seconds $seconds" >&2
    break
  fi
done

[[ -z $keep_values ]] || cp "$values" "$keep_values"
PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH} python3 - "$values" "$done_rounds" "$only" "$aa" <<'PY'
import sys, statistics as st
from round_verdict import median_interval, method_line, verdict
path, rounds, only, aa = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
vals = {}
for line in open(path):
    r, row, side, v = line.rstrip("\n").split("\t")
    if v: vals.setdefault(row, {}).setdefault(int(r), {})[side] = float(v)
# row: label, unit, reference name, target (op, bound) or None, margin
ROWS = [
    ("mpi_lat_p50", "MPI 8 B latency p50", "ns", "fabscope with wait: blocking; minimal ping-pong p50, blocking", ("<=", 1.05), 0.05),
    ("mpi_lat_polled", "MPI 8 B lat p50 vs polled", "ns", "fabscope's default polled waits; minimal ping-pong waiting in MPI_Test loops: fabscope's own share", ("<=", 1.05), 0.05),
    ("mpi_lat_polled_nbc", "MPI 8 B lat p50 vs p+nbc", "ns", "the same after one non-blocking collective", None, 0.05),
    ("mpi_lat_default", "MPI 8 B lat p50 default", "ns", "fabscope's default polled waits; minimal ping-pong p50, blocking: what polling costs in all", None, 0.05),
    ("mpi_lat_batch", "MPI 8 B latency batch", "ns", "fabscope with wait: blocking; osu_latency average", ("<=", 1.05), 0.05),
    ("mpi_bw", "MPI 4 MiB bw w64 distinct", "GB/s", "minimal stream, distinct slices", (">=", 0.97), 0.03),
    ("mpi_bw_batch", "MPI 4 MiB bw w64 batch", "GB/s", "osu_bw, one buffer", (">=", 0.97), 0.03),
    ("ucx_shm_lat", "UCX shm 8 B tag lat p50", "ns", "ucx_perftest tag_lat", ("<=", 1.05), 0.05),
    ("ucx_shm_bw", "UCX shm 4 MiB tag bw w16", "GB/s", "ucx_perftest tag_bw -O 16, one buffer", (">=", 0.97), 0.03),
    ("ucx_tcp_lat", "UCX tcp 8 B tag lat p50", "ns", "ucx_perftest tag_lat", ("<=", 1.05), 0.05),
    ("ucx_tcp_bw", "UCX tcp 4 MiB tag bw w16", "GB/s", "ucx_perftest tag_bw -O 16, one buffer", (">=", 0.97), 0.03),
]
if aa:
    print(f"A/A check: the reference on both sides, {rounds} alternating rounds; every row should read met (ratio near 1), none MISSED")
else:
    print(f"fabscope against its references: {rounds} alternating rounds, medians")
print(method_line() + "; no verdict when the spread exceeds the margin (5 % latency, 3 % bandwidth)")
first = "reference" if aa else "fabscope"
print(f"{'row':26} {first:>10} {'reference':>10} {'ratio':>6} {'interval':>13} {'spread':>7} {'target':>7}  verdict  (reference)")
worst = 0
for key, label, unit, ref, target, margin in ROWS:
    per = vals.get(key, {})
    pairs = [(d["fabscope"], d["reference"]) for d in per.values() if "fabscope" in d and "reference" in d and d["reference"] > 0]
    if not pairs:
        ran = only == "all" or (key.startswith("mpi_bw") if only == "mpi-bw" else
                                key in ("mpi_lat_p50", "mpi_lat_batch") if only == "mpi-lat" else key.startswith(only))
        why = "not run" if not ran else \
              "osu_latency/osu_bw not found (OSU_DIR)" if key.startswith("mpi_") else "ucx_perftest not found (ucx-utils)"
        print(f"{label:26} {'-':>10} {'-':>10} {'-':>6} {'-':>13} {'-':>7} {'-':>7}  -        ({ref}: {why})")
        continue
    ratios = [f / r for f, r in pairs]
    iv = median_interval(ratios)
    fab = st.median(p[0] for p in pairs); refv = st.median(p[1] for p in pairs)
    fmt = (lambda v: f"{v:.1f}") if unit == "ns" else (lambda v: f"{v:.3f}")
    if target is None:
        result, tgt = "context", "-"
    else:
        op, bound = target
        tgt = f"{op}{bound}"
        result = verdict(ratios, op, bound, margin)
        code = 0 if result == "met" else 1 if result == "MISSED" else 4
        worst = 4 if 4 in (worst, code) else max(worst, code)
    print(f"{label:26} {fmt(fab):>10} {fmt(refv):>10} {iv.median:6.3f} {iv.lo:6.3f}-{iv.hi:6.3f} {iv.spread * 100:6.1f}% {tgt:>7}  {result:8} ({ref}, {unit}, {len(pairs)} rounds)")
sys.exit(worst)
PY
