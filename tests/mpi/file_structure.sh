#!/bin/bash
# No behaviour change in the file's layout: every shipped scenario that runs on
# a CPU-only machine is run with its own seed, and the structure of the file
# (groups, attributes, table columns and types; not values) is compared with
# the reference in tests/data/structure/<scenario>.txt, written by the binary
# before a refactoring. A difference fails with the diff.
#   FABSCOPE_STRUCTURE_WRITE=1 bash tests/mpi/file_structure.sh   rewrites the references
# (only on purpose, with the file-format change documented in docs/file-format.md).
# Not here: gpu-nccl-llama70b (needs GPUs; see tests/gpu).
source "$(dirname "$0")/lib.bash"
reference_dir="$FABSCOPE_SOURCE_DIR/tests/data/structure"
dump() { /usr/bin/python3 "$FABSCOPE_SOURCE_DIR/tests/structure/dump_structure.py" "$1"; }
config=${FABSCOPE_BUILD_DIR:-$(dirname "$FABSCOPE_BIN")}/generated/fabscope/BuildConfig.hpp
have_ucx=$(grep -q "FABSCOPE_HAVE_UCX 1" "$config" 2>/dev/null && echo 1 || echo 0)
failed=0 not_compared=()

# check NAME LAUNCH...: runs the launch (writing $scratch/NAME.h5), then compares.
check() {
  local name=$1
  shift
  local out="$scratch/$name.h5" started=$SECONDS
  if ! "$@" --output "$out" --no-progress >"$scratch/$name.log" 2>&1; then
    # A check that failed (exit 1) leaves a complete file of the same layout: on a
    # loaded machine (or 4 ASan ranks on 2 cores) heartbeats come late and a drill
    # declares a live peer lost or a detection late, as it should on such a host.
    if grep -q "^fabscope: result: exit code 1 " "$scratch/$name.log" \
      && [[ $(/usr/bin/python3 -c 'import h5py,sys; print(int(h5py.File(sys.argv[1], "r").attrs["complete"]))' \
        "$out" 2>/dev/null) == 1 ]]; then
      echo "file_structure: $name: a check failed (exit 1, $(grep -m1 -o 'live peer(s) declared lost\|late' \
        "$scratch/$name.log" || echo "see its log")); comparing its complete file"
    elif busy=$(/usr/bin/python3 "$FABSCOPE_SOURCE_DIR/tests/support/busy_machine.py" "$out" 2>/dev/null); then
      # A run that failed on a machine its own file records as busy (a deadline or a
      # drill's heartbeats) may have written what a failure writes: not comparable.
      tail -5 "$scratch/$name.log" >&2
      echo "file_structure: $name: the run failed on a busy machine ($busy): not compared" >&2
      not_compared+=("$name")
      return
    else
      tail -20 "$scratch/$name.log" >&2
      echo "file_structure: $name: the run failed" >&2
      failed=1
      return
    fi
  fi
  dump "$out" >"$scratch/$name.txt"
  if [[ ${FABSCOPE_STRUCTURE_WRITE:-0} == 1 ]]; then
    cp "$scratch/$name.txt" "$reference_dir/$name.txt"
    echo "file_structure: wrote $reference_dir/$name.txt"
  elif ! diff -u "$reference_dir/$name.txt" "$scratch/$name.txt" >&2; then
    echo "file_structure: $name: the file's structure differs from $reference_dir/$name.txt (above: - reference, + now)" >&2
    failed=1
  else
    echo "file_structure: $name: same structure ($(wc -l <"$scratch/$name.txt") lines, $((SECONDS - started)) s)"
  fi
}

scenario() { echo "$FABSCOPE_SOURCE_DIR/scenarios/$1.yaml"; }
check smoke run_mpi -np 4 "$FABSCOPE_BIN" run --scenario "$(scenario smoke)" --set iterations=30
# Short prompts: the layout does not depend on the prompt lengths, only on how many
# there are; the shipped ones (up to 8192 tokens, 320 MiB a rank) take most of a
# minute on a 2-core machine.
short_prompts() { echo "{derive: kv-request, block_tokens: 16, prompt_tokens: [$1]}"; }
check llama3-70b-serving run_mpi -np 4 "$FABSCOPE_BIN" run --scenario "$(scenario llama3-70b-serving)" \
  --set iterations=20 --set warmup=2 --set "kv-transfer.sizes=$(short_prompts "256, 512")"
kv_short=()
for test in kv-per-block kv-staged kv-layer-stream; do
  kv_short+=(--set "$test.sizes=$(short_prompts "64, 128")")
done
check kv-disagg-llama70b run_mpi -np 4 "$FABSCOPE_BIN" run --scenario "$(scenario kv-disagg-llama70b)" \
  "${kv_short[@]}" --set "kv-staged-open-loop.sizes=$(short_prompts 128)"
check serving-classes run_mpi -np 4 "$FABSCOPE_BIN" run --scenario "$reference_dir/serving-classes.yaml"
check serving-mix-deepseek-v3 run_mpi -np 8 "$FABSCOPE_BIN" run --scenario "$(scenario serving-mix-deepseek-v3)"
if [[ $have_ucx == 1 ]]; then
  check kv-disagg-llama70b-one-sided run_mpi -np 4 -x UCX_TLS=sm,self "$FABSCOPE_BIN" run \
    --scenario "$(scenario kv-disagg-llama70b-one-sided)"
  # The victim leaves on purpose; the documented launch keeps the survivors going.
  check fault-drill timeout --kill-after=10 120 "$FABSCOPE_SOURCE_DIR/launch/fabscope-mpirun" --np 4 \
    --bin "$FABSCOPE_BIN" -- run --scenario "$(scenario fault-drill)"
else
  echo "file_structure: not a UCX build: kv-disagg-llama70b-one-sided and fault-drill not compared" >&2
fi
if [[ $failed == 0 && ${#not_compared[@]} -gt 0 ]]; then
  echo "file_structure: SKIP: cannot tell for ${not_compared[*]}: their runs failed on a busy machine" >&2
  exit 77
fi
exit $failed
