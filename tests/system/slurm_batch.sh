#!/usr/bin/env bash
# Starts a private Slurm (munged, slurmctld, slurmd) in a scratch folder,
# submits launch/slurm/fabscope.sbatch with sbatch on 2 tasks, and checks the
# job's exit code and its complete result file fabscope-<job id>.h5.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"

require_root "starts munged, slurmctld and slurmd"
require_fabscope
scenario=${FABSCOPE_SMOKE_SCENARIO:-$FABSCOPE_SOURCE_DIR/scenarios/smoke.yaml}
[[ -r $scenario ]] || fail "scenario $scenario is missing"
for tool in munged slurmctld slurmd sbatch scontrol sinfo; do
  command -v "$tool" >/dev/null || fail "'$tool' is not installed (Debian packages slurm-wlm, munge)"
done

scratch=$(mktemp -d /tmp/fabscope-slurm-test.XXXXXX)
on_exit "rm -rf '$scratch'"
mkdir -p "$scratch"/{state,spool,submit}
chmod 755 "$scratch"
note "scratch folder $scratch"

# Free ports, so a Slurm of the machine or another test run is not disturbed.
port_in_use() { ss -Hltn "sport = :$1" | grep -q .; }
pick_port() {
  local port tries
  for ((tries = 0; tries < 50; tries++)); do
    port=$((20000 + RANDOM % 20000))
    port_in_use "$port" || port_in_use $((port + 1)) || { echo "$port"; return 0; }
  done
  fail "no free TCP port pair found in 50 tries"
}
ctld_port=$(pick_port)
slurmd_port=$((ctld_port + 1))

on_exit "print_logs_on_failure"
print_logs_on_failure() {
  ((system_test_exit_status == 0)) && return 0
  local log
  for log in "$scratch"/*.log "$scratch"/submit/*.out; do
    [[ -f $log ]] || continue
    echo "----- $log (last 40 lines)" >&2
    tail -n 40 "$log" >&2
  done
}

# --- munge ---------------------------------------------------------------------
munge_socket=$scratch/munge.socket
munged --foreground --force --socket="$munge_socket" --pid-file="$scratch/munged.pid" \
  --log-file="$scratch/munged.log" --seed-file="$scratch/munged.seed" >"$scratch/munged.console.log" 2>&1 &
munged_pid=$!
on_exit "stop_pid $munged_pid munged"
wait_until 10 "munged socket $munge_socket" test -S "$munge_socket"

# --- slurm.conf with this machine's real CPUs and memory ------------------------
node_line=$(slurmd -C | head -n 1)
[[ $node_line == NodeName=* ]] || fail "slurmd -C did not describe this node: $node_line"
node_name=$(sed 's/^NodeName=\([^ ]*\).*/\1/' <<<"$node_line")
export SLURM_CONF=$scratch/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=fabscope-test
# Loopback addresses: the test must not depend on the host name resolving.
SlurmctldHost=$node_name(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$scratch/state
SlurmdSpoolDir=$scratch/spool
SlurmctldPidFile=$scratch/slurmctld.pid
SlurmdPidFile=$scratch/slurmd.pid
SlurmctldLogFile=$scratch/slurmctld.log
SlurmdLogFile=$scratch/slurmd.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
$node_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=fabscope Nodes=$node_name Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF

# Foreground daemons (-D) started here: their pids are ours to stop.
slurmctld -D -i -f "$SLURM_CONF" >"$scratch/slurmctld.console.log" 2>&1 &
slurmctld_pid=$!
on_exit "stop_pid $slurmctld_pid slurmctld"
slurmd -D -f "$SLURM_CONF" >"$scratch/slurmd.console.log" 2>&1 &
slurmd_pid=$!
on_exit "stop_pid $slurmd_pid slurmd"
node_is_idle() { [[ $(sinfo -h -n "$node_name" -o %T 2>/dev/null) == idle ]]; }
wait_until 60 "node $node_name idle in sinfo" node_is_idle
note "Slurm up: node $node_name idle (ports $ctld_port/$slurmd_port)"

# --- the job ---------------------------------------------------------------------
cd "$scratch/submit"
job_id=$(FABSCOPE_FABRIC=tcp FABSCOPE_IFACE=lo FABSCOPE_BIND=none \
  sbatch --parsable --nodes=1 --ntasks-per-node=2 --time=5 \
    "$FABSCOPE_SOURCE_DIR/launch/slurm/fabscope.sbatch" run --scenario "$scenario")
[[ $job_id =~ ^[0-9]+$ ]] || fail "sbatch did not return a job id: '$job_id'"
# If anything below fails, the job must not outlive the daemons.
on_exit "scancel $job_id 2>/dev/null || true; wait_job_gone"
wait_job_gone() {
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -z $(squeue -h -j "$job_id" 2>/dev/null) ]] && return 0
    sleep 0.2
  done
  echo "job $job_id still listed by squeue after 20 s" >&2
}
note "submitted job $job_id"

job_field() { scontrol show job "$job_id" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }
job_finished() {
  case $(job_field JobState) in
    COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED) return 0 ;;
    *) return 1 ;;
  esac
}
wait_until 300 "job $job_id to finish" job_finished
job_state=$(job_field JobState)
job_exit=$(job_field ExitCode)
note "job $job_id: $job_state, exit code $job_exit"
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
