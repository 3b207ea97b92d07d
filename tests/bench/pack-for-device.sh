#!/usr/bin/env bash
# Packs the overhead benchmark (tests/bench/overhead.sh) for a quiet machine
# reached through the device tool (16 idle cores; it has Open MPI 4.1 and UCX
# runtime libraries but neither ucx_perftest nor OSU): fabscope, the minimal MPI
# program, fabscope_read_attrs, fabscope_sample_cost, and this machine's UCX
# (libraries, transport modules and ucx_perftest), so fabscope and ucx_perftest
# run on the very same UCX there. OSU_DIR=dir adds osu_latency and osu_bw.
# Then, there (carry [".bench-pack"]):  bash .bench-pack/run.sh [--rounds N]
# or the MPI latency split:              bash .bench-pack/modes.sh [--seconds S] [--sides LIST]
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --build build -j 2 --target fabscope fabscope_minimal_mpi fabscope_read_attrs fabscope_sample_cost >/dev/null
pack=.bench-pack
rm -rf "$pack"; mkdir -p "$pack/lib" "$pack/ucx"
cp build/fabscope build/tests/bench/fabscope_minimal_mpi build/tests/bench/fabscope_read_attrs \
  build/tests/bench/fabscope_sample_cost tests/bench/overhead.sh tests/bench/compare-builds.sh \
  tests/bench/round_verdict.py tests/bench/latency-modes.sh "$pack/"
strip --strip-debug "$pack"/fabscope*
for lib in $(ldd build/fabscope | awk '/=> \// {print $3}'); do
  case "$(basename "$lib")" in
    libhdf5_openmpi*|libboost_program_options*|libsz*|libaec*|libyaml-cpp*|libucp.so*|libuct.so*|libucs.so*|libucm.so*)
      cp -L "$lib" "$pack/lib/" ;;
  esac
done
cp -L /usr/lib/x86_64-linux-gnu/ucx/libuct_cma.so.0 "$pack/ucx/"
cp "$(command -v ucx_perftest)" "$pack/"
for lib in $(ldd "$(command -v ucx_perftest)" | awk '/=> \// {print $3}'); do
  case "$(basename "$lib")" in libgomp*|libnuma*) cp -L "$lib" "$pack/lib/" ;; esac
done
if [[ -n ${OSU_DIR:-} ]]; then cp "$OSU_DIR/osu_latency" "$OSU_DIR/osu_bw" "$pack/"; fi
cat > "$pack/env.sh" <<'ENV'
# Sourced by run.sh and modes.sh: the carried libraries and UCX first.
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} UCX_MODULE_DIR=$here/ucx PATH=$here:$PATH
# Open MPI's own UCX components were built against another UCX: keep MPI on ob1/vader.
export BENCH_MPIRUN_ARGS="--mca pml ob1 --mca btl self,vader --mca osc ^ucx"
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_osc=^ucx
ENV
cat > "$pack/run.sh" <<'RUN'
#!/usr/bin/env bash
# The overhead benchmark on the carried binaries and UCX; the report goes to ${OUT:-.}/overhead.txt.
source "$(dirname "$0")/env.sh"
out=${OUT:-.}
{ echo "machine: $(nproc) cores, $(uname -r); $(mpirun --version | head -1); UCX: this pack's (Debian 12 libucx0 1.13.1)"
  env | grep -E '^OMPI_MCA|^UCX_' | sort
  "$here/fabscope_sample_cost"
  READ_ATTRS=$here/fabscope_read_attrs OSU_DIR=$here bash "$here/overhead.sh" --bin "$here/fabscope" \
    --minimal "$here/fabscope_minimal_mpi" "$@"
  echo "exit: $?"; } 2>&1 | tee "$out/overhead.txt"
RUN
cat > "$pack/modes.sh" <<'MODES'
#!/usr/bin/env bash
# latency-modes.sh (the MPI latency split) on the carried binaries, in run.sh's environment.
source "$(dirname "$0")/env.sh"
MINIMAL=$here/fabscope_minimal_mpi READ_ATTRS=$here/fabscope_read_attrs bash "$here/latency-modes.sh" --bin "$here/fabscope" "$@"
MODES
grep -qx '/.bench-pack/' .git/info/exclude 2>/dev/null || echo '/.bench-pack/' >> .git/info/exclude
du -sh "$pack"
