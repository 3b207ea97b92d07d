#!/bin/bash
# Builds clingo (the answer-set solver Spack concretizes with) and its Python
# module from source, for a Spack that cannot bootstrap it from the network:
#   tests/support/build-clingo.sh CLINGO_SOURCE_DIR PREFIX [JOBS]
#   PYTHONPATH=PREFIX/lib/python3/dist-packages /usr/bin/python3 -c 'import clingo'
# CLINGO_SOURCE_DIR: an unpacked clingo release with its submodules (clasp,
# libpotassco, third_party/*), e.g. the v5.7.1 tag of github.com/potassco/clingo,
# whose tree carries them: `git --git-dir=CLINGO.git archive v5.7.1 | tar -x -C DIR`.
# Needs cmake, a C++14 compiler, bison, re2c, python3-dev and python3-cffi (the
# module is a CFFI extension). Builds only the library and the Python module
# (no clingo/gringo/clasp executables, no Lua) with the system Python
# (/usr/bin/python3, the interpreter Spack runs on here), installs into PREFIX.
# tests/system/spack_install.sh uses the result through FABSCOPE_CLINGO_PYTHONPATH
# (default /opt/clingo/lib/python3/dist-packages).
set -euo pipefail
src=${1:?usage: build-clingo.sh CLINGO_SOURCE_DIR PREFIX [JOBS]}
prefix=${2:?usage: build-clingo.sh CLINGO_SOURCE_DIR PREFIX [JOBS]}
jobs=${3:-2}
[[ -f $src/libclingo/clingo.h && -f $src/libpyclingo/_clingo.c && -f $src/clasp/libpotassco/CMakeLists.txt ]] || {
  echo "build-clingo.sh: $src is not a clingo source tree with its submodules" \
    "(no libclingo/clingo.h, libpyclingo/_clingo.c or clasp/libpotassco/CMakeLists.txt)" >&2
  exit 2
}
python=${CLINGO_PYTHON:-/usr/bin/python3}
for tool in cmake bison re2c "$python"; do
  command -v "$tool" >/dev/null || { echo "build-clingo.sh: '$tool' not found (apt-get install cmake bison re2c python3-dev python3-cffi)" >&2; exit 2; }
done
"$python" -c 'import cffi' 2>/dev/null || { echo "build-clingo.sh: $python cannot import cffi (apt-get install python3-cffi)" >&2; exit 2; }
python_dir=$prefix/lib/python3/dist-packages
build=${CLINGO_BUILD_DIR:-$(mktemp -d /var/tmp/fabscope-clingo-build.XXXXXX)}
start=$SECONDS
# The options Spack's own clingo recipe passes (python module into a fixed
# directory under the prefix, no Lua); CLINGO_BUILD_APPS=OFF drops the executables.
timeout 300 cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DCMAKE_INSTALL_RPATH="$prefix/lib" -DCLINGO_BUILD_APPS=OFF -DCLINGO_BUILD_WITH_LUA=OFF \
  -DCLINGO_BUILD_WITH_PYTHON=ON -DPython_EXECUTABLE="$python" \
  -DPYCLINGO_INSTALL=prefix -DPYCLINGO_INSTALL_DIR="$python_dir" -DCLINGO_BUILD_TESTS=OFF
timeout 3000 cmake --build "$build" -j "$jobs"
timeout 300 cmake --install "$build"
version=$(PYTHONPATH=$python_dir "$python" -c 'import clingo; print(clingo.__version__)')
echo "built clingo $version into $prefix in $((SECONDS - start)) s; PYTHONPATH=$python_dir"
