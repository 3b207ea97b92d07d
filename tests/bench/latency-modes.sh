#!/usr/bin/env bash
# Where fabscope's MPI 8 B ping-pong p50 stands between the blocking minimal
# ping-pong and the ways a deadline-bounded wait can be written: rounds
# rotate the minimal program's latency modes and fabscope's latency test, and the
# report gives each side's median and its ratio to the blocking ping-pong and to the
# polled one (median of the per-round ratios, 95 % interval: round_verdict.py).
#   latency              MPI_Send / MPI_Recv (no deadline possible)
#   latency-send-polled  MPI_Send, the receive pre-posted and polled with MPI_Test
#   latency-polled       MPI_Isend / MPI_Irecv, both polled (fabscope's way, nothing else)
#   latency-polled-nbc   the same after one non-blocking collective (libnbc progress)
#   latency-persistent   MPI_Send_init / MPI_Recv_init, started each round, polled
#   latency-nbc          MPI_Send / MPI_Recv after one non-blocking collective
#   latency-io           MPI_Send / MPI_Recv with an MPI-IO file open (as fabscope's result file is with hdf5: parallel)
#   latency-nbc-io       both
#   latency-io-closed    MPI_Send / MPI_Recv after that file was opened, written and closed
#   fabscope             a latency test, 8 B (p50_ns), default (polled) waits
#   fabscope-blocking    the same with transports: {mpi: {wait: blocking}} (MPI_Wait)
#   fabscope-blocking-romio  the same with hdf5=parallel through Open MPI's ROMIO (OMPI_MCA_io=romio321)
#   fabscope-blocking-serial the same with hdf5=serial (no MPI-IO; what hdf5: auto now means)
# --sides a,b,...: these sides only (default: latency, the polled and persistent modes,
# fabscope, fabscope-blocking); latency and latency-polled are the ratios' bases.
# usage: tests/bench/latency-modes.sh [--seconds S (300)] [--cpus A,B (0,1)] [--iters N (5000)] [--bin FABSCOPE] [--sides LIST]
# Env: MINIMAL, READ_ATTRS (default: this tree's build), BENCH_MPIRUN_ARGS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
seconds=300 cpus=0,1 iters=5000 bin=$here/../../build/fabscope
sides=(latency latency-send-polled latency-polled latency-polled-nbc latency-persistent fabscope fabscope-blocking)
known=" ${sides[*]} latency-nbc latency-io latency-nbc-io latency-io-closed fabscope-blocking-romio fabscope-blocking-serial "
while (($#)); do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --sides)
      IFS=, read -r -a sides <<<"$2"
      for s in "${sides[@]}"; do [[ $known == *" $s "* ]] || { echo "unknown side '$s' (known:$known)" >&2; exit 2; }; done
      shift 2 ;;
    *) echo "usage: $0 [--seconds S] [--cpus A,B] [--iters N] [--bin FABSCOPE] [--sides LIST]" >&2; exit 2 ;;
  esac
done
[[ $seconds =~ ^[0-9]+$ && $iters =~ ^[0-9]+$ && $cpus =~ ^[0-9]+,[0-9]+$ ]] ||
  { echo "--seconds and --iters take whole numbers, --cpus two cores (A,B)" >&2; exit 2; }
minimal=${MINIMAL:-$here/../../build/tests/bench/fabscope_minimal_mpi}
read_attrs=${READ_ATTRS:-$here/../../build/tests/bench/fabscope_read_attrs}
for b in "$minimal" "$read_attrs" "$bin"; do [[ -x $b ]] || { echo "not an executable: $b" >&2; exit 2; }; done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_args=(-np 2 --cpu-set "$cpus" --bind-to core ${BENCH_MPIRUN_ARGS:-})
work=$(mktemp -d /tmp/fabscope-latency-modes.XXXXXX); trap 'rm -rf "$work"' EXIT
printf 'name: latency-modes\nseed: 7\ndefaults: {transport: mpi, memory: host, timeout: 300s}\ntests:\n  - {name: x, kind: latency, sizes: [8], iterations: %s, warmup: 2000}\n' \
  "$iters" >"$work/s.yaml"
{ echo 'transports: {mpi: {wait: blocking}}'; cat "$work/s.yaml"; } >"$work/blocking.yaml"
n=${#sides[@]} start=$SECONDS r=0
while ((SECONDS - start < seconds)); do
  r=$((r + 1))
  for k in $(seq 0 $((n - 1))); do
    side=${sides[$(((k + r) % n))]}
    if [[ $side == fabscope* ]]; then
      scenario=$work/s.yaml; [[ $side == fabscope ]] || scenario=$work/blocking.yaml
      io=() set=(); [[ $side == *-romio ]] && io=(-x OMPI_MCA_io=romio321) set=(--set hdf5=parallel)
      [[ $side == *-serial ]] && set=(--set hdf5=serial)
      mpirun "${mpirun_args[@]}" "${io[@]}" "$bin" run --scenario "$scenario" "${set[@]}" --output "$work/f.h5" --overwrite --no-progress \
        >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
      v=$("$read_attrs" "$work/f.h5" x p50_ns)
    else
      v=$(mpirun "${mpirun_args[@]}" "$minimal" "$side" 8 "$iters" 2000 | awk '{print $2}')
    fi
    printf '%s\t%s\t%s\n' "$r" "$side" "$v" >>"$work/values.tsv"
  done
done
PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH} python3 - "$work/values.tsv" "$r" <<'PY'
import sys, statistics as st
from round_verdict import median_interval, method_line
vals = {}
for line in open(sys.argv[1]):
    r, side, v = line.rstrip("\n").split("\t")
    if v: vals.setdefault(side, {})[int(r)] = float(v)
print(f"MPI 8 B ping-pong p50, {sys.argv[2]} rotating rounds; {method_line()}")
print(f"{'side':24} {'p50 ns':>8}  {'vs blocking':>24}  {'vs polled':>24}")
def ratio(side, base):
    rs = [v / vals[base][r] for r, v in vals[side].items() if r in vals.get(base, {}) and vals[base][r] > 0]
    if len(rs) < 2: return "-"
    iv = median_interval(rs)
    return f"{iv.median:.3f} [{iv.lo:.3f}-{iv.hi:.3f}]"
for side in ("latency", "latency-nbc", "latency-io", "latency-nbc-io", "latency-io-closed", "latency-send-polled",
             "latency-polled", "latency-polled-nbc", "latency-persistent", "fabscope", "fabscope-blocking",
             "fabscope-blocking-romio", "fabscope-blocking-serial"):
    if side in vals:
        print(f"{side:24} {st.median(vals[side].values()):8.1f}  {ratio(side, 'latency'):>24}  {ratio(side, 'latency-polled'):>24}")
PY
