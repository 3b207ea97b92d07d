#!/usr/bin/env bash
# Starts a private Slurm (munged, slurmctld, slurmd) in a scratch folder,
# submits launch/slurm/fabscope.sbatch with sbatch on 2 tasks, and checks the
# job's exit code and its complete result file fabscope-<job id>.h5.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
source "$(dirname "${BASH_SOURCE[0]}")/lib/private-slurm.bash"

require_root "starts munged, slurmctld and slurmd"
require_fabscope
scenario=${FABSCOPE_SMOKE_SCENARIO:-$FABSCOPE_SOURCE_DIR/scenarios/smoke.yaml}
[[ -r $scenario ]] || fail "scenario $scenario is missing"
scratch=$(mktemp -d /tmp/fabscope-slurm-test.XXXXXX)
on_exit "rm -rf '$scratch'"
note "scratch folder $scratch"
start_private_slurm "$scratch"

# --- the job ---------------------------------------------------------------------
cd "$scratch/submit"
FABSCOPE_FABRIC=tcp FABSCOPE_IFACE=lo FABSCOPE_BIND=none \
  submit_job --nodes=1 --ntasks-per-node=2 --time=5 \
    "$FABSCOPE_SOURCE_DIR/launch/slurm/fabscope.sbatch" run --scenario "$scenario"
wait_job_finished 300
echo "----- job output"; cat "fabscope-$job_id.out" || true; echo "-----"
[[ $job_state == COMPLETED && $job_exit == 0:0 ]] || fail "job $job_id ended $job_state with exit code $job_exit (expected COMPLETED 0:0)"

result=$scratch/submit/fabscope-$job_id.h5
[[ -s $result ]] || fail "result file $result is missing"
complete=$(h5_root_attribute "$result" complete)
nranks=$(h5_root_attribute "$result" nranks)
preset=$(h5_root_attribute "$result" launch_preset)
[[ $complete == 1 ]] || fail "$result: complete=$complete, expected 1"
[[ $nranks == 2 ]] || fail "$result: nranks=$nranks, expected 2"
[[ $preset == tcp ]] || fail "$result: launch_preset='$preset', expected 'tcp' (FABSCOPE_FABRIC)"
note "PASS: $result complete, 2 ranks, launch_preset tcp"
