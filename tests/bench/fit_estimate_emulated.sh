#!/usr/bin/env bash
# The plan's calibrated estimate against the run it plans, on the emulated cluster: 8
# hosts, every host's fabric link held to 1 Gbit/s, one rank per host (root; the machine
# should be quiet: every rank shares its CPUs). launch/fabscope-fit first runs the
# calibration probe, plans from what it measured, runs the plan and prints both
# ("the run took X s; the plan estimated Y"). Usage: fit_estimate_emulated.sh [BUDGET]
# (default 2m); the plan, results and log stay in $KEEP (default
# /tmp/fabscope-fit-estimate-last). Prints the load (uptime) before and after; not part of ./tests/run.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
budget=${1:-2m}
[[ $(id -u) == 0 ]] || { echo "needs root (network namespaces)"; exit 77; }
bin=${FABSCOPE_BIN:-$src/build/fabscope}
cluster=$src/launch/emulated-cluster
export FABSCOPE_CLUSTER_PREFIX=${FABSCOPE_CLUSTER_PREFIX:-fest} OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
scratch=$(mktemp -d)
"$cluster" up 8 --subnet "${SUBNET:-198.18.77.0/24}" >/dev/null
keep=${KEEP:-/tmp/fabscope-fit-estimate-last}
trap '"$cluster" down >/dev/null; rm -rf "$keep"; mv "$scratch" "$keep"' EXIT
for i in 0 1 2 3 4 5 6 7; do "$cluster" rate "$FABSCOPE_CLUSTER_PREFIX$i" 1gbit >/dev/null; done
echo "load before: $(uptime)"
started=$SECONDS
status=0
timeout --kill-after=10 900 "$src/launch/fabscope-fit" --dir "$scratch/fit" --model llama3-8b --tp 2 \
  --ranks 8 --ranks-per-node 1 --budget "$budget" --slo ttft_p99=2s,cif_p99=off --conditions quiet \
  --decode-batch 1 --prefill-chunk none --prompt 16 -- --fabric emulated --bin "$bin" \
  >"$scratch/fit.log" 2>&1 || status=$?
echo "load after: $(uptime)"
grep -E '^(calibrate: the probe|plan for|  [a-z-]+: |  changed to fit|fabscope-fit: the run took|fit )' "$scratch/fit.log" | cut -c1-600
((status == 0 || status == 1)) || tail -25 "$scratch/fit.log"
echo "fabscope-fit exited $status after $((SECONDS - started)) s in all (probe, plan, run, fit)"
