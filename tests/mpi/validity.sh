# Validity of the measurement: 6 ranks on 2 CPUs are flagged as
# oversubscribed and their waits yield; 2 ranks on 2 CPUs are not and spin.
# The all-pairs retest measures control pairs (flag bit 10) next to the worst.
# taskset holds every rank to CPUs 0-1, so the test means the same on any machine.
source "$(dirname "$0")/lib.bash"
if [ "$(nproc)" -lt 2 ]; then echo "SKIP: needs 2 CPUs"; exit 77; fi
cat > "$scratch/v.yaml" <<'YAML'
name: validity
seed: 7
defaults: {iterations: 30, warmup: 5, timeout: 60s, transport: mpi, memory: host}
tests:
  - name: ap-lat
    kind: latency
    pattern: all-pairs
    all_pairs: {mode: parallel, retest_worst: 3}
    sizes: [8]
YAML
for np in 6 2; do
  run_mpi --bind-to none -np $np taskset -c 0,1 "$FABSCOPE_BIN" run --scenario "$scratch/v.yaml" \
    --output "$scratch/np$np.h5" --no-progress > "$scratch/np$np.out"
  cat "$scratch/np$np.out"
done
/usr/bin/python3 - "$scratch" <<'PY'
import sys
import h5py
import numpy as np
d = sys.argv[1]
CONTROL = 1 << 10

def load(np_):
    f = h5py.File(f"{d}/np{np_}.h5", "r")
    v = f["validity"][()]
    whats = [(r["host"].decode(), r["what"].decode(), float(r["value"]), float(r["limit"])) for r in v]
    return f, whats

f6, w6 = load(6)
over = [w for w in w6 if w[1] == "oversubscribed"]
assert over == [("*", "oversubscribed", 6.0, 2.0)], w6
assert int(f6.attrs["waits_yield"]) == 1, dict(f6.attrs)
assert int(f6.attrs["validity_findings"]) == len(w6)
out6 = open(f"{d}/np6.out").read()
assert out6.index("VALIDITY:") < out6.index("ap-lat"), out6  # findings before the table

f2, w2 = load(2)
assert not [w for w in w2 if w[1] == "oversubscribed"], w2
assert int(f2.attrs["waits_yield"]) == 0, dict(f2.attrs)

# The retest: 3 worst pairs and 3 controls, one at a time, controls flagged.
for f in (f6, f2):
    tests = [f["tests"][k] for k in sorted(f["tests"])]
    text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
    retest = [t for t in tests if text(t.attrs["pass"]) == "serial-retest"]
    assert len(retest) == 1, [t.attrs["pass"] for t in tests]
    s = retest[0]["samples"][()]
    control = (s["flags"] & CONTROL) != 0
    ctrl_pairs = {(int(a), int(b)) for a, b in zip(s["rank"][control], s["peer"][control])}
    worst = {(int(a), int(b)) for a, b in zip(s["rank"][~control], s["peer"][~control])}
    nranks = int(f.attrs["nranks"])
    expect = min(3, nranks * (nranks - 1) // 2)
    assert len(worst) == expect, worst
    # as many controls as retested pairs, at least 10, where enough pairs are left
    # (np 6 has 15 pairs: 3 retested, 10 controls; np 2 has one pair)
    assert len(ctrl_pairs) == min(max(expect, 10), nranks * (nranks - 1) // 2 - expect), ctrl_pairs
    assert not ctrl_pairs & worst, (ctrl_pairs, worst)
print("validity: np6 oversubscribed and yielding, np2 not; retest controls flagged")
PY
