#!/bin/bash
# Builds OSU's osu_latency and osu_bw (MPI point-to-point, OMB 7.x source layout)
# with mpicc, without OSU's configure, for tests/mpi/reference.sh's part `osu`:
#   tests/support/build-osu.sh OSU_SOURCE_DIR OUT_DIR
#   FABSCOPE_OSU_DIR=OUT_DIR ctest --test-dir build -R reference.osu
# OSU_SOURCE_DIR: an unpacked osu-micro-benchmarks 7.x (c/util, c/mpi/pt2pt/standard).
# fabscope does not vendor OSU; the recorded outputs in tests/data/reference/osu
# were made this way (their README names the source).
set -euo pipefail
src=${1:?usage: build-osu.sh OSU_SOURCE_DIR OUT_DIR}
out=${2:?usage: build-osu.sh OSU_SOURCE_DIR OUT_DIR}
[[ -f $src/c/util/osu_util.c && -f $src/c/mpi/pt2pt/standard/osu_latency.c ]] || {
  echo "build-osu.sh: $src is not an OSU 7.x source tree (no c/util/osu_util.c, c/mpi/pt2pt/standard/osu_latency.c)" >&2
  exit 2
}
version=$(sed -n 's/^AC_INIT(\[OSU-Micro-Benchmarks\], \[\([^]]*\)\].*/\1/p' "$src/configure.ac" 2>/dev/null || true)
mkdir -p "$out"
util=("$src"/c/util/osu_util.c "$src"/c/util/osu_util_mpi.c "$src"/c/util/osu_util_validation.c
      "$src"/c/util/osu_util_graph.c "$src"/c/util/osu_util_papi.c)
for tool in osu_latency osu_bw; do
  # FIELD_WIDTH 18 and FLOAT_PRECISION 2: what OSU's configure defines.
  timeout 300 mpicc -O2 -w -I "$src/c/util" -DPACKAGE_VERSION="\"${version:-unknown}\"" -DFIELD_WIDTH=18 \
    -DFLOAT_PRECISION=2 -o "$out/$tool" "$src/c/mpi/pt2pt/standard/$tool.c" "${util[@]}" -lm
done
echo "built $out/osu_latency and $out/osu_bw (OSU ${version:-version unknown})"
