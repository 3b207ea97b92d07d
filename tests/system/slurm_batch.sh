#!/usr/bin/env bash
# Starts a private Slurm (munged, slurmctld, slurmd) in a scratch folder,
# submits launch/slurm/fabscope.sbatch with sbatch on 2 tasks, and checks the
# job's exit code and its complete result file fabscope-<job id>.h5.
# The job is submitted with an export list, not the whole environment: Slurm then
# sets SLURM_EXPORT_ENV to that list and every srun in the job passes only it, so
# the preset's variables reach the tasks only through the script's srun
# --export=ALL. Each host's inventory (env/NAME) shows what the tasks got.
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
for value in "$FABSCOPE_BIN" "$FABSCOPE_SOURCE_DIR" "$PATH" "${FABSCOPE_CLOSING_VERDICT:-}"; do
  [[ $value != *,* ]] || fail "'$value' holds a comma: sbatch --export cannot carry it"
done
export_list=FABSCOPE_FABRIC=tcp,FABSCOPE_IFACE=lo,FABSCOPE_BIND=none,FABSCOPE_BIN=$FABSCOPE_BIN
export_list+=,FABSCOPE_SOURCE_DIR=$FABSCOPE_SOURCE_DIR,PATH=$PATH
[[ -z ${FABSCOPE_CLOSING_VERDICT:-} ]] || export_list+=,FABSCOPE_CLOSING_VERDICT=$FABSCOPE_CLOSING_VERDICT
submit_job --nodes=1 --ntasks-per-node=2 --time=5 --export="$export_list" \
  "$FABSCOPE_SOURCE_DIR/launch/slurm/fabscope.sbatch" run --scenario "$scenario"
wait_job_finished 300
echo "----- job output"; cat "fabscope-$job_id.out" || true; echo "-----"
# outcome-contract: launch/slurm/fabscope.sbatch | 0 | fabscope.sbatch: fabscope exit code 0
[[ $job_state == COMPLETED && $job_exit == 0:0 ]] || fail "job $job_id ended $job_state with exit code $job_exit (expected COMPLETED 0:0)"
grep -qxF "fabscope.sbatch: fabscope exit code 0" "fabscope-$job_id.out" || fail "no line 'fabscope.sbatch: fabscope exit code 0'"

result=$scratch/submit/fabscope-$job_id.h5
[[ -s $result ]] || fail "result file $result is missing"
complete=$(h5_root_attribute "$result" complete)
nranks=$(h5_root_attribute "$result" nranks)
preset=$(h5_root_attribute "$result" launch_preset)
[[ $complete == 1 ]] || fail "$result: complete=$complete, expected 1"
[[ $nranks == 2 ]] || fail "$result: nranks=$nranks, expected 2"
[[ $preset == tcp ]] || fail "$result: launch_preset='$preset', expected 'tcp' (FABSCOPE_FABRIC)"
# Variables only the preset sets (not in the export list), as the tasks recorded them.
recorded=$(/usr/bin/python3 - "$result" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    for host in f["hosts"]:
        for key, value in f["hosts"][host]["inventory"][()]:
            if key.decode() in ("env/UCX_TLS", "env/NCCL_SOCKET_IFNAME", "env/OMPI_MCA_btl"):
                print(f"{key.decode()}={value.decode()}")
PY
)
expected_env=$'env/NCCL_SOCKET_IFNAME=lo\nenv/OMPI_MCA_btl=tcp,vader,self\nenv/UCX_TLS=tcp,sm,self'
[[ $(sort <<<"$recorded") == "$expected_env" ]] \
  || fail "$result: the tasks recorded '$recorded', expected the tcp preset's '$expected_env' (srun --export=ALL)"
note "PASS: $result complete, 2 ranks, launch_preset tcp, the preset's variables reached the tasks"
