#!/usr/bin/env bash
# fabscope quickcheck as Slurm's HealthCheckProgram: a private
# Slurm runs it every few seconds; a planted failure (a manifest that cannot
# match this node) must drain the node with the check's one-line reason, and
# fixing the manifest must return the node to service on the check's next pass.
# Before Slurm: the command itself, healthy (exit 0) and failing (exit 1, one
# line), within its time limit.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/system-test.bash"
source "$(dirname "${BASH_SOURCE[0]}")/lib/private-slurm.bash"

require_root "starts munged, slurmctld and slurmd; drains and resumes a node"
require_fabscope
scratch=$(mktemp -d /tmp/fabscope-quickcheck-test.XXXXXX)
on_exit "rm -rf '$scratch'"
note "scratch folder $scratch"

# A manifest this node matches (its own kernel) and one it cannot (a kernel that does not exist).
cat >"$scratch/good.yaml" <<YAML
name: this-node
software:
  kernel: "$(uname -r)"
YAML
cat >"$scratch/bad.yaml" <<YAML
name: planted-failure
software:
  kernel: "0.0.1-never"
YAML
ln -s good.yaml "$scratch/manifest.yaml"

# --- the command alone ---------------------------------------------------------------
check() {  # args...: sets $out, $rc, $took; state in $state_dir
  local start=$SECONDS
  set +e
  out=$(timeout 90 "$FABSCOPE_BIN" quickcheck --state-dir "${state_dir:-$scratch/state-direct}" "$@" 2>"$scratch/direct.err")
  rc=$?
  set -e
  took=$((SECONDS - start))
}
# Loop thresholds far from healthy figures: this test is about the verdict's path, and
# the machines it runs on are shared (a loaded 2-core machine measured 0.35 GB/s).
loose=(--max-latency-us 20000 --min-bandwidth-gbs 0.001)
# outcome-contract: fabscope quickcheck | 0 | fabscope: quickcheck ok
check --manifest "$scratch/good.yaml" --time-limit 40s "${loose[@]}"
[[ $rc == 0 ]] || { cat "$scratch/direct.err" >&2; fail "healthy node: exit $rc, expected 0; output: $out"; }
[[ $out == "fabscope: quickcheck ok ("*"latency"*"bandwidth"* ]] || fail "healthy node: unexpected output '$out'"
((took < 60)) || fail "healthy check took ${took} s (must finish well under 60 s)"
note "healthy: exit 0 in ${took} s: $out"
# outcome-contract: fabscope quickcheck | 1 | fabscope: <what is wrong>
check --manifest "$scratch/bad.yaml" --no-loop
[[ $rc == 1 ]] || fail "planted failure: exit $rc, expected 1; output: $out"
[[ $(wc -l <<<"$out") == 1 ]] || fail "planted failure: expected one line, got: $out"
[[ $out == "fabscope: manifest bad.yaml: software/kernel is '"*"', expected '0.0.1-never'" ]] ||
  fail "planted failure: unexpected line '$out'"
note "planted failure: exit 1: $out"
# State directory refusals: group/other-writable and a symbolic link.
mkdir -m 0777 "$scratch/open-state"
state_dir=$scratch/open-state check --no-loop
[[ $rc == 1 && $out == *"writable by group or others"* ]] || fail "open state dir: exit $rc, '$out'"
ln -s "$scratch/state-direct" "$scratch/linked-state"
state_dir=$scratch/linked-state check --no-loop
[[ $rc == 1 && $out == *"is a symbolic link; refused"* ]] || fail "linked state dir: exit $rc, '$out'"
note "state directory refusals: ok"

# --- under Slurm -----------------------------------------------------------------------
hc=$scratch/healthcheck
cat >"$hc" <<SH
#!/bin/sh
# slurmd starts this with a bare environment: say where Slurm's config and the tools are.
export SLURM_CONF=$scratch/slurm.conf PATH=/usr/local/bin:/usr/bin:/bin
exec "$FABSCOPE_BIN" quickcheck --manifest "$scratch/manifest.yaml" --state-dir "$scratch/state" \\
  --slurm-drain --verbose --report "$scratch/report.json" --time-limit 30s ${loose[*]} >>"$scratch/healthcheck.log" 2>&1
SH
chmod 755 "$hc"
slurm_extra_conf="HealthCheckProgram=$hc
HealthCheckInterval=5
HealthCheckNodeState=ANY"
start_private_slurm "$scratch"

node_reason() { scontrol show node "$node_name" --oneliner | sed -n 's/.* Reason=\(.*\)$/\1/p'; }
node_state() { scontrol show node "$node_name" --oneliner | sed -n 's/.* State=\([^ ]*\).*/\1/p'; }
drained_by_fabscope() { [[ $(node_state) == *DRAIN* && $(node_reason) == "fabscope: manifest manifest.yaml: software/kernel"* ]]; }
back_in_service() { [[ $(node_state) != *DRAIN* ]] && slurm_node_is_idle; }

wait_until 30 "a first health check pass (report.json)" test -s "$scratch/report.json"
[[ $(node_state) != *DRAIN* ]] || fail "node drained with the good manifest: $(node_reason)"
note "first pass healthy; node $(node_state)"

ln -sfn bad.yaml "$scratch/manifest.yaml"
planted=$SECONDS
wait_until 45 "node drained by the health check" drained_by_fabscope
note "drained after $((SECONDS - planted)) s: State=$(node_state) Reason=$(node_reason)"
sinfo -R -h -n "$node_name" -o '%E' | grep -q "^fabscope: manifest manifest.yaml: software/kernel is '.*', expected '0.0.1-never'" ||
  fail "sinfo -R does not show the reason: $(sinfo -R -h -n "$node_name" -o '%E')"

ln -sfn good.yaml "$scratch/manifest.yaml"
fixed=$SECONDS
wait_until 45 "node back in service after the fix" back_in_service
note "back in service after $((SECONDS - fixed)) s: State=$(node_state)"
echo "----- health check log (last 12 lines)"; tail -n 12 "$scratch/healthcheck.log"
note "PASS: quickcheck drained $node_name with its reason and returned it after the fix"
