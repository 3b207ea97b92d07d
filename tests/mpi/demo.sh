# README command 1 end to end (launch/demo with the binary ctest built, results in
# scratch): a healthy demo exits 0, its last line is the verdict PASS by the shipped
# criteria meant for a one-host run (local.yaml), and accept on the same file agrees.
source "$(dirname "$0")/lib.bash"
unset FABSCOPE_CLOSING_VERDICT  # the test environment turns it off for the other tests
# The demo installs only what it needs (launch/install-deps --demo); ./tests/run the rest.
install_deps=$FABSCOPE_SOURCE_DIR/launch/install-deps
grep -q '^\[ .* \] || launch/install-deps --demo$' "$FABSCOPE_SOURCE_DIR/launch/demo" \
  || { echo "FAIL: launch/demo does not install with --demo"; exit 1; }
demo_list=$("$install_deps" --demo --list) all_list=$("$install_deps" --list)
for needed in cmake libopenmpi-dev openmpi-bin libhdf5-openmpi-dev libyaml-cpp-dev python3-h5py python3-pandas; do
  grep -qx "$needed" <<<"$demo_list" || { echo "FAIL: the demo's packages lack $needed"; exit 1; }
done
for test_only in libgtest-dev clang slurm-wlm chromium prometheus python3-pytest nftables; do
  ! grep -qx "$test_only" <<<"$demo_list" || { echo "FAIL: the demo installs $test_only, which only the tests need"; exit 1; }
  grep -qx "$test_only" <<<"$all_list" || { echo "FAIL: install-deps for ./tests/run lacks $test_only"; exit 1; }
done
missing_from_all=$(comm -23 <(sort <<<"$demo_list") <(sort <<<"$all_list"))
[ -z "$missing_from_all" ] || { echo "FAIL: ./tests/run's packages lack the demo's $missing_from_all"; exit 1; }
echo "demo: installs $(wc -l <<<"$demo_list") packages, ./tests/run $(wc -l <<<"$all_list")"
out="$scratch/demo.log"
set +e
FABSCOPE_SKIP_INSTALL=1 FABSCOPE_DEMO_SKIP_BUILD=1 FABSCOPE_BIN="$FABSCOPE_BIN" \
  FABSCOPE_DEMO_RESULTS="$scratch/results" \
  timeout --kill-after=10 400 "$FABSCOPE_SOURCE_DIR/launch/demo" > "$out" 2>&1
rc=$?
set -e
last=$(tail -n 1 "$out")
echo "demo exit $rc, last line: $last"
# The demo's criteria judge measured times: a run whose own file says other work held
# the CPUs cannot tell a healthy host from a slow one (validity busy_host).
[ "$rc" = 0 ] || { tail -n 40 "$out"; cannot_tell_if_busy "the demo passes" "$scratch/results/demo.h5"
                   echo "FAIL: the demo exited $rc"; exit 1; }
case "$last" in
  "verdict: PASS ("*"criteria $FABSCOPE_SOURCE_DIR/analysis/criteria/local.yaml, shipped default for a run on one host)") ;;
  *) tail -n 40 "$out"; echo "FAIL: the demo does not end with the PASS verdict of local.yaml"; exit 1 ;;
esac
[ -s "$scratch/results/demo.h5" ] && [ -s "$scratch/results/demo.html" ] || { echo "FAIL: demo files missing"; exit 1; }
grep -q 'id="verdict"' "$scratch/results/demo.html" || { echo "FAIL: the report has no verdict"; exit 1; }
accept=$(PYTHONPATH="$FABSCOPE_SOURCE_DIR/analysis" /usr/bin/python3 -m fabscope_analysis accept "$scratch/results/demo.h5" | tail -n 1)
[ "$accept" = "$last" ] || { echo "FAIL: accept says '$accept'"; exit 1; }
# summary's first line is the same verdict
first=$(grep -m1 '^verdict: ' "$out")
[ "$first" = "$last" ] || { echo "FAIL: summary says '$first'"; exit 1; }
echo "demo passes the criteria meant for it: $last"
