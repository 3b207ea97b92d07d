# The smoke scenario on 4 ranks (oversubscribed on 2 cores): pairs, all-pairs, retests.
source "$(dirname "$0")/lib.bash"
out="$scratch/np4.h5"
run_mpi -np 4 "$FABSCOPE_BIN" run --scenario "$FABSCOPE_SOURCE_DIR/scenarios/smoke.yaml" --output "$out" --no-progress \
  | tee "$scratch/stdout"
check_result "$out" 4
grep -q "result file: $out (complete)" "$scratch/stdout"
# The serial retests of the worst all-pairs pairs are there, pointing at their parallel pass.
/usr/bin/python3 - "$out" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    retests = [g for g in f["tests"].values() if g.attrs["pass"] == "serial-retest"]
    assert len(retests) == 2, f"expected 2 serial retests, got {len(retests)}"
    for g in retests:
        parallel = f["tests/%04d" % g.attrs["retest_of"]]
        assert parallel.attrs["case"] == g.attrs["case"] and parallel.attrs["pass"] == "parallel"
PY
