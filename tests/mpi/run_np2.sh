# The smoke scenario on 2 ranks, written both ways (parallel HDF5 and gathered to rank
# 0), and by default: auto gathers to rank 0 (no MPI-IO), even with parallel HDF5.
source "$(dirname "$0")/lib.bash"
for mode in parallel serial default; do
  out="$scratch/np2-$mode.h5"
  set_mode=(--set hdf5=$mode); [[ $mode == default ]] && set_mode=()  # smoke.yaml names no hdf5 mode
  run_mpi -np 2 "$FABSCOPE_BIN" run --scenario "$FABSCOPE_SOURCE_DIR/scenarios/smoke.yaml" --output "$out" \
    "${set_mode[@]}" --set iterations=30 --no-progress
  expected=$([ $mode = parallel ] && echo parallel || echo serial-gather)
  check_result "$out" 2 --mode "$expected"
done
