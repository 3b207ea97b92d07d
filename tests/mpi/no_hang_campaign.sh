#!/usr/bin/env bash
# No hang anywhere: seeded runs, each losing a random
# rank (SIGKILL or SIGSTOP) at a random moment during latency, bandwidth,
# incast, all-reduce or kvpush, over MPI, UCX shared memory and UCX TCP. Every
# run must end by itself within its bound (hangs: 0), its file must open, every
# passed test must be intact, and the lost rank must be named. See
# no_hang_campaign.py; seeds are printed (FABSCOPE_CAMPAIGN_SEED replays).
source "$(dirname "$0")/lib.bash"
if ! /usr/bin/python3 -c "import h5py" 2>/dev/null; then
  echo "SKIP: no h5py (python3-h5py) to open the result files"
  exit 77
fi
# The default run takes 7 of the 13 kind x transport combinations (the seed's order:
# every kind and every transport at least once); the full run (tests/run --full)
# draws 40, every combination two or three times at different moments of loss.
if [[ ${FABSCOPE_FULL_TESTS:-0} == 1 ]]; then : "${FABSCOPE_CAMPAIGN_RUNS:=40}"; else : "${FABSCOPE_CAMPAIGN_RUNS:=7}"; fi
export FABSCOPE_CAMPAIGN_RUNS
timeout --kill-after=10 900 /usr/bin/python3 "$FABSCOPE_SOURCE_DIR/tests/mpi/no_hang_campaign.py" "$FABSCOPE_BIN" "$scratch"
