#!/usr/bin/env bash
# Builds what the GPU machine runs and packs it into .gpu-pack/ (ignored by
# git): fabscope, the GPU test and benchmark programs, and the shared
# libraries the GPU machine lacks (it has CUDA, NCCL, Open MPI 4.1 and UCX,
# but no HDF5-openmpi, Boost.Program_options or yaml-cpp of these versions).
# Then run there (device tool, carry [".gpu-pack"]):  bash .gpu-pack/run-gpu-tests.sh
# (one GPU), bash .gpu-pack/fit-one-gpu.sh (plan, run and fit over the GPU paths, one GPU or more) or  bash .gpu-pack/run-multi-gpu.sh  (two or more GPUs); the fault drill
# over NCCL:  bash .gpu-pack/run-nccl-drill.sh  (two or more GPUs).
# NCCL_TESTS_SRC=DIR (a source tree or a git directory of NVIDIA/nccl-tests) also packs
# nccl-tests' source, which  bash .gpu-pack/run-pipelined-vs-nccl-tests.sh  builds and
# runs there next to fabscope's all-reduce and all-to-all (2 GPUs).
set -euo pipefail
cd "$(dirname "$0")/../.."
# FABSCOPE_PACK_BUILD=DIR packs an existing build of the same sources as it is (built
# with CUDA and NCCL, nothing rebuilt); otherwise build/ is configured and built here.
build=${FABSCOPE_PACK_BUILD:-build}
if [[ -z ${FABSCOPE_PACK_BUILD:-} ]]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
  cmake --build build -j "$(nproc)" --target fabscope fabscope_gpu_tests fabscope_gpu_bench fabscope_nccl_allreduce_reference \
    fabscope_read_attrs
fi
pack=.gpu-pack
rm -rf "$pack"; mkdir -p "$pack/lib"
cp "$build"/fabscope "$build"/tests/gpu/fabscope_gpu_tests "$build"/tests/gpu/fabscope_gpu_bench \
  "$build"/tests/gpu/fabscope_nccl_allreduce_reference "$build"/tests/bench/fabscope_read_attrs "$pack/"
strip --strip-debug "$pack"/fabscope*  # the transfer to the GPU machine is size-limited
# Libraries not on the GPU machine (see shared/notes/gpu-device.md), with their own dependencies.
for lib in $(ldd "$build"/fabscope | awk '/=> \// {print $3}'); do
  case "$(basename "$lib")" in
    libhdf5_openmpi*|libboost_program_options*|libsz*|libaec*|libyaml-cpp*) cp -L "$lib" "$pack/lib/" ;;
  esac
done
cp tests/gpu/run-gpu-tests.sh tests/gpu/run-multi-gpu.sh tests/gpu/run-pipelined-vs-nccl-tests.sh tests/gpu/record-one-gpu.sh \
  tests/gpu/run-nccl-drill.sh tests/gpu/fit-one-gpu.sh \
  tests/gpu/compare_pipelined.py "$pack/"
# The one command's plan for fit-one-gpu.sh, made here with --paths gpu (no GPU here): used
# there when that machine's python3 lacks the analysis' modules.
mkdir -p "$pack/fit-one-gpu"
FABSCOPE_PYTHON=/usr/bin/python3 tests/gpu/fit-one-gpu.sh --plan-only "$pack/fit-one-gpu" \
  --fabscope "$pack/fabscope" > "$pack/fit-one-gpu/plan.txt"
if [ -n "${NCCL_TESTS_SRC:-}" ]; then
  mkdir -p "$pack/nccl-tests"
  if [ -d "$NCCL_TESTS_SRC/src" ]; then
    cp -r "$NCCL_TESTS_SRC"/. "$pack/nccl-tests/" && rm -rf "$pack/nccl-tests/.git"
  else
    git --git-dir="$NCCL_TESTS_SRC" archive HEAD | tar -x -C "$pack/nccl-tests"
  fi
  [ -f "$pack/nccl-tests/src/all_reduce.cu" ] || { echo "NCCL_TESTS_SRC=$NCCL_TESTS_SRC holds no nccl-tests source" >&2; exit 1; }
fi
mkdir -p "$pack/scenarios" "$pack/scenarios-extra"
cp scenarios/gpu-*.yaml "$pack/scenarios/"
# Extra GPU scenarios run by run-multi-gpu.sh with one rank per GPU.
cp tests/gpu/scenarios/*.yaml "$pack/scenarios-extra/" 2>/dev/null || true
exclude=$(git rev-parse --git-path info/exclude)   # a worktree's .git is a file
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu-pack/' "$exclude" 2>/dev/null || echo '/.gpu-pack/' >> "$exclude"
du -sh "$pack"
