# The launch wrappers read the output file and "has a fault drill" from fabscope
# itself (run ... --launch-facts), so every spelling fabscope accepts works:
#  - launch/slurm/fabscope.sbatch adds its own --output only when the arguments
#    name none (-o F, -oF, --output F, --output=F, --outp F), else fabscope
#    would exit 2 ("cannot be specified more than once");
#  - both wrappers launch fault-tolerantly when the scenario fabscope loads has
#    a test of kind fault, however it was given (-s F, -sF, --scenario=F) and
#    however the YAML spells it (flow style "- {kind: fault}").
# fabscope-mpirun takes the rank count as mpirun does (-np, -n) as well as --np.
# The sbatch script runs outside Slurm here with srun and mpirun replaced by
# stand-ins on PATH that record the command they were given (no job starts).
# ctest-labels: shares-machine
# (it checks files, messages or packages, not time: tests/run runs two such tests at a time)
source "$(dirname "$0")/lib.bash"
sbatch_script=$FABSCOPE_SOURCE_DIR/launch/slurm/fabscope.sbatch
mpirun_wrapper=$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$scratch/bin" "$scratch/submit"
for launcher in srun mpirun; do
  cat > "$scratch/bin/$launcher" <<STANDIN
#!/bin/bash
printf '%s\n' "\$(basename "\$0")" "\$@" > "$scratch/launched"
echo "fabscope: result: exit code 0"
STANDIN
  chmod +x "$scratch/bin/$launcher"
done

# A drill scenario in flow style, and a scenario with no drill.
drill=$scratch/flow-drill.yaml
sed -n '/^tests:/q;p' "$FABSCOPE_SOURCE_DIR/scenarios/fault-drill.yaml" > "$drill"
echo "tests: [{name: lose-worker, kind: fault, transport: ucx, sizes: [4KiB], victim: 1, requests: 10000}]" >> "$drill"
smoke=$FABSCOPE_SOURCE_DIR/scenarios/smoke.yaml

run_sbatch() {
  rm -f "$scratch/launched"
  local rc=0
  (cd "$scratch/submit" && PATH="$scratch/bin:$PATH" SLURM_JOB_ID=4242 SLURM_NTASKS=4 SLURM_SUBMIT_DIR="$scratch/submit" \
    FABSCOPE_SOURCE_DIR="$FABSCOPE_SOURCE_DIR" FABSCOPE_BIN="$FABSCOPE_BIN" FABSCOPE_BIND=none \
    timeout 60 bash "$sbatch_script" "$@") > "$scratch/out" 2>&1 || rc=$?
  return $rc
}
# Counts the output-file options in the recorded launch command.
output_options() {
  grep -cE '^(-o.*|--output|--output=.*|--outp)$' "$scratch/launched" || true
}

# --- Slurm: the output file in every spelling ------------------------------------
for spelling in "-o:$scratch/given.h5" "-o$scratch/given.h5" "--output:$scratch/given.h5" \
                "--output=$scratch/given.h5" "--outp:$scratch/given.h5"; do
  if [[ $spelling == *:* ]]; then args=("${spelling%%:*}" "${spelling#*:}"); else args=("$spelling"); fi
  run_sbatch run -s "$smoke" "${args[@]}" || { cat "$scratch/out"; fail "sbatch with '${args[*]}' failed"; }
  [[ -s $scratch/launched ]] || { cat "$scratch/out"; fail "sbatch with '${args[*]}' launched nothing"; }
  [[ $(output_options) == 1 ]] || { cat "$scratch/launched"; fail "sbatch with '${args[*]}': not exactly one output option"; }
  ! grep -q "fabscope-4242.h5" "$scratch/launched" || fail "sbatch with '${args[*]}' added its own output file"
  [[ $(head -n 1 "$scratch/launched") == srun ]] || fail "sbatch with '${args[*]}': smoke scenario not launched with srun"
done
run_sbatch run -s "$smoke" || { cat "$scratch/out"; fail "sbatch without an output file failed"; }
grep -qx "$scratch/submit/fabscope-4242.h5" "$scratch/launched" || { cat "$scratch/launched"; fail "sbatch did not add fabscope-<job id>.h5"; }
echo "launch_args: sbatch output file in 5 spellings and the default: ok"

# --- Slurm: a fault drill is launched fault-tolerantly -----------------------------
for args in "-s $drill" "-s$drill" "--scenario=$drill" "--scenario $FABSCOPE_SOURCE_DIR/scenarios/fault-drill.yaml"; do
  # shellcheck disable=SC2086  # the spellings are split on purpose
  run_sbatch run $args || { cat "$scratch/out"; fail "sbatch with '$args' failed"; }
  [[ $(head -n 1 "$scratch/launched") == mpirun ]] || { cat "$scratch/out"; fail "sbatch with '$args': drill not launched with mpirun"; }
  grep -qx "orte_abort_on_non_zero_status" "$scratch/launched" || fail "sbatch with '$args': no orte_abort_on_non_zero_status"
  grep -q "fault drill: fault-tolerant launch" "$scratch/out" || fail "sbatch with '$args' did not say why it launched fault-tolerantly"
done
# A scenario fabscope refuses: nothing is launched, exit 2 with fabscope's error.
rc=0; run_sbatch run -s "$FABSCOPE_SOURCE_DIR/tests/data/bad-scenarios/unknown-kind.yaml" || rc=$?
[[ $rc == 2 && ! -e $scratch/launched ]] || { cat "$scratch/out"; fail "sbatch with a bad scenario: exit $rc, expected 2 and no launch"; }
grep -q "unknown-kind.yaml:[0-9]*:[0-9]*" "$scratch/out" || { cat "$scratch/out"; fail "sbatch with a bad scenario: fabscope's error not shown"; }
echo "launch_args: sbatch fault drills in 4 spellings, bad scenario refused: ok"

# --- fabscope-mpirun: the same detection (its --dry-run prints the command) -------
mpirun_dry() { timeout 60 "$mpirun_wrapper" --dry-run --np 4 --bin "$FABSCOPE_BIN" -- "$@" > "$scratch/out" 2>&1; }
for args in "-s $drill" "-s$drill" "--scenario=$drill"; do
  # shellcheck disable=SC2086
  mpirun_dry run $args -o "$scratch/x.h5" || { cat "$scratch/out"; fail "fabscope-mpirun with '$args' failed"; }
  grep -q "orte_abort_on_non_zero_status 0" "$scratch/out" || { cat "$scratch/out"; fail "fabscope-mpirun with '$args': not fault-tolerant"; }
done
mpirun_dry run -s "$smoke" -o "$scratch/x.h5" || { cat "$scratch/out"; fail "fabscope-mpirun with smoke failed"; }
! grep -q "orte_abort_on_non_zero_status" "$scratch/out" || fail "fabscope-mpirun: smoke scenario launched fault-tolerantly"

# --- fabscope-mpirun: the rank count in mpirun's own spellings ----------------------
for spelling in "--np 3" "-np 3" "-n 3"; do
  # shellcheck disable=SC2086  # the spelling is split on purpose
  timeout 60 "$mpirun_wrapper" --dry-run $spelling --bin "$FABSCOPE_BIN" -- run -s "$smoke" -o "$scratch/x.h5" \
    > "$scratch/out" 2>&1 || { cat "$scratch/out"; fail "fabscope-mpirun with '$spelling' failed"; }
  grep -q "^  mpirun -np 3 " "$scratch/out" || { cat "$scratch/out"; fail "fabscope-mpirun with '$spelling': no 'mpirun -np 3'"; }
done
rc=0; timeout 60 "$mpirun_wrapper" --dry-run -np zero --bin "$FABSCOPE_BIN" -- run -s "$smoke" > "$scratch/out" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q -- "--np must be a positive integer, got 'zero'" "$scratch/out" \
  || { cat "$scratch/out"; fail "fabscope-mpirun -np zero: exit $rc, expected 2 naming --np"; }
echo "launch_args: ok"
