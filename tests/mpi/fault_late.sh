# A fault drill whose detection comes late fails: the shipped drill (UCX, 4 local
# ranks, victim rank 1 killed) made short (2 s of requests, the kill at 1 s), with survivor rank 2 recording its
# detection 3 s late (--self-test detect-late=2:3000) against a detect_within of
# 1.5 s. Expected: exit 1 through the documented launch, the verdict naming rank 2
# as late (and no other survivor), the file complete with the same error. The
# delay sits between 1x and 10x detect_within, so a drill judging against a
# looser bound than the one it was given passes it and fails this test.
source "$(dirname "$0")/lib.bash"
config=${FABSCOPE_BUILD_DIR:-$(dirname "$FABSCOPE_BIN")}/generated/fabscope/BuildConfig.hpp
grep -q "FABSCOPE_HAVE_UCX 1" "$config" 2>/dev/null || { echo "fault_late: SKIP: not a UCX build" >&2; exit 77; }

# The wrapper's grace for mpirun after the result line (launch/lib/result-line.bash):
# Open MPI 4.1's mpirun may never end after a rank was killed and the others exit 1.
rc=0
FABSCOPE_RESULT_GRACE_S=3 timeout --kill-after=10 120 \
  "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" --np 4 --bin "$FABSCOPE_BIN" -- \
  run --scenario "$FABSCOPE_SOURCE_DIR/scenarios/fault-drill.yaml" --output "$scratch/late.h5" --no-progress \
  --no-verdict --self-test detect-late=2:3000 --set requests=4000 --set at=1s --set detect_within=1.5s \
  > "$scratch/log" 2>&1 || rc=$?
[ $rc = 1 ] || { tail -30 "$scratch/log"; echo "FAIL: a drill with a late detection exited $rc (expected 1)"; exit 1; }
grep -q "missed detect_within (1500.0 ms): rank 2 after [3-9][0-9][0-9][0-9]\.[0-9] ms" "$scratch/log" \
  || { tail -30 "$scratch/log"; echo "FAIL: the output does not name rank 2 as late"; exit 1; }
/usr/bin/python3 - "$scratch/late.h5" <<'PY'
import re, sys, h5py
def text(v): return v.decode().rstrip("\0") if isinstance(v, bytes) else v
with h5py.File(sys.argv[1], "r") as f:
    assert int(f.attrs["complete"]) == 1 and int(f.attrs["exit_code"]) == 1, (f.attrs["complete"], f.attrs["exit_code"])
    a = f["/tests/0000"].attrs
    error = text(a["error"])
    assert text(a["status"]) == "failed", text(a["status"])
    late = re.search(r"missed detect_within \(1500\.0 ms\): ([^;]*)", error)
    assert late and re.fullmatch(r"rank 2 after \d+\.\d ms", late.group(1)), error
    assert int(a["false_losses"]) == 0, text(a["false_loss_detail"])
    print("fault_late:", error[:200])
PY
echo "fault_late: a detection 3 s late against detect_within 1.5 s fails the drill (exit 1), rank 2 named: ok"
