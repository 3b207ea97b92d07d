#!/usr/bin/env bash
# ucx_peer_lost.sh over UCX shared memory. On a loaded 2-core machine the survivor
# was once seen staying inside UCX past its deadline; the watchdog (runtime/
# Watchdog.hpp) now bounds that: either the survivor sees the loss and ends at once,
# or its watchdog ends it at the deadline plus its grace, naming the wait.
exec bash "$(dirname "$0")/ucx_peer_lost.sh" shm
