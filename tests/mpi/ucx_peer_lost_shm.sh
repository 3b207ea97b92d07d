#!/usr/bin/env bash
# ucx_peer_lost.sh over UCX shared memory. The kill waits for rank 0's progress
# line with samples, so it lands inside the timed loop: a kill during start-up,
# before any UCX endpoint exists, leaves the survivor in an MPI collective of
# start-up under its 120 s deadline (bounded, but past this test's window). A
# survivor ended by its watchdog within the deadline + grace counts as bounded.
exec bash "$(dirname "$0")/ucx_peer_lost.sh" shm
