#!/usr/bin/env bash
# The .deb, for real: CPack builds it from this build tree; dpkg installs it (apt
# resolving what is missing); the installed fabscope runs from PATH, a shipped
# scenario from /usr/share/fabscope/scenarios runs on 2 ranks through the
# installed fabscope-mpirun, and the system Python finds the analysis package
# from a folder outside the source tree (no PYTHONPATH); the man page reads.
# Then the package is removed and none of its files is left.
# ctest-labels: shares-machine
# (it checks files, messages or packages, not time: tests/run runs two such tests at a time)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
require_root "installs and removes a Debian package"
require_fabscope
command -v dpkg >/dev/null || { echo "[deb_package] SKIP: no dpkg on this machine" >&2; exit 77; }
if dpkg -s fabscope >/dev/null 2>&1; then
  echo "[deb_package] SKIP: a fabscope package is already installed here; not touching it" >&2
  exit 77
fi
build_dir=$(cd "$(dirname "$FABSCOPE_BIN")" && pwd)
scratch=$(mktemp -d /tmp/fabscope-deb.XXXXXX)
on_exit "rm -rf '$scratch'"
(cd "$build_dir" && cpack -G DEB -B "$scratch/pkg" >"$scratch/cpack.log" 2>&1) || { cat "$scratch/cpack.log" >&2; fail "cpack failed"; }
deb=$(ls "$scratch"/pkg/fabscope_*.deb)
note "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
on_exit "dpkg -s fabscope >/dev/null 2>&1 && dpkg --purge fabscope >/dev/null 2>&1 || true"
if ! dpkg -i "$deb" >"$scratch/dpkg.log" 2>&1; then
  apt-get install -f -y >>"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log" >&2; fail "dpkg -i and apt-get -f install failed"; }
fi
dpkg -L fabscope >"$scratch/files"
[[ $(command -v fabscope) == /usr/bin/fabscope ]] || fail "fabscope is not on PATH from the package ($(command -v fabscope || echo none))"
fabscope --version | grep -q "^fabscope " || fail "the installed fabscope --version failed"
[[ -r /usr/share/fabscope/scenarios/smoke.yaml ]] || fail "no /usr/share/fabscope/scenarios/smoke.yaml"
MANPAGER=cat man -l /usr/share/man/man1/fabscope.1* 2>/dev/null | grep -q "Usage:" || fail "the man page does not read"
# Run from a folder outside the source tree, with nothing of it on any path.
mkdir -p "$scratch/elsewhere"
cd "$scratch/elsewhere"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
set +e
env -u FABSCOPE_BIN -u FABSCOPE_SOURCE_DIR -u PYTHONPATH timeout 300 /usr/bin/fabscope-mpirun --np 2 -- \
  run --scenario /usr/share/fabscope/scenarios/smoke.yaml --output run.h5 --no-progress >"$scratch/run.log" 2>&1
rc=$?
set -e
((rc <= 1)) || { tail -20 "$scratch/run.log" >&2; fail "the installed fabscope-mpirun run exited $rc"; }
grep -q "fabscope-mpirun: .*ranks 2" "$scratch/run.log" || { head -5 "$scratch/run.log" >&2; fail "the installed wrapper did not start 2 ranks"; }
grep -q "^command:" "$scratch/run.log" && grep -A1 "^command:" "$scratch/run.log" | grep -q "/usr/bin/fabscope run" \
  || { grep -A1 "^command:" "$scratch/run.log" >&2; fail "the installed wrapper did not run the installed binary"; }
env -u PYTHONPATH /usr/bin/python3 -m fabscope_analysis summary run.h5 >"$scratch/summary.log" 2>&1 \
  || { cat "$scratch/summary.log" >&2; fail "python3 -m fabscope_analysis summary failed outside the source tree"; }
grep -q "^verdict: " "$scratch/summary.log" || fail "the installed analysis gave no verdict (criteria not found?)"
env -u PYTHONPATH /usr/bin/python3 -c 'import fabscope_analysis, sys; sys.exit(0 if fabscope_analysis.__file__.startswith("/usr/lib/python3/dist-packages/") else 1)' \
  || fail "python3 found fabscope_analysis elsewhere than the package"
cd /
dpkg --purge fabscope >"$scratch/purge.log" 2>&1 || { cat "$scratch/purge.log" >&2; fail "dpkg --purge failed"; }
left=()
while read -r f; do
  [[ -f $f || -L $f ]] && left+=("$f")
done <"$scratch/files"
((${#left[@]} == 0)) || fail "files left after removal: ${left[*]:0:5}"
[[ ! -e /usr/lib/python3/dist-packages/fabscope_analysis ]] \
  || fail "/usr/lib/python3/dist-packages/fabscope_analysis is still there after removal (bytecode caches?)"
note "installed, ran a shipped scenario on 2 ranks, analysed outside the source tree, removed cleanly"
# The .rpm where rpmbuild exists (Debian's rpm package): built and holding the same layout.
if command -v rpmbuild >/dev/null; then
  (cd "$build_dir" && cpack -G RPM -B "$scratch/rpm" >"$scratch/cpack-rpm.log" 2>&1) || { cat "$scratch/cpack-rpm.log" >&2; fail "cpack -G RPM failed"; }
  rpm -qlp "$scratch"/rpm/fabscope-*.rpm 2>/dev/null >"$scratch/rpm-files"
  for f in /usr/bin/fabscope /usr/bin/fabscope-mpirun /usr/share/fabscope/scenarios/smoke.yaml /usr/share/man/man1/fabscope.1; do
    grep -qx "$f" "$scratch/rpm-files" || fail "the .rpm lacks $f"
  done
  note "the .rpm holds the same layout"
else
  note "SKIP part: no rpmbuild here (Debian's rpm package has it): no .rpm built"
fi
note "PASS"
