#!/usr/bin/env bash
# ucx_peer_lost.sh over UCX shared memory. Known open problem (issue 20): on a
# loaded 2-core machine the survivor was seen staying inside UCX past its
# deadline, so this case runs only on demand (FABSCOPE_UCX_SHM_LOST=1) and
# otherwise shows as skipped in ctest's output.
if [[ -z ${FABSCOPE_UCX_SHM_LOST:-} ]]; then
  echo "SKIP: the shared-memory lost-peer case runs only with FABSCOPE_UCX_SHM_LOST=1 (known open problem, issue 20)"
  exit 77
fi
exec bash "$(dirname "$0")/ucx_peer_lost.sh" shm
