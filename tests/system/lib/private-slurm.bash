# A private Slurm for a system test (source after system-test.bash): munged,
# slurmctld and slurmd from a scratch folder, on free ports, stopped when the
# test exits, with the daemons' logs printed if it fails.
#
#   start_private_slurm SCRATCH [CPUS]   CPUS: declare the node with that many
#                                        CPUs (more tasks than cores); lines in
#                                        $slurm_extra_conf go into slurm.conf
#   submit_job ARGS...                   sbatch --parsable ARGS; sets $job_id,
#                                        cancels the job on exit
#   wait_job_finished SECONDS            sets $job_state and $job_exit
# Sets SLURM_CONF and node_name.

# Free ports, so a Slurm of the machine or another test run is not disturbed.
slurm_port_in_use() { ss -Hltn "sport = :$1" | grep -q .; }
slurm_pick_port() {
  local port tries
  for ((tries = 0; tries < 50; tries++)); do
    port=$((20000 + RANDOM % 20000))
    slurm_port_in_use "$port" || slurm_port_in_use $((port + 1)) || { echo "$port"; return 0; }
  done
  fail "no free TCP port pair found in 50 tries"
}

start_private_slurm() {
  slurm_scratch=$1
  local cpus=${2:-}
  local tool
  for tool in munged slurmctld slurmd sbatch scontrol sinfo squeue; do
    command -v "$tool" >/dev/null || fail "'$tool' is not installed (Debian packages slurm-wlm, munge)"
  done
  mkdir -p "$slurm_scratch"/{state,spool,submit}
  chmod 755 "$slurm_scratch"
  local ctld_port slurmd_port
  ctld_port=$(slurm_pick_port)
  slurmd_port=$((ctld_port + 1))
  on_exit "print_slurm_logs_on_failure"

  local munge_socket=$slurm_scratch/munge.socket
  munged --foreground --force --socket="$munge_socket" --pid-file="$slurm_scratch/munged.pid" \
    --log-file="$slurm_scratch/munged.log" --seed-file="$slurm_scratch/munged.seed" \
    >"$slurm_scratch/munged.console.log" 2>&1 &
  on_exit "stop_pid $! munged"
  wait_until 10 "munged socket $munge_socket" test -S "$munge_socket"

  # slurm.conf with this machine's real CPUs and memory (or CPUS of them).
  local node_line overrides=""
  node_line=$(slurmd -C | head -n 1)
  [[ $node_line == NodeName=* ]] || fail "slurmd -C did not describe this node: $node_line"
  node_name=$(sed 's/^NodeName=\([^ ]*\).*/\1/' <<<"$node_line")
  if [[ -n $cpus ]]; then
    # config_overrides keeps slurmd from draining a node declared bigger than it is.
    node_line=$(sed -E "s/CPUs=[0-9]+/CPUs=$cpus/; s/Boards=[0-9]+ //; s/SocketsPerBoard=[0-9]+/Sockets=1/; s/CoresPerSocket=[0-9]+/CoresPerSocket=$cpus/; s/ThreadsPerCore=[0-9]+/ThreadsPerCore=1/" <<<"$node_line")
    overrides="SlurmdParameters=config_overrides"
  fi
  export SLURM_CONF=$slurm_scratch/slurm.conf
  cat >"$SLURM_CONF" <<CONF
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
StateSaveLocation=$slurm_scratch/state
SlurmdSpoolDir=$slurm_scratch/spool
SlurmctldPidFile=$slurm_scratch/slurmctld.pid
SlurmdPidFile=$slurm_scratch/slurmd.pid
SlurmctldLogFile=$slurm_scratch/slurmctld.log
SlurmdLogFile=$slurm_scratch/slurmd.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
$overrides
${slurm_extra_conf:-}
$node_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=fabscope Nodes=$node_name Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF

  # Foreground daemons (-D) started here: their pids are ours to stop.
  slurmctld -D -i -f "$SLURM_CONF" >"$slurm_scratch/slurmctld.console.log" 2>&1 &
  on_exit "stop_pid $! slurmctld"
  slurmd -D -f "$SLURM_CONF" >"$slurm_scratch/slurmd.console.log" 2>&1 &
  on_exit "stop_pid $! slurmd"
  wait_until 60 "node $node_name idle in sinfo" slurm_node_is_idle
  note "Slurm up: node $node_name idle (ports $ctld_port/$slurmd_port)"
}

slurm_node_is_idle() { [[ $(sinfo -h -n "$node_name" -o %T 2>/dev/null) == idle ]]; }

print_slurm_logs_on_failure() {
  ((system_test_exit_status == 0)) && return 0
  local log
  for log in "$slurm_scratch"/*.log "$slurm_scratch"/submit/*.out; do
    [[ -f $log ]] || continue
    echo "----- $log (last 40 lines)" >&2
    tail -n 40 "$log" >&2
  done
}

submit_job() {
  job_id=$(sbatch --parsable "$@")
  [[ $job_id =~ ^[0-9]+$ ]] || fail "sbatch did not return a job id: '$job_id'"
  # If anything below fails, the job must not outlive the daemons.
  on_exit "scancel $job_id 2>/dev/null || true; wait_job_gone"
  note "submitted job $job_id"
}

wait_job_gone() {
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -z $(squeue -h -j "$job_id" 2>/dev/null) ]] && return 0
    sleep 0.2
  done
  echo "job $job_id still listed by squeue after 20 s" >&2
}

job_field() { scontrol show job "$job_id" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }
job_finished() {
  case $(job_field JobState) in
    COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED) return 0 ;;
    *) return 1 ;;
  esac
}

wait_job_finished() {
  wait_until "$1" "job $job_id to finish" job_finished
  job_state=$(job_field JobState)
  job_exit=$(job_field ExitCode)
  note "job $job_id: $job_state, exit code $job_exit"
}
