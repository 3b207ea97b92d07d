#!/usr/bin/env bash
# fabscope's MPI path against a minimal MPI program, in the same run, on 2 ranks:
# 8-byte latency p50 and 4 MiB streaming bandwidth. Runs alternate (A B A B ...)
# so machine noise hits both alike; the medians of the repetitions are compared.
# Targets: latency within 5% (ratio <= 1.05), bandwidth >= 97% (ratio >= 0.97).
# usage: tests/bench/mpi_overhead.sh [REPEATS]   (build first: cmake --build build)
set -euo pipefail
cd "$(dirname "$0")/../.."
repeats=${1:-5}
bin=build/fabscope ref=build/tests/bench/fabscope_minimal_mpi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
lat_iters=20000 lat_warm=2000 bw_iters=200 bw_warm=20 window=16 size=$((4 << 20))
cat > "$tmp/bench.yaml" <<YAML
name: mpi-overhead
tests:
  - {name: lat, kind: latency, sizes: [8], iterations: $lat_iters, warmup: $lat_warm}
  - {name: bw, kind: bandwidth, sizes: [$size], iterations: $bw_iters, warmup: $bw_warm, window: $window}
YAML
read_h5() { /usr/bin/python3 -c "
import h5py,sys
f=h5py.File(sys.argv[1],'r')
print(f['tests/0000'].attrs['p50_ns'], f['tests/0001'].attrs['gbps_mean'])" "$1"; }
for i in $(seq "$repeats"); do
  mpirun -np 2 --bind-to core "$ref" latency 8 $lat_iters $lat_warm | awk '{print $2}' >> "$tmp/ref_lat"
  mpirun -np 2 --bind-to core "$ref" bandwidth $size $bw_iters $bw_warm $window | awk '{print $2}' >> "$tmp/ref_bw"
  mpirun -np 2 --bind-to core "$bin" run --scenario "$tmp/bench.yaml" --output "$tmp/f$i.h5" --no-progress >/dev/null 2>&1
  read -r lat bw < <(read_h5 "$tmp/f$i.h5")
  echo "$lat" >> "$tmp/fab_lat"; echo "$bw" >> "$tmp/fab_bw"
done
median() { sort -g "$1" | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
rl=$(median "$tmp/ref_lat") fl=$(median "$tmp/fab_lat") rb=$(median "$tmp/ref_bw") fb=$(median "$tmp/fab_bw")
awk -v rl="$rl" -v fl="$fl" -v rb="$rb" -v fb="$fb" -v n="$repeats" 'BEGIN {
  printf "MPI overhead, 2 ranks, median of %d alternating runs\n", n
  printf "  8 B latency p50   minimal %8.1f ns   fabscope %8.1f ns   ratio %.3f  (target <= 1.05)\n", rl, fl, fl / rl
  printf "  4 MiB bandwidth   minimal %8.3f GB/s fabscope %8.3f GB/s ratio %.3f  (target >= 0.97)\n", rb, fb, fb / rb
}'
