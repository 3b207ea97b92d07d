#!/usr/bin/env bash
# ctest-labels: full
# The Spack recipe (packaging/spack) installs fabscope for real, offline: a real
# Spack concretizes fabscope (with clingo built from source: no bootstrap, no
# network), every dependency is one of this machine's Debian packages declared
# as a non-buildable external, `spack install --test=root` builds the checkout's
# committed HEAD (as fabscope@git.HEAD=main, fetched from this checkout by the
# recipe's file:// git URL) and runs the unit tests and the recipe's install-time
# check; then `spack load fabscope` puts the installed fabscope on PATH, and it
# runs `--version`, `list` and a shipped scenario on 2 ranks through the
# installed fabscope-mpirun, which the installed analysis summarises.
#
# Needs a Spack (FABSCOPE_SPACK, else `spack` on PATH, else
# /work/spack-src/bin/spack) and clingo's Python module importable by
# /usr/bin/python3 from FABSCOPE_CLINGO_PYTHONPATH (default
# /opt/clingo/lib/python3/dist-packages, what tests/support/build-clingo.sh
# installs); skips (77) without either, saying which. Uncommitted changes are
# not in what Spack builds (it clones the commit).
# Spack's state is this run's own: configuration, install tree and build stage
# in a scratch folder; only its caches (the repository index, minutes to build
# the first time, and ccache's objects) are kept between runs, in
# FABSCOPE_SPACK_CACHE (default /var/tmp/fabscope-spack-cache).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
require_fabscope

require_spack
# Spack runs on the system Python: the one clingo's module is built for.
export SPACK_PYTHON=/usr/bin/python3
clingo_path=${FABSCOPE_CLINGO_PYTHONPATH:-/opt/clingo/lib/python3/dist-packages}
if ! clingo_version=$(PYTHONPATH=$clingo_path timeout 60 "$SPACK_PYTHON" -c 'import clingo; print(clingo.__version__)' 2>&1); then
  echo "[$system_test_name] SKIP: $SPACK_PYTHON cannot import clingo from '$clingo_path' (Spack's concretizer;" \
    "build it with tests/support/build-clingo.sh and set FABSCOPE_CLINGO_PYTHONPATH): ${clingo_version##*$'\n'}" >&2
  exit 77
fi
export PYTHONPATH=$clingo_path
git -C "$FABSCOPE_SOURCE_DIR" rev-parse --verify -q HEAD >/dev/null \
  || fail "$FABSCOPE_SOURCE_DIR is not a git checkout: the recipe fetches fabscope from it by git"
commit=$(git -C "$FABSCOPE_SOURCE_DIR" rev-parse HEAD)
[[ -z $(git -C "$FABSCOPE_SOURCE_DIR" status --porcelain --untracked-files=no) ]] \
  || note "the checkout has uncommitted changes: Spack builds the sources of commit $commit without them (the recipe is read as it is now)"

scratch=$(mktemp -d /var/tmp/fabscope-spack-install.XXXXXX)
# FABSCOPE_SPACK_KEEP=1 keeps the scratch folder (logs, configuration, install tree).
on_exit "if [[ -n \${FABSCOPE_SPACK_KEEP:-} ]]; then note \"kept $scratch\"; else rm -rf '$scratch'; fi"
cache=${FABSCOPE_SPACK_CACHE:-/var/tmp/fabscope-spack-cache}
export SPACK_USER_CONFIG_PATH=$scratch/config SPACK_SYSTEM_CONFIG_PATH=$scratch/system-config
export SPACK_USER_CACHE_PATH=$cache
mkdir -p "$SPACK_USER_CONFIG_PATH"
# Nothing from the network: bootstrapping off (clingo comes from PYTHONPATH),
# everything Spack writes under the scratch folder, compiles through ccache with
# its objects kept in the cache folder (the stage's path changes every run, so
# ccache's base directory is the stage).
cat >"$SPACK_USER_CONFIG_PATH/config.yaml" <<EOF
config:
  install_tree:
    root: $scratch/store
  build_stage: [$scratch/stage]
  source_cache: $scratch/source-cache
  ccache: $(command -v ccache >/dev/null && echo true || echo false)
  build_jobs: 2
EOF
cat >"$SPACK_USER_CONFIG_PATH/bootstrap.yaml" <<EOF
bootstrap:
  enable: false
EOF
export CCACHE_DIR=$cache/ccache CCACHE_BASEDIR=$scratch/stage
# A PATH with the system's tools only: no pyenv or other interpreters to detect.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd "$scratch"
note "$("$spack" --version) at $spack, clingo $clingo_version from $clingo_path, state in $scratch"

step() {  # SECONDS WHAT COMMAND...: runs a Spack step, its output in the log, bounded.
  local seconds=$1 what=$2 start=$SECONDS rc
  shift 2
  set +e
  timeout "$seconds" "$@" >"$scratch/$what.log" 2>&1
  rc=$?
  set -e
  if ((rc != 0)); then
    tail -n 40 "$scratch/$what.log" >&2
    ((rc == 124)) && fail "$what: no result after $seconds s"
    fail "$what: exit $rc"
  fi
  note "$what: $((SECONDS - start)) s"
}

step 120 compiler-find "$spack" compiler find --scope user
step 300 external-find "$spack" external find --scope user --not-buildable cmake gmake pkgconf openmpi hdf5 python
# The rest have no detection in Spack (libraries without executables): declared
# from what the system's packages say about themselves.
pc_version() { pkg-config --modversion "$1" 2>/dev/null || fail "pkg-config knows no '$1' (is its -dev package installed?)"; }
py_version() { /usr/bin/python3 -c "import $1; print($1.__version__)" 2>/dev/null || fail "/usr/bin/python3 cannot import $1"; }
boost_version=$(sed -n 's/^#define BOOST_LIB_VERSION "\([0-9]*\)_\([0-9]*\)"/\1.\2/p' /usr/include/boost/version.hpp 2>/dev/null)
[[ -n $boost_version ]] || fail "no Boost headers (/usr/include/boost/version.hpp)"
verbs_version=$(pc_version libibverbs)
declare -A system_externals=(
  [boost]="boost@$boost_version+program_options"
  [yaml-cpp]="yaml-cpp@$(pc_version yaml-cpp)"
  [hwloc]="hwloc@$(pc_version hwloc)"
  [ucx]="ucx@$(pc_version ucx)"
  [rdma-core]="rdma-core@${verbs_version#*.*.}"   # libibverbs 1.14.44.0 is rdma-core 44.0
  [googletest]="googletest@$(pc_version gtest)"
  [py-numpy]="py-numpy@$(py_version numpy)"
  [py-pandas]="py-pandas@$(py_version pandas)"
  [py-h5py]="py-h5py@$(py_version h5py)~mpi"
  [py-pyyaml]="py-pyyaml@$(py_version yaml)"
  [py-scipy]="py-scipy@$(py_version scipy)"
)
for name in "${!system_externals[@]}"; do
  cat >"$scratch/package.yaml" <<EOF
packages:
  $name:
    buildable: false
    externals:
    - spec: ${system_externals[$name]}
      prefix: /usr
EOF
  timeout 120 "$spack" config --scope user add -f "$scratch/package.yaml" >/dev/null \
    || fail "spack config add for $name failed"
done
cat >"$scratch/package.yaml" <<EOF
packages:
  all:
    compiler: [gcc]
EOF
timeout 120 "$spack" config --scope user add -f "$scratch/package.yaml" >/dev/null
timeout 120 "$spack" repo add --scope user "$FABSCOPE_SOURCE_DIR/packaging/spack" >/dev/null

spec="fabscope@git.$commit=main +ucx +verbs +python ~cuda ~nccl"
step 600 spec "$spack" spec -I -t "$spec"
# Every node of the concretized DAG must be an external ([e]) except fabscope and
# what Spack makes locally without sources: the compiler's runtime libraries
# (copied from gcc) and python-venv (a venv of the external python).
built=$(sed -n '/^Concretized/,$p' "$scratch/spec.log" | grep -E '^ *(-|\[\+\]|\[\^\]) ' \
  | grep -vE '[ ^](fabscope|gcc-runtime|python-venv)@' || true)
[[ -z $built ]] || { cat "$scratch/spec.log" >&2; fail "Spack would build more than fabscope: $built"; }
grep -Eq '^\[e\] .* \^hdf5@[^ ]*\+mpi' "$scratch/spec.log" || { cat "$scratch/spec.log" >&2; fail "hdf5+mpi is not the system's (no [e] hdf5+mpi in the spec)"; }
step 1200 install "$spack" install --test=root --fail-fast -v "$spec"
unit_tests=$(grep -Eo "100% tests passed, 0 tests failed out of [1-9][0-9]*" "$scratch/install.log") \
  || { tail -n 40 "$scratch/install.log" >&2; fail "spack install --test=root ran no unit tests"; }
note "spack install --test=root, unit tests: $unit_tests"

# spack load: its environment in this shell (no Spack shell integration needed).
load=$(timeout 120 "$spack" load --sh fabscope) || fail "spack load --sh fabscope failed"
eval "$load"
prefix=$(timeout 120 "$spack" location -i fabscope)
[[ $(command -v fabscope) == "$prefix/bin/fabscope" ]] || fail "spack load did not put $prefix/bin/fabscope first on PATH ($(command -v fabscope))"
version=$(fabscope --version) && [[ $version == "fabscope "* ]] || fail "the installed fabscope --version failed: $version"
note "spack load fabscope: $prefix/bin/fabscope, '${version%%$'\n'*}'"
[[ $FABSCOPE_SCENARIOS == "$prefix/share/fabscope/scenarios" ]] || fail "FABSCOPE_SCENARIOS is '${FABSCOPE_SCENARIOS:-}', not the installed scenarios"
fabscope list --scenario "$FABSCOPE_SCENARIOS/smoke.yaml" --ranks 2 >"$scratch/list.log" 2>&1 \
  || { cat "$scratch/list.log" >&2; fail "the installed fabscope list failed"; }
note "fabscope list: $(grep -c . "$scratch/list.log") lines for smoke.yaml on 2 ranks"
mkdir "$scratch/elsewhere" && cd "$scratch/elsewhere"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
set +e
env -u FABSCOPE_BIN -u FABSCOPE_SOURCE_DIR timeout 300 fabscope-mpirun --np 2 -- \
  run --scenario "$FABSCOPE_SCENARIOS/smoke.yaml" --output run.h5 --no-progress >"$scratch/run.log" 2>&1
rc=$?
set -e
((rc <= 1)) || { tail -20 "$scratch/run.log" >&2; fail "the installed fabscope-mpirun run exited $rc"; }
grep -A1 "^command:" "$scratch/run.log" | grep -q "$prefix/bin/fabscope run" \
  || { grep -A1 "^command:" "$scratch/run.log" >&2; fail "the installed wrapper did not run the installed binary"; }
# The python3 a user of the loaded environment types (first on PATH: the load may put a
# Spack python-venv there) and the system's both find the installed analysis.
for python in "$(command -v python3)" /usr/bin/python3; do
  "$python" -m fabscope_analysis summary run.h5 >"$scratch/summary.log" 2>&1 \
    || { cat "$scratch/summary.log" >&2; fail "the installed analysis could not summarise the run with $python"; }
done
grep -q "^verdict: " "$scratch/summary.log" || fail "the installed analysis gave no verdict"
note "fabscope-mpirun --np 2 run smoke.yaml: exit $rc; summary: $(grep "^verdict: " "$scratch/summary.log")"
/usr/bin/python3 -c 'import fabscope_analysis, sys; print(fabscope_analysis.__file__)' | grep -q "^$prefix/" \
  || fail "python3 found fabscope_analysis elsewhere than $prefix"
note "PASS: Spack installed fabscope@$commit from the recipe with the system's packages as externals," \
  "unit tests passed, the loaded fabscope ran smoke.yaml on 2 ranks"
