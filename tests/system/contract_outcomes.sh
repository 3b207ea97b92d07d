#!/usr/bin/env bash
# Contract tests that need root (tests/structure/check_outcome_contracts.py holds each
# claimed row of the docs' tables to one test): a runtime failure (exit 3: the result file
# on a 1 MiB tmpfs that the second instance's samples no longer fit in) of fabscope run and
# of launch/fabscope-mpirun, with no verdict line and the partial file named on stderr;
# and launch/slurm/fabscope.sbatch under a private Slurm, whose job exit code and closing
# line are fabscope's for each of 1 (a corrupted byte), 2 (a refused scenario) and 3 (the
# full disk; 0 is slurm_batch.sh's).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
source "$(dirname "${BASH_SOURCE[0]}")/lib/private-slurm.bash"

require_root "mounts a small tmpfs; starts munged, slurmctld and slurmd"
require_fabscope
unset FABSCOPE_CLOSING_VERDICT  # the test environment turns the closing verdict off
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

scratch=$(mktemp -d /tmp/fabscope-contract.XXXXXX)
on_exit "rm -rf '$scratch'"
small_disk "$scratch" 1m fabscope-contract

# 2 ranks x 5000 samples x 40 bytes = 400 kB per instance: the second of six does not fit.
cat >"$scratch/full.yaml" <<'YAML'
name: contract-full-disk
seed: 3
defaults: {iterations: 5000, warmup: 10, timeout: 60s}
tests:
  - name: lat
    kind: latency
    sizes: [8, 16, 32, 64, 128, 256]
YAML
scenario() {  # NAME CORRUPT
  printf 'name: contract-%s\ntests:\n  - {name: lat, kind: latency, sizes: [4KiB], iterations: 5, warmup: 1, timeout: 60s, corrupt_for_test: %s}\n' \
    "$1" "$2" >"$scratch/$1.yaml"
}
scenario corrupt true
printf 'name: contract-bad\ntests:\n  - {name: lat, kind: latency, sizes: [4KiB], iterations: -5}\n' >"$scratch/bad.yaml"

# run_full NAME CMD...: a run onto the full disk; must exit 3, print no verdict, name the
# partial file, and leave it marked complete=0.
run_full() {
  local name=$1 rc=0
  shift
  timeout --kill-after=10 240 "$@" >"$scratch/$name.out" 2>"$scratch/$name.err" || rc=$?
  ((rc == 3)) || { tail -n 20 "$scratch/$name.out" "$scratch/$name.err"; fail "$name: exit $rc, expected 3 (runtime failure)"; }
  if grep -q "^verdict:" "$scratch/$name.out"; then
    fail "$name: a run that exited 3 printed a verdict: $(grep '^verdict:' "$scratch/$name.out")"
  fi
  grep -q "^fabscope: the result file $scratch/disk/$name.h5 keeps every test finished so far, is marked complete=0 and exit_code=3$" \
    "$scratch/$name.err" || { tail -n 20 "$scratch/$name.err"; fail "$name: no line naming the partial file"; }
  [[ $(h5_root_attribute "$scratch/disk/$name.h5" complete) == 0 ]] || fail "$name: the partial file is not complete=0"
  rm -f "$scratch/disk/$name.h5"
  note "$name: exit 3, no verdict line, the partial file named and marked complete=0"
}
# outcome-contract: fabscope run | 3 | —
run_full run-full mpirun -np 2 "$FABSCOPE_BIN" run --scenario "$scratch/full.yaml" --output "$scratch/disk/run-full.h5" \
  --no-progress
# outcome-contract: launch/fabscope-mpirun | 3 | —
run_full wrap-full "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" -np 2 --bind none --bin "$FABSCOPE_BIN" -- \
  run --scenario "$scratch/full.yaml" --output "$scratch/disk/wrap-full.h5" --no-progress

# --- the batch script --------------------------------------------------------------------
start_private_slurm "$scratch"
cd "$scratch/submit"
# sbatch_case EXIT LINE SCENARIO [ARGS...]: the job's exit code is fabscope's; LINE is in its output.
sbatch_case() {
  local expected=$1 line=$2 scenario=$3 state
  shift 3
  FABSCOPE_FABRIC=tcp FABSCOPE_IFACE=lo FABSCOPE_BIND=none \
    submit_job --nodes=1 --ntasks-per-node=2 --time=5 \
    "$FABSCOPE_SOURCE_DIR/launch/slurm/fabscope.sbatch" run --scenario "$scratch/$scenario.yaml" --no-progress "$@"
  wait_job_finished 240
  state=COMPLETED
  ((expected == 0)) || state=FAILED
  [[ $job_state == "$state" && $job_exit == "$expected:0" ]] \
    || { cat "fabscope-$job_id.out"; fail "$scenario: job $job_id ended $job_state $job_exit, expected $state $expected:0"; }
  grep -qxF "$line" "fabscope-$job_id.out" || { cat "fabscope-$job_id.out"; fail "$scenario: no line '$line'"; }
}
# (exit 0: tests/system/slurm_batch.sh)
# outcome-contract: launch/slurm/fabscope.sbatch | 1 | fabscope.sbatch: fabscope exit code 1
sbatch_case 1 'fabscope.sbatch: fabscope exit code 1' corrupt
# outcome-contract: launch/slurm/fabscope.sbatch | 2 | fabscope.sbatch: error: fabscope refused the run's arguments or scenario
sbatch_case 2 "fabscope.sbatch: error: fabscope refused the run's arguments or scenario (its error is above); nothing was started" bad
grep -q "^fabscope: error: $scratch/bad.yaml:3:" "fabscope-$job_id.out" || fail "bad: fabscope's error naming bad.yaml:3 is not in the job's output"
[[ ! -e fabscope-$job_id.h5 ]] || fail "bad: a refused scenario left fabscope-$job_id.h5"
# outcome-contract: launch/slurm/fabscope.sbatch | 3 | fabscope.sbatch: fabscope exit code 3
sbatch_case 3 'fabscope.sbatch: fabscope exit code 3' full --output "$scratch/disk/job.h5"
[[ $(h5_root_attribute "$scratch/disk/job.h5" complete) == 0 ]] || fail "full: the job's partial file is not complete=0"
note "PASS: exit 3 of run and fabscope-mpirun without a verdict; fabscope.sbatch's job ends 1:0, 2:0, 3:0 as fabscope"
