#!/usr/bin/env bash
# Every TP group on the emulated cluster: RUNS healthy runs of the one command
# (launch/fabscope-fit: llama3-8b TP 2 on 8 hosts of one rank at 1 Gbit/s, so each TP
# group spans 2 hosts and the cluster holds 4 of them) and RUNS with a host outside the
# first TP group (HOST, default ${prefix}5, in group 2) losing LOSS % (default 3) of its
# packets both ways, or with MODE=rate its link held to RATE (default 100mbit) instead.
# The plan rotates the TP all-reduce over the 4 groups (roles.groups), and fit's groups
# check judges each group's decode steps against the others'. Counts how often fit says
# PASS (healthy) and FAIL naming HOST (faulty: its groups check naming HOST's group, or
# the diagnosis's cluster check naming HOST), and prints each run's verdict line, the
# checks, the rotation the plan made and the load. Usage:
#   fit_groups_emulated.sh [RUNS]     (default 5; root; about 1-2 min a run, more when busy)
# The SLO: SLO (default itl_p50=150ms,itl_share=100%,cif_p99=off: the fabric may take the
# whole 150 ms of a decode step; a healthy step of 64 all-reduces is about 40-70 ms here when
# the machine is not busy, a p99 would need 19079 operations per group to PASS); ITERATIONS
# all-reduces per group and round (default 64: the plan's 8 rounds give 512 a group, 2048
# pooled, where a p50 needs 279).
# The logs stay in $KEEP (default /tmp/fabscope-fit-groups-last). Not part of ./tests/run.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
runs=${1:-5}
[[ $(id -u) == 0 ]] || { echo "needs root (network namespaces)"; exit 77; }
bin=${FABSCOPE_BIN:-$src/build/fabscope}
cluster=$src/launch/emulated-cluster
export FABSCOPE_CLUSTER_PREFIX=${FABSCOPE_CLUSTER_PREFIX:-ecgrp} OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PYTHONPATH=$src/analysis${PYTHONPATH:+:$PYTHONPATH}
prefix=$FABSCOPE_CLUSTER_PREFIX
faulty_host=${HOST:-${prefix}5}
mode=${MODE:-loss}
slo=${SLO:-itl_p50=150ms,itl_share=100%,cif_p99=off}
iterations=${ITERATIONS:-64}
scratch=$(mktemp -d)
keep=${KEEP:-/tmp/fabscope-fit-groups-last}
"$cluster" up 8 --subnet "${SUBNET:-198.18.54.0/24}" --frontend "${FRONTEND:-198.18.55.0/24}" >/dev/null
trap '"$cluster" down >/dev/null; rm -rf "$keep"; mv "$scratch" "$keep"' EXIT
for i in 0 1 2 3 4 5 6 7; do "$cluster" rate "$prefix$i" 1gbit >/dev/null; done

plan=(--model llama3-8b --tp 2 --ranks 8 --ranks-per-node 1 --budget 5m --conditions quiet
      --slo "$slo" --decode-batch 1 --prefill-chunk none --prompt 16)
sets=(--set all-pairs-bandwidth.window=2 --set all-pairs-bandwidth.warmup=2
      --set all-pairs-bandwidth.iterations=6 --set all-pairs-latency.warmup=2
      --set all-pairs-latency.iterations=20
      --set "tp-allreduce.iterations=$iterations")

# one NAME: the one command into $scratch/NAME; prints its verdict, checks and load
one() {
  local name=$1 started=$SECONDS status=0
  timeout --kill-after=10 600 "$src/launch/fabscope-fit" --dir "$scratch/$name" --no-calibrate \
    "${sets[@]}" "${plan[@]}" -- --fabric emulated --bin "$bin" >"$scratch/$name.log" 2>&1 || status=$?
  echo "== $name: exit $status after $((SECONDS - started)) s; load $(cut -d' ' -f1-3 /proc/loadavg)"
  grep -E '^(fit |  (itl_p99|groups|cluster): |fix: )' "$scratch/$name.log" | cut -c1-900 || true
}

# outcome NAME: PASS, FAIL-NAMED (FAIL naming $faulty_host), or what fit said (and by which check)
outcome() {
  /usr/bin/python3 - "$scratch/$1/fit.json" "$faulty_host" <<'PY'
import json, sys
try:
    fit = json.load(open(sys.argv[1]))
except OSError:
    print("NO VERDICT"); sys.exit()
checks = {c["name"]: c for c in fit["checks"]}
host = sys.argv[2]
groups = checks.get("groups", {})
by_groups = groups.get("status") == "FAIL" and host in groups.get("figures", {}).get("group_hosts", [])
by_cluster = checks.get("cluster", {}).get("status") == "FAIL" and host in checks["cluster"]["text"]
how = "+".join(w for w, on in (("groups", by_groups), ("cluster", by_cluster)) if on)
print(f"FAIL-NAMED ({how})" if fit["verdict"] == "FAIL" and how else
      fit["verdict"] + f" (groups {groups.get('status', 'absent')})")
PY
}

echo "load before: $(uptime)"
declare -A seen=()
for ((k = 1; k <= runs; k++)); do
  one "healthy$k"
  [[ $k == 1 ]] && grep -E "rotates over" "$scratch/healthy1/plan.yaml" | cut -c1-400 || true
  o=$(outcome "healthy$k"); echo "-> healthy$k: $o"; seen[healthy $o]=$((${seen[healthy $o]:-0} + 1))
done
if [[ $mode == rate ]]; then
  "$cluster" rate "$faulty_host" "${RATE:-100mbit}" >/dev/null
else
  "$cluster" loss "$faulty_host" "${LOSS:-3}" >/dev/null
fi
for ((k = 1; k <= runs; k++)); do
  one "faulty$k"
  o=$(outcome "faulty$k"); echo "-> faulty$k ($mode on $faulty_host): $o"; seen[faulty $o]=$((${seen[faulty $o]:-0} + 1))
done
echo "load after: $(uptime)"
for key in "${!seen[@]}"; do echo "$key: ${seen[$key]} of $runs"; done | sort
