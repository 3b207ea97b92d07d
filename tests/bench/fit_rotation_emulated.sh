#!/usr/bin/env bash
# The whole cluster on the emulated cluster: RUNS healthy runs of the one command
# (launch/fabscope-fit, the plan of tests/system/fit_emulated.sh: llama3-8b TP 2, 8 hosts
# of one rank at 1 Gbit/s, ttft_p99=2s) and RUNS with a host outside the first KV pair
# (HOST, default ${prefix}5) losing 3 % of its packets both ways. The plan's KV push
# rotates its roles over every host (kvpush role_rotation: ring), so the lossy host
# pushes and receives KV like every other. Counts how often fit says PASS (healthy) and
# FAIL naming HOST (lossy: through its nodes check or the diagnosis's cluster check) and
# prints each run's verdict line, checks and the load. Usage:
#   fit_rotation_emulated.sh [RUNS]     (default 5; root; about 1 min a run, more when busy)
# The logs stay in $KEEP (default /tmp/fabscope-fit-rotation-last). Not part of ./tests/run.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
runs=${1:-5}
[[ $(id -u) == 0 ]] || { echo "needs root (network namespaces)"; exit 77; }
bin=${FABSCOPE_BIN:-$src/build/fabscope}
cluster=$src/launch/emulated-cluster
export FABSCOPE_CLUSTER_PREFIX=${FABSCOPE_CLUSTER_PREFIX:-ecrot} OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PYTHONPATH=$src/analysis${PYTHONPATH:+:$PYTHONPATH}
prefix=$FABSCOPE_CLUSTER_PREFIX
lossy_host=${HOST:-${prefix}5}
scratch=$(mktemp -d)
keep=${KEEP:-/tmp/fabscope-fit-rotation-last}
"$cluster" up 8 --subnet "${SUBNET:-198.18.52.0/24}" --frontend "${FRONTEND:-198.18.53.0/24}" >/dev/null
trap '"$cluster" down >/dev/null; rm -rf "$keep"; mv "$scratch" "$keep"' EXIT
for i in 0 1 2 3 4 5 6 7; do "$cluster" rate "$prefix$i" 1gbit >/dev/null; done

# the plan and probe settings of tests/system/fit_emulated.sh (default and lossy variants)
plan=(--model llama3-8b --tp 2 --ranks 8 --ranks-per-node 1 --budget 2m --conditions quiet
      --slo ttft_p99=2s,cif_p99=off --decode-batch 1 --prefill-chunk none --prompt 16)
sets=(--set all-pairs-bandwidth.window=2 --set all-pairs-bandwidth.warmup=2
      --set all-pairs-bandwidth.iterations=6 --set all-pairs-latency.warmup=2
      --set all-pairs-latency.iterations=20 --set tp-allreduce.iterations=20)

# one NAME: the one command into $scratch/NAME; prints its verdict, checks and load
one() {
  local name=$1 started=$SECONDS status=0
  timeout --kill-after=10 400 "$src/launch/fabscope-fit" --dir "$scratch/$name" --no-calibrate \
    "${sets[@]}" "${plan[@]}" -- --fabric emulated --bin "$bin" >"$scratch/$name.log" 2>&1 || status=$?
  echo "== $name: exit $status after $((SECONDS - started)) s; load $(cut -d' ' -f1-3 /proc/loadavg)"
  grep -E '^(fit |  (ttft_p99|nodes|cluster): |fix: )' "$scratch/$name.log" | cut -c1-700 || true
}

# outcome NAME: PASS, FAIL-NAMED (FAIL naming $lossy_host), or what fit said
outcome() {
  /usr/bin/python3 - "$scratch/$1/fit.json" "$lossy_host" <<'PY'
import json, sys
try:
    fit = json.load(open(sys.argv[1]))
except OSError:
    print("NO VERDICT"); sys.exit()
checks = {c["name"]: c for c in fit["checks"]}
host = sys.argv[2]
named = host in checks.get("nodes", {}).get("figures", {}).get("nodes_named", []) or (
    checks.get("cluster", {}).get("status") == "FAIL" and host in checks["cluster"]["text"])
print("FAIL-NAMED" if fit["verdict"] == "FAIL" and named else fit["verdict"])
PY
}

echo "load before: $(uptime)"
declare -A seen=()
for ((k = 1; k <= runs; k++)); do
  one "healthy$k"
  o=$(outcome "healthy$k"); echo "-> healthy$k: $o"; seen[healthy $o]=$((${seen[healthy $o]:-0} + 1))
done
"$cluster" loss "$lossy_host" 3 >/dev/null
for ((k = 1; k <= runs; k++)); do
  one "lossy$k"
  o=$(outcome "lossy$k"); echo "-> lossy$k: $o"; seen[lossy $o]=$((${seen[lossy $o]:-0} + 1))
done
echo "load after: $(uptime)"
for key in "${!seen[@]}"; do echo "$key: ${seen[$key]} of $runs"; done | sort
