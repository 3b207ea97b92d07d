#!/usr/bin/env bash
# The one command's GPU paths on a machine with one GPU (or more), from .gpu-pack/
# (pack-for-device.sh; device tool, carry [".gpu-pack"]):  bash .gpu-pack/fit-one-gpu.sh
#
#  1. plan: llama3-8b TP 2 on 2 ranks, one rank per "node" (as the emulated cluster does:
#     then TP 2 and the KV pair cross between nodes), --paths auto: the plan reads
#     'fabscope inventory --json' on this host, finds the GPU and NCCL and puts the serving
#     tests on NCCL on GPU memory. Where this host's python3 lacks the analysis' modules,
#     the plan made at pack time with --paths gpu (.gpu-pack/fit-one-gpu/) is used.
#  2. run it with 2 ranks. NCCL holds one rank per GPU, so on ONE GPU the two ranks cannot
#     form an NCCL communicator: the TP all-reduce then runs over rank 0 alone (NCCL's
#     all-reduce on GPU memory, one rank: no link crossed; the loader says so) and the KV
#     push from GPU memory staged through pinned host over MPI (the two ranks share the
#     GPU). With two GPUs or more nothing is changed: NCCL on GPU memory, the KV GPU-direct.
#  3. fit: its verdict line must end with [paths: ...] naming NCCL on GPU memory (and, on
#     one GPU, the KV from GPU memory staged through pinned host: a stand-in).
# Results in ${OUT:-gpu-results}: fit-one-gpu.tar.gz (plan, criteria, result.h5, fit
# output and JSON) and fit-one-gpu-report.txt. Without the modules here, fit is left to the
# machine the archive comes back to (the command is printed). Exit 1 if a step failed.
#
#   fit-one-gpu.sh --plan-only DIR [--fabscope BIN]   writes the plan for --paths gpu into
#   DIR (pack-for-device.sh runs this where the pack is made: no GPU there).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)   # .gpu-pack/ sits in the repository root, this file in tests/gpu/
[[ -d $repo/analysis ]] || repo=$(cd "$here/../.." && pwd)
export PYTHONPATH=${FABSCOPE_ANALYSIS:-$repo/analysis}${PYTHONPATH:+:$PYTHONPATH}
python=${FABSCOPE_PYTHON:-python3}
plan_args=(--model llama3-8b --tp 2 --ranks 2 --ranks-per-node 1 --conditions quiet
           --decode-batch 1 --prefill-chunk none --prompt 16 --budget 2m
           --slo itl_p99=50ms,ttft_p99=2s,cif_p99=off)

if [[ ${1:-} == --plan-only ]]; then
  [[ -n ${2:-} ]] || { echo "usage: fit-one-gpu.sh --plan-only DIR [--fabscope BIN]" >&2; exit 2; }
  mkdir -p "$2"
  exec "$python" -m fabscope_analysis plan "${plan_args[@]}" --paths gpu ${3:+"$3" "$4"} \
    --output "$2/plan.yaml"
fi

out=${OUT:-gpu-results}; mkdir -p "$out"; out=$(cd "$out" && pwd)
work=/tmp/fit-one-gpu; rm -rf "$work"; mkdir -p "$work"
report=$out/fit-one-gpu-report.txt; : > "$report"
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export NCCL_NVLS_ENABLE=0
failed=0
say() { echo "$*" | tee -a "$report"; }
step() {  # step NAME COMMAND...
  local name=$1; shift
  say "=== $name"
  if "$@" >> "$report" 2>&1; then say "=== $name: ok"; else say "=== $name: FAILED"; failed=$((failed + 1)); fi
}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
nvidia-smi --query-gpu=index,name,driver_version --format=csv >> "$report" 2>&1
say "GPUs on this host: $gpus"
((gpus > 0)) || { say "no GPU: nothing to show"; exit 1; }

overrides=() probe_overrides=()
if ((gpus < 2)); then
  # one GPU holds one NCCL rank: the all-reduce on rank 0 alone, the KV staged through host;
  # the probe's copies of those tests (cal-gpu-NAME, -again, -more) the same way
  overrides=(--set "tp-allreduce.roles={canaries: 1}" --set kv-push.transport=mpi)
  for copy in "" -again -more; do
    probe_overrides+=(--set "cal-gpu-tp-allreduce$copy.roles={canaries: 1}" --set "cal-gpu-kv-push$copy.transport=mpi")
  done
  say "one GPU: ${overrides[*]} (NCCL allows one rank per GPU)"
fi

have_python=0
"$python" -c 'import numpy, pandas, h5py, yaml, scipy' 2>> "$report" && have_python=1
if ((have_python)); then
  # the calibration probe first, as launch/fabscope-fit runs it: the estimate from it
  "$python" -m fabscope_analysis plan "${plan_args[@]}" --fabscope "$here/fabscope" \
    --output "$work/plan.yaml" --calibration-probe "$work/calibrate.yaml" >> "$report" 2>&1
  t0=$(date +%s.%N)
  step "calibration probe, 2 ranks" bash -c 'cd "$0" && mpirun -np 2 "$1" run --scenario calibrate.yaml \
    --output calibrate.h5 --overwrite --no-progress "${@:2}"' "$work" "$here/fabscope" "${probe_overrides[@]}"
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  calibration=()
  [[ ! -s $work/calibrate.h5 ]] || calibration=(--calibration "$work/calibrate.h5" --calibration-wall "$wall")
  step "plan --paths auto (this host's inventory decides)" "$python" -m fabscope_analysis plan \
    "${plan_args[@]}" "${calibration[@]}" --paths auto --fabscope "$here/fabscope" --output "$work/plan.yaml"
  grep -q "note: paths: serving's GPU paths" "$report" \
    || { say "the plan did not choose the GPU paths"; failed=$((failed + 1)); }
else
  say "python3 here lacks the analysis' modules: the plan made at pack time (--paths gpu)"
  cp "$here/fit-one-gpu/plan.yaml" "$here/fit-one-gpu/plan.criteria.yaml" "$work/"
fi
(cd "$work" && "$here/fabscope" list --scenario plan.yaml --ranks 2 "${overrides[@]}") >> "$report" 2>&1
t0=$(date +%s.%N)
step "run the plan, 2 ranks" bash -c 'cd "$0" && mpirun -np 2 "$1" run --scenario plan.yaml \
  --output result.h5 --overwrite --no-progress "${@:2}"' "$work" "$here/fabscope" "${overrides[@]}"

say "the run took $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s; the plan: \
$(sed -n 's/^# Estimate ([^)]*): //p' "$work/plan.yaml" | cut -c1-300)"
fit_line=$(sed -n 's/^# The verdict: python3 -m fabscope_analysis fit RESULT.h5 //p' "$work/plan.yaml")
say "fit: (cd $work && python3 -m fabscope_analysis fit result.h5 $fit_line --json fit.json)"
if ((have_python)) && [[ -s $work/result.h5 ]]; then
  # exit 0 PASS or 1 FAIL / CANNOT TELL: the verdict on a single machine is not the point,
  # the path it names is
  (cd "$work" && "$python" -m fabscope_analysis fit result.h5 $fit_line --json fit.json) \
    > "$work/fit.txt" 2>&1
  cat "$work/fit.txt" >> "$report"
  first=$(head -1 "$work/fit.txt")
  say "verdict line: $first"
  if ((gpus >= 2)); then
    expect="[paths: serving's GPU paths (TP all-reduce: nccl on GPU memory; KV push: GPU-direct over nccl)]"
  else
    expect="[paths: measured over host memory: a stand-in (KV push: from GPU memory staged through pinned host over mpi); TP all-reduce: nccl on GPU memory]"
  fi
  if [[ $first == *"$expect" ]]; then say "paths as expected: $expect"
  else say "paths NOT as expected: $expect"; failed=$((failed + 1)); fi
fi
(cd /tmp && tar czf "$out/fit-one-gpu.tar.gz" fit-one-gpu) 2>> "$report"
say "fit-one-gpu steps failed: $failed"
[ $failed -eq 0 ]
