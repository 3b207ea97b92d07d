#!/usr/bin/env bash
# Two or more fabscope builds against the minimal MPI program on one row of
# overhead.sh, in rounds that rotate the order, to tell whether a change moved
# the figure (a regression hunt, or a fix's effect) where overhead.sh compares one
# build with its references.
#   tests/bench/compare-builds.sh [--row latency|bandwidth] [--rounds N] [--cpus A,B] BIN [BIN...]
# latency: 8 B p50 (p50_ns); bandwidth: 4 MiB, window 64, distinct receive slices (gbps_mean).
# The minimal program is also one side (and the ratios' denominator); the polled
# minimal (latency-polled) is added on the latency row. Prints each side's median
# and its ratio to the minimal of the same round: the median and its 95 %
# distribution-free interval (round_verdict.py, as overhead.sh).
# Env: MINIMAL, READ_ATTRS (default: this tree's build), ITERS, BENCH_MPIRUN_ARGS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
row=latency rounds=8 cpus=0,1 bins=()
while (($#)); do
  case $1 in
    --row) row=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    -*) echo "unknown option $1 (usage: $0 [--row latency|bandwidth] [--rounds N] [--cpus A,B] BIN [BIN...])" >&2; exit 2 ;;
    *) bins+=("$1"); shift ;;
  esac
done
[[ $row == latency || $row == bandwidth ]] || { echo "--row takes latency or bandwidth (got '$row')" >&2; exit 2; }
((${#bins[@]})) || { echo "give at least one fabscope binary" >&2; exit 2; }
minimal=${MINIMAL:-$here/../../build/tests/bench/fabscope_minimal_mpi}
read_attrs=${READ_ATTRS:-$here/../../build/tests/bench/fabscope_read_attrs}
for b in "$minimal" "$read_attrs" "${bins[@]}"; do [[ -x $b ]] || { echo "not an executable: $b" >&2; exit 2; }; done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_args=(-np 2 --cpu-set "$cpus" --bind-to core ${BENCH_MPIRUN_ARGS:-})
work=$(mktemp -d /tmp/fabscope-compare.XXXXXX); trap 'rm -rf "$work"' EXIT
if [[ $row == latency ]]; then
  iters=${ITERS:-20000}
  test="{name: x, kind: latency, sizes: [8], iterations: $iters, warmup: 2000}" attr=p50_ns
  reference=(latency 8 "$iters" 2000) sides=(minimal polled)
else
  iters=${ITERS:-100}
  test="{name: x, kind: bandwidth, sizes: [4MiB], window: 64, iterations: $iters, warmup: 10}" attr=gbps_mean
  reference=(bandwidth $((4 << 20)) "$iters" 10 64) sides=(minimal)
fi
printf 'name: compare-builds\nseed: 7\ndefaults: {transport: mpi, memory: host, timeout: 300s}\ntests:\n  - %s\n' "$test" >"$work/s.yaml"
for i in "${!bins[@]}"; do sides+=("build$i"); done
measure() {  # side -> one figure on stdout
  case $1 in
    minimal) mpirun "${mpirun_args[@]}" "$minimal" "${reference[@]}" | awk '{print $2}' ;;
    polled) mpirun "${mpirun_args[@]}" "$minimal" latency-polled "${reference[@]:1}" | awk '{print $2}' ;;
    build*)
      mpirun "${mpirun_args[@]}" "${bins[${1#build}]}" run --scenario "$work/s.yaml" --output "$work/f.h5" --overwrite \
        --no-progress >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
      "$read_attrs" "$work/f.h5" x "$attr" ;;
  esac
}
n=${#sides[@]}
for r in $(seq "$rounds"); do
  for k in $(seq 0 $((n - 1))); do
    s=${sides[$(((k + r) % n))]}
    printf '%s\t%s\t%s\n' "$r" "$s" "$(measure "$s")" >>"$work/values.tsv"
  done
  echo "round $r of $rounds done" >&2
done
names=$(for i in "${!bins[@]}"; do printf 'build%s=%s\n' "$i" "${bins[$i]}"; done)
PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH} python3 - "$work/values.tsv" "$row" "$names" <<'PY'
import sys, statistics as st
from round_verdict import median_interval
path, row, names = sys.argv[1], sys.argv[2], dict(l.split("=", 1) for l in sys.argv[3].splitlines())
vals = {}
for line in open(path):
    r, side, v = line.rstrip("\n").split("\t")
    if v: vals.setdefault(side, {})[int(r)] = float(v)
unit = "ns" if row == "latency" else "GB/s"
base = vals.get("minimal", {})
print(f"{row}: medians over rounds; ratio = side / minimal of the same round: median [95 % interval of the median, sign-test order statistics]")
for side, per in vals.items():
    ratios = [v / base[r] for r, v in per.items() if r in base and base[r] > 0]
    label = names.get(side, "minimal ping-pong polled with MPI_Test" if side == "polled" else side)
    iv = median_interval(ratios)
    print(f"{st.median(per.values()):10.3f} {unit:4}  ratio {iv.median:.3f} [{iv.lo:.3f}-{iv.hi:.3f}]  {label}")
PY
