#!/usr/bin/env bash
# Fault drill `kill` as a Slurm batch job: a private Slurm (munged, slurmctld,
# slurmd in a scratch folder, the node declared with 4 CPUs), 4 tasks,
# launch/slurm/fabscope.sbatch with a fault scenario. The script must switch
# to its fault-tolerant launch (mpirun inside the allocation: srun --mpi=pmix
# lets Slurm's PMIx plugin kill the whole step when the victim dies), and the
# job must end COMPLETED with exit code 0 and a complete file in which every
# survivor detected the victim in time and no request hung.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"

require_root "starts munged, slurmctld and slurmd"
require_fabscope
for tool in munged slurmctld slurmd sbatch scontrol sinfo squeue mpirun; do
  command -v "$tool" >/dev/null || fail "'$tool' is not installed (Debian packages slurm-wlm, munge, openmpi-bin)"
done

scratch=$(mktemp -d /tmp/fabscope-fault-slurm.XXXXXX)
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
# Four tasks on a 2-core machine: the node is declared with 4 CPUs
# (SlurmdParameters=config_overrides keeps slurmd from draining it for that).
node_line=$(sed -E 's/CPUs=[0-9]+/CPUs=4/; s/Boards=[0-9]+ //; s/SocketsPerBoard=[0-9]+/Sockets=1/; s/CoresPerSocket=[0-9]+/CoresPerSocket=4/; s/ThreadsPerCore=[0-9]+/ThreadsPerCore=1/' <<<"$node_line")
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
SlurmdParameters=config_overrides
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

# --- the job: a kill drill on 4 tasks over UCX on loopback ---------------------------
cat >"$scratch/drill.yaml" <<YAML
name: fault-slurm
seed: 1
tests:
  - name: drill
    kind: fault
    transport: ucx
    memory: host
    sizes: [64]
    timeout: 30s
    fault: kill
    victim: 1
    at: 1s
    detect_within: 3s
    heartbeat: 100ms
    heartbeat_deadline: 600ms
    requests: 2000
    rate: 1000
YAML
cd "$scratch/submit"
# Root in CI: Open MPI refuses root without these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No fabric preset: TCP on loopback without shared memory (a killed peer over
# UCX shared memory can leave a survivor inside UCX, see README status).
job_id=$(UCX_TLS=tcp,self UCX_NET_DEVICES=lo OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=lo \
  OMPI_MCA_rmaps_base_oversubscribe=1 FABSCOPE_BIND=none \
  sbatch --parsable --nodes=1 --ntasks-per-node=4 --time=5 \
    "$FABSCOPE_SOURCE_DIR/launch/slurm/fabscope.sbatch" run --scenario "$scratch/drill.yaml" --no-progress)
[[ $job_id =~ ^[0-9]+$ ]] || fail "sbatch did not return a job id: '$job_id'"
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
wait_until 150 "job $job_id to finish" job_finished
job_state=$(job_field JobState)
job_exit=$(job_field ExitCode)
output=fabscope-$job_id.out
note "job $job_id: $job_state, exit code $job_exit"
grep -q "has a fault drill: fault-tolerant launch" "$output" || fail "fabscope.sbatch did not switch to its fault-tolerant launch"
grep -q "^  mpirun -np 4 --mca orte_abort_on_non_zero_status 0" "$output" || fail "fabscope.sbatch did not start the drill with mpirun"
[[ $job_state == COMPLETED && $job_exit == 0:0 ]] || fail "job $job_id ended $job_state with exit code $job_exit (expected COMPLETED 0:0)"
grep -q "^fabscope.sbatch: mpirun ended with [1-9][0-9]*; fabscope's result: exit code 0" "$output" \
  || note "(mpirun itself ended 0 this time)"

result=$scratch/submit/fabscope-$job_id.h5
/usr/bin/python3 - "$result" <<'PY' || fail "the drill's result file is wrong (see above)"
import sys, h5py
def text(v):
    return v.decode().rstrip("\0") if isinstance(v, bytes) else v
problems = []
with h5py.File(sys.argv[1], "r") as f:
    if int(f.attrs.get("complete", 0)) != 1: problems.append("complete != 1")
    if int(f.attrs.get("nranks", 0)) != 4: problems.append(f"nranks {f.attrs.get('nranks')}")
    a = {k: text(v) for k, v in f["/tests/0000"].attrs.items()}
    if a["status"] != "passed": problems.append(f"status {a['status']}: {a.get('error')}")
    if a["survivors_detected"] != 3: problems.append(f"detections: {a['detection_per_survivor']}")
    if not 0 <= a["detection_max_ms"] <= a["detect_within_ms"]: problems.append(f"slowest detection {a['detection_max_ms']} ms")
    if a["hung"] != 0: problems.append(f"{a['hung']} hung")
    print(f"kill under Slurm: {a['detection_per_survivor']}; {a['hung']} hung")
for p in problems: print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
PY
note "PASS: kill drill as a Slurm batch job: COMPLETED 0:0, complete file, detected in time"
