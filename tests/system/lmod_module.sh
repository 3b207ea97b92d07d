#!/usr/bin/env bash
# The Lmod module file, for real (Debian's lmod): `cmake --install` to a prefix of
# its own writes PREFIX/share/modulefiles/fabscope/VERSION.lua; in a shell with
# Lmod, `module load fabscope` puts the installed fabscope first on PATH, its man
# page on MANPATH and its analysis on PYTHONPATH; `module unload` takes them away.
# ctest-labels: shares-machine
# (it checks files, messages or packages, not time: tests/run runs two such tests at a time)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
require_fabscope
init=/usr/share/lmod/lmod/init/bash
[[ -r $init ]] || { echo "[lmod_module] SKIP: Lmod is not installed (apt-get install lmod)" >&2; exit 77; }
build_dir=$(cd "$(dirname "$FABSCOPE_BIN")" && pwd)
scratch=$(mktemp -d /tmp/fabscope-lmod.XXXXXX)
on_exit "rm -rf '$scratch'"
prefix=$scratch/prefix
cmake --install "$build_dir" --prefix "$prefix" >"$scratch/install.log" 2>&1 || { tail "$scratch/install.log" >&2; fail "cmake --install failed"; }
version=$("$FABSCOPE_BIN" --version | awk '{print $2; exit}')
[[ -r $prefix/share/modulefiles/fabscope/$version.lua ]] || fail "no module file $prefix/share/modulefiles/fabscope/$version.lua"
cd "$scratch"
env -i HOME="$scratch" PATH=/usr/bin:/bin TERM=dumb bash --noprofile --norc -c "
  set -e
  source $init
  module use $prefix/share/modulefiles
  module load fabscope
  echo \"fabscope=\$(command -v fabscope)\"
  fabscope --version
  echo \"analysis=\$(/usr/bin/python3 -c 'import fabscope_analysis; print(fabscope_analysis.__file__)')\"
  echo \"man=\$(man -w fabscope)\"
  echo \"scenarios=\$FABSCOPE_SCENARIOS\"
  module unload fabscope
  echo \"after=\$(command -v fabscope || echo none)\"
  echo \"paths_after=\$PATH:\${MANPATH:-}:\${PYTHONPATH:-}\"
" >"$scratch/shell.log" 2>&1 || { cat "$scratch/shell.log" >&2; fail "the Lmod shell failed"; }
grep -qx "fabscope=$prefix/bin/fabscope" "$scratch/shell.log" || { cat "$scratch/shell.log" >&2; fail "module load did not put the installed fabscope on PATH"; }
grep -q "^fabscope $version" "$scratch/shell.log" || fail "the module's fabscope --version failed"
grep -qx "analysis=$prefix/lib/python3/dist-packages/fabscope_analysis/__init__.py" "$scratch/shell.log" || { cat "$scratch/shell.log" >&2; fail "module load did not put the analysis on PYTHONPATH"; }
grep -q "^man=$prefix/share/man/man1/fabscope.1" "$scratch/shell.log" || { cat "$scratch/shell.log" >&2; fail "module load did not put the man page on MANPATH"; }
grep -qx "scenarios=$prefix/share/fabscope/scenarios" "$scratch/shell.log" || fail "FABSCOPE_SCENARIOS not set"
# Another fabscope may be installed system-wide (the .deb test beside this one puts one in
# /usr/bin): what unload must take away is the module's own prefix.
if grep -qx "after=$prefix/bin/fabscope" "$scratch/shell.log" || grep "^paths_after=" "$scratch/shell.log" | grep -qF "$prefix"; then
  cat "$scratch/shell.log" >&2
  fail "module unload left the module's prefix $prefix on PATH, MANPATH or PYTHONPATH"
fi
note "module load/unload of $prefix/share/modulefiles/fabscope/$version.lua: PATH, MANPATH, PYTHONPATH"
note "PASS"
