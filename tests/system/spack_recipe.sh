#!/usr/bin/env bash
# ctest-labels: full
# The Spack recipe (packaging/spack) checked by a real Spack: `spack audit
# packages fabscope` finds no problem and `spack info fabscope` shows the
# variants and dependencies the recipe promises. Needs a Spack: FABSCOPE_SPACK,
# else `spack` on PATH, else /work/spack-src/bin/spack; skips (77) without one.
# The machine's Spack configuration is kept out: scratch user and system scopes.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
require_fabscope

require_spack
scratch=$(mktemp -d /tmp/fabscope-spack-test.XXXXXX)
on_exit "rm -rf '$scratch'"
# The user cache (Spack's provider index over all its packages: minutes to build the
# first time) is kept between runs; the configuration is this run's own.
export SPACK_USER_CONFIG_PATH=$scratch/config SPACK_SYSTEM_CONFIG_PATH=$scratch/system-config
export SPACK_USER_CACHE_PATH=${FABSCOPE_SPACK_CACHE:-/var/tmp/fabscope-spack-cache}
note "$($spack --version) at $spack"
# The recipe's repository for this run only (the user scope above, not the Spack's own config).
timeout 120 "$spack" repo add --scope user "$FABSCOPE_SOURCE_DIR/packaging/spack" >/dev/null

set +e
audit=$(timeout 400 "$spack" audit packages fabscope 2>&1)
audit_rc=$?
set -e
echo "$audit"
[[ $audit_rc == 0 ]] || fail "spack audit packages fabscope: exit $audit_rc"
grep -q "0 issues found" <<<"$audit" || fail "spack audit packages fabscope did not say '0 issues found'"

info=$(timeout 300 "$spack" info fabscope 2>&1) || { echo "$info"; fail "spack info fabscope failed"; }
echo "$info" | head -n 40
for variant in cuda nccl python ucx verbs; do
  grep -Eq "^ +$variant \[" <<<"$info" || fail "spack info: variant '$variant' missing"
done
for dependency in mpi hdf5 boost yaml-cpp ucx rdma-core nccl hwloc; do
  grep -Eq "^ +$dependency$" <<<"$info" || fail "spack info: dependency '$dependency' missing"
done
# spack info does not list test dependencies: ask the recipe's class.
cat >"$scratch/deps.py" <<'PY'
import spack.repo
import spack.deptypes as dt
cls = spack.repo.PATH.get_pkg_class("fabscope")
for when, deps in cls.dependencies.items():
    for name, d in deps.items():
        print(name, "/".join(dt.flag_to_tuple(d.depflag)), str(when) or "always", d.spec)
PY
deps=$(timeout 300 "$spack" python "$scratch/deps.py" 2>&1) || { echo "$deps"; fail "spack python could not read the recipe's dependencies"; }
grep -qx "googletest test always googletest" <<<"$deps" || fail "googletest is not a test-only dependency: $(grep googletest <<<"$deps")"
grep -qx "hdf5 build/link always hdf5+mpi" <<<"$deps" || fail "hdf5+mpi is not a build/link dependency: $(grep hdf5 <<<"$deps")"
grep -qx "boost build/link always boost@1.71:+program_options" <<<"$deps" || fail "boost+program_options missing: $(grep boost <<<"$deps")"
note "PASS: spack audit found 0 issues; spack info lists the variants and dependencies"
