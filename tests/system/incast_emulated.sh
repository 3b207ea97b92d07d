#!/usr/bin/env bash
# Incast hurts a latency-sensitive flow: on an emulated 4-host cluster with two
# ranks per host, the receiving host's link is rate-limited; a latency test
# between two hosts runs quiet and under the `incast` condition (congestors
# stream to a rank on the probe's receiving host). The congested p99 must be
# clearly worse (impact_p99 stored in the file, > 1.5) and both instances
# must share their `case`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
up_emulated_cluster ecincast 198.18.12.0/24 4
# Canaries are spread: rank 0 (ecincast0) measures against rank 1 (ecincast1);
# the incast target is the other rank on ecincast1, so its link is the bottleneck.
"$cluster" rate ecincast1 100mbit
cat > "$scratch/incast.yaml" <<'YAML'
name: incast-hurts-latency
seed: 3
tests:
  - name: probe
    kind: latency
    sizes: [4KiB]
    iterations: 150
    warmup: 10
    timeout: 120s
    conditions: [quiet, incast]
    roles: {canaries: 2, placement: spread}
    load_bytes: 1MiB
YAML
set +e
# 8 ranks on a 2-core machine: idle ranks must yield the CPU or they are the noise.
timeout --kill-after=10 400 "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" --fabric emulated -N 2 --bin "$FABSCOPE_BIN" \
  --env OMPI_MCA_mpi_yield_when_idle=1 -- \
  run --scenario "$scratch/incast.yaml" --output "$scratch/incast.h5" --no-progress
rc=$?
set -e
((rc == 0)) || fail "fabscope exited with $rc"
/usr/bin/python3 - "$scratch/incast.h5" <<'PY' || fail "the incast did not measurably hurt the latency probe"
import sys, h5py
def text(v): return v.decode() if isinstance(v, bytes) else str(v)
with h5py.File(sys.argv[1], "r") as f:
    quiet, congested = f["tests/0000"].attrs, f["tests/0001"].attrs
    assert text(quiet["condition"]) == "quiet" and text(congested["condition"]) == "incast"
    assert text(quiet["case"]) == text(congested["case"]), "quiet and congested must share their case"
    hosts = {int(r["rank"]): text(r["host"]) for r in f["ranks"][()]}
    canaries = [int(x) for x in text(congested["canaries"]).split(",")]
    print(f"canaries {canaries} on {[hosts[c] for c in canaries]}; load: {text(congested['load'])}")
    print(f"p99 quiet {quiet['p99_ns']/1e3:.1f} us, incast {congested['p99_ns']/1e3:.1f} us, "
          f"impact_p99 {congested['impact_p99']:.2f}, impact_mean {congested['impact_mean']:.2f}")
    assert congested["impact_p99"] > 1.5, congested["impact_p99"]
PY
note "incast raised the probe's p99 as expected"
