#!/usr/bin/env bash
# The one command, launch/fabscope-fit (plan -> run -> fit), on the emulated cluster:
# 8 hosts with a front-end network, every host's fabric link held to 1 Gbit/s.
# - Healthy: the plan fits its budget, runs, and the TTFT SLO PASSes.
# - One host (ecfit1, a decode host of the KV push's rotation) receiving at 50 Mbit/s: FAIL, with that
#   host named (fix:) and the share of the SLO it costs (cost:).
# - Line rates: each rank's rate is the host's configured limit, exported into the
#   inventory by launch/emulated-cluster-rsh; transfers into the slow host and an incast
#   into a 1 Gbit/s host read within 10 % of the ~95 % of line rate that TCP's payload
#   can fill (headers are the rest).
# 8 ranks share this machine's CPUs, so times carry the scheduler: where other work
# kept the CPUs busy (validity busy_host), a verdict may be CANNOT TELL, never the wrong
# one; the test then says so and checks the rest. "full" (fit_emulated_full.sh) runs the
# plan's own iteration counts with an incast condition (congestion factors shown).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"

variant=${1:-default}
require_root "creates network namespaces and a bridge"
require_fabscope
cluster=$FABSCOPE_SOURCE_DIR/launch/emulated-cluster
export FABSCOPE_CLUSTER_PREFIX=ecfit OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
scratch=$(mktemp -d /tmp/fabscope-fit-emulated.XXXXXX)
on_exit "rm -rf '$scratch'"
"$cluster" up 8 --subnet 198.18.42.0/24 --frontend 198.18.43.0/24 >/dev/null
on_exit "'$cluster' down >/dev/null"   # only once up succeeded: never another run's cluster
for i in 0 1 2 3 4 5 6 7; do "$cluster" rate "ecfit$i" 1gbit >/dev/null; done
export PYTHONPATH=$FABSCOPE_SOURCE_DIR/analysis${PYTHONPATH:+:$PYTHONPATH}
check=$FABSCOPE_SOURCE_DIR/tests/system/lib/fit-emulated-check.py

# The budget is 2 minutes: the plan's estimate (3.7 s) assumes 10 GB/s links and free CPUs;
# each run here took 33-95 s on 2 busy CPUs. TTFT p99 2 s, of which the fabric may take 10 % = 200 ms: a 1 MiB KV request (16 tokens
# of llama3-8b at TP 2) takes 8.4 ms on the wire at 1 Gbit/s, p99 30-97 ms with the CPUs'
# share on a busy machine (load 10-13), and at 50 Mbit/s 168 ms on the wire, p99 360-375 ms
# and never under 240 ms measured (2026-12-03): about 2x from the limit on either side. The congestion rule is
# off: here the neighbours' traffic is work for the same CPUs, not the fabric's.
plan=(--model llama3-8b --tp 2 --ranks 8 --ranks-per-node 1 --budget 2m
      --slo ttft_p99=2s,cif_p99=off --decode-batch 1 --prefill-chunk none --prompt 16)
# The probes' bandwidth window is cut to 2 x 1 MiB: at 50 Mbit/s the plan's 64 x 1 MiB
# sample (sized for 10 GB/s) takes 11 s. 6 samples a pair: with 3, on a busy machine the
# diagnosis could not tell a 50 Mbit/s host from the noise (smallest effect 3.6x).
sets=(--set all-pairs-bandwidth.window=2 --set all-pairs-bandwidth.warmup=2
      --set all-pairs-bandwidth.iterations=6 --set all-pairs-latency.warmup=2)
if [[ $variant == full ]]; then
  plan+=(--conditions quiet,incast)
else   # default and lossy
  plan+=(--conditions quiet)
  # No ITL target and the congestion rule off: the all-reduce is not judged, 20 will do.
  # The KV push keeps the plan's 300 requests: fewer cannot tell a TTFT p99 (rule of three).
  sets+=(--set all-pairs-latency.iterations=20 --set tp-allreduce.iterations=20)
fi
if [[ $variant == default ]]; then
  # 320 requests in the plan's 32 rotated rounds (10 a round), not its 640 (80 per node and
  # role, for the nodes check's power, which the lossy variant keeps): the healthy and the
  # slow host's verdicts need the 300 of the TTFT p99, and the suite keeps its time.
  sets+=(--set kv-push.iterations=320)
fi

# fit_run NAME [--set K=V ...]: the one command; its exit code in $fit_status, its output in
# NAME.log.
fit_run() {
  local started=$SECONDS name=$1
  shift
  fit_status=0
  # --no-calibrate: the --set lines above size the run by hand for this machine
  # (tests/bench/fit_estimate_emulated.sh measures the calibrated plan)
  timeout --kill-after=10 300 "$FABSCOPE_SOURCE_DIR/launch/fabscope-fit" --dir "$scratch/$name" --no-calibrate \
    "${sets[@]}" "$@" "${plan[@]}" -- --fabric emulated --bin "$FABSCOPE_BIN" >"$scratch/$name.log" 2>&1 \
    || fit_status=$?
  if ((fit_status == 124 || fit_status == 137)); then
    tail -30 "$scratch/$name.log"
    fail "$name: fabscope-fit did not end within 300 s"
  fi
  grep -E '^(plan for|fit |  ttft|fix:|cost:|line rate:)' "$scratch/$name.log" | cut -c1-400 || true
  note "$name: fabscope-fit exited $fit_status after $((SECONDS - started)) s"
  [[ -s $scratch/$name/fit.json ]] || { tail -30 "$scratch/$name.log"; fail "$name: no verdict ($scratch/$name/fit.json)"; }
}

# outcome-contract: launch/fabscope-fit | 0 | PASS
if [[ $variant == lossy ]]; then
  # A host outside the first KV pair (ranks 0 and 1) losing 3 % of its packets both
  # ways: the KV push's roles rotate over every host, so fit FAILs naming the host
  # through its nodes check (its requests as prefill and as decode) or, where the
  # diagnosis's probes see it, its cluster check (tests/bench/fit_rotation_emulated.sh
  # counts how often).
  "$cluster" loss ecfit5 3 >/dev/null
  fit_run lossy
  /usr/bin/python3 "$check" cluster "$scratch/lossy" "$fit_status" ecfit5 || fail "lossy host: wrong verdict"
  note "ok"
  exit 0
fi

fit_run healthy
grep -q "^plan for llama3-8b TP 2 on 8 ranks.*within the budget of 2 min" "$scratch/healthy.log" \
  || fail "healthy: the plan did not print its estimate within the budget"
/usr/bin/python3 "$check" verdict "$scratch/healthy" PASS "$fit_status" || fail "healthy: wrong verdict"
/usr/bin/python3 "$check" rates "$scratch/healthy/result.h5" 1 || fail "healthy: line rates are not the configured ones"

"$cluster" rate ecfit1 50mbit --latency 1s >/dev/null   # a deep queue: the link, not drops, limits
# A FAIL needs no tail bound: 100 requests (the plan's 300 would take longer), one in 8
# of them into the slow host as the roles rotate
# outcome-contract: launch/fabscope-fit | 1 | FAIL
fit_run slow --set kv-push.iterations=100
/usr/bin/python3 "$check" verdict "$scratch/slow" FAIL "$fit_status" ecfit1 || fail "slow host: wrong verdict"
/usr/bin/python3 "$check" rates "$scratch/slow/result.h5" 1 1:0.05 \
  || fail "slow host: line rates are not the configured ones"
/usr/bin/python3 "$check" share "$scratch/slow/result.h5" 1 || fail "slow host: its link's share is off"

# An incast of 7 senders into ecfit0's 1 Gbit/s link: the link, not the CPUs, limits it; 112 MiB
# per round (0.9 s at 1 Gbit/s) so that the senders' start on busy CPUs is a small part.
cat >"$scratch/incast.yaml" <<'YAML'
name: fit-emulated-incast
seed: 5
tests:
  - {name: into-one, kind: incast, sizes: [4MiB], window: 4, iterations: 8, warmup: 1, probe: false}
YAML
timeout --kill-after=10 120 "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" --fabric emulated -N 1 --np 8 \
  --bin "$FABSCOPE_BIN" -- run --scenario "$scratch/incast.yaml" --output "$scratch/incast.h5" \
  --no-progress >"$scratch/incast.log" 2>&1 || { tail -20 "$scratch/incast.log"; fail "the incast run failed"; }
/usr/bin/python3 "$check" share "$scratch/incast.h5" incast || fail "a 1 Gbit/s link's incast share is off"
note "ok"
