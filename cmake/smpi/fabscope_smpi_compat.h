/* Forced into every translation unit of the SMPI build (cmake/FabscopeSmpi.cmake),
 * after SimGrid's own smpi_helpers.h. Works around what SimGrid 3.32's MPI does
 * differently from the standard, and around what its collectives cost the
 * simulation, so the sources stay plain MPI. Checked under smpirun by
 * tests/bench/smpi_compat_check.cpp (tests/bench/test_smpi_compat.py). */
#pragma once
#include <smpi/smpi.h>

#ifdef __cplusplus
#include <unordered_map>
#include <vector>

namespace fabscope_smpi {

/* MPI_Ibarrier. SimGrid 3.32's (colls::ibarrier) starts all of rank 0's release
 * sends when rank 0 enters, so a rank leaves as soon as it and rank 0 have entered,
 * not once every rank has: rank 0, which waits for every arrival, is the last to
 * leave. Before every all-pairs round that made rank 0 post its receive after its
 * peer had started sending, and rank 0's receive side looked slow (a false culprit
 * at 32 to 128 simulated ranks). This is a barrier by the standard, and the
 * dissemination algorithm: in step k every rank sends to rank + 2^k and waits for
 * rank - 2^k (mod size), so after ceil(log2 size) steps each has heard, through
 * others, from every rank, and all leave within one message time of each other. A
 * linear one (arrivals to rank 0, its releases to all) also waited for everyone,
 * but rank 0's 255 releases left its host's port at the start of every round, just
 * as that host's other ranks, released first, started their timed sends: at 256
 * ranks they sent 7 % slower than other hosts' ranks and diagnose named them. Each
 * step completes when this rank's MPI_Test or MPI_Wait sees it; the request handed
 * out is a receive from this rank itself, completed by the last step. Point to
 * point on the caller's communicator, under a tag no fabscope message uses (no
 * fabscope receive takes MPI_ANY_TAG). */
constexpr int barrierTag = 0x7ffffff0;

struct PendingBarrier {
  MPI_Comm comm;
  int rank;
  int size;
  int distance;          // this step's: 1, 2, 4, ...
  MPI_Request incoming;  // the message from rank - distance
};

/* This rank's barriers not yet through their last step, keyed by the request
 * handed out. Per rank under SMPI's privatization; keyed by a live request either
 * way. */
inline std::unordered_map<MPI_Request, PendingBarrier>& pendingBarriers() {
  static std::unordered_map<MPI_Request, PendingBarrier> pending;
  return pending;
}

/* The messages of one step: to rank + distance, and the receive from rank - distance. */
inline int startStep(PendingBarrier& barrier) {
  MPI_Request outgoing;
  int rc = MPI_Isend(nullptr, 0, MPI_BYTE, (barrier.rank + barrier.distance) % barrier.size, barrierTag, barrier.comm,
                     &outgoing);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Request_free(&outgoing);
  const int from = ((barrier.rank - barrier.distance) % barrier.size + barrier.size) % barrier.size;
  return MPI_Irecv(nullptr, 0, MPI_BYTE, from, barrierTag, barrier.comm, &barrier.incoming);
}

inline int ibarrier(MPI_Comm comm, MPI_Request* request) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int rc = MPI_Irecv(nullptr, 0, MPI_BYTE, rank, barrierTag, comm, request);  // completed by the last step
  if (rc != MPI_SUCCESS) return rc;
  PendingBarrier barrier{comm, rank, size, 1, MPI_REQUEST_NULL};
  if (size > 1) {
    rc = startStep(barrier);
    if (rc != MPI_SUCCESS) return rc;
  }
  pendingBarriers().emplace(*request, barrier);
  return MPI_SUCCESS;
}

/* Takes `request`'s barrier through the steps whose messages are in (polled:
 * MPI_Test, returning at the first that is not; blocking: MPI_Wait), and after the
 * last sends this rank the message that completes `request`. Blocking matters under
 * SimGrid 3.32: a receive completed by a test stays in its actor's list of
 * activities for the rest of the run (ActivityImpl::test finishes it without the
 * removal that a wait does), and that list, a std::list, is searched from the
 * front whenever one of the actor's activities ends: with SimGrid's own barrier
 * (whose root tests its 127 arrivals at each of 127 rounds), 63 % of a 128-rank
 * simulation's CPU went to those searches. */
inline int progressBarrier(MPI_Request request, bool block) {
  auto& all = pendingBarriers();
  if (all.empty() || request == MPI_REQUEST_NULL) return MPI_SUCCESS;
  auto found = all.find(request);
  if (found == all.end()) return MPI_SUCCESS;
  PendingBarrier& barrier = found->second;
  while (barrier.distance < barrier.size) {
    MPI_Status status;
    if (block) {
      int rc = MPI_Wait(&barrier.incoming, &status);
      if (rc != MPI_SUCCESS) return rc;
    } else {
      int done = 0;
      int rc = MPI_Test(&barrier.incoming, &done, &status);
      if (rc != MPI_SUCCESS) return rc;
      if (!done) return MPI_SUCCESS;
    }
    barrier.distance *= 2;
    if (barrier.distance < barrier.size) {
      int rc = startStep(barrier);
      if (rc != MPI_SUCCESS) return rc;
    }
  }
  MPI_Request last;
  int rc = MPI_Isend(nullptr, 0, MPI_BYTE, barrier.rank, barrierTag, barrier.comm, &last);
  all.erase(found);
  if (rc != MPI_SUCCESS) return rc;
  return MPI_Request_free(&last);
}

/* MPI_Test on MPI_REQUEST_NULL must set *flag to true. SimGrid 3.32's PMPI_Test
 * sets it only when a status is given, so with MPI_STATUS_IGNORE (NULL) a loop
 * polling a completed duplicate (runtime::startDuplicate) never ended. */
inline int test(MPI_Request* request, int* flag, MPI_Status* status) {
  int rc = progressBarrier(*request, false);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Status ignored;
  return MPI_Test(request, flag, status != MPI_STATUS_IGNORE ? status : &ignored);
}

inline int wait(MPI_Request* request, MPI_Status* status) {
  int rc = progressBarrier(*request, true);
  if (rc != MPI_SUCCESS) return rc;
  return MPI_Wait(request, status);
}

/* Freeing a barrier this rank has not left (a gate abandoned at teardown) frees
 * its open receive with it; ranks still in it wait for ever, as with any barrier
 * one rank left. */
inline int requestFree(MPI_Request* request) {
  auto& all = pendingBarriers();
  auto found = all.empty() ? all.end() : all.find(*request);
  if (found != all.end()) {
    if (found->second.incoming != MPI_REQUEST_NULL) MPI_Request_free(&found->second.incoming);
    all.erase(found);
  }
  return MPI_Request_free(request);
}

/* The non-blocking collectives fabscope's control plane uses: MPI_Iallreduce,
 * MPI_Iallgather, MPI_Ibcast, MPI_Igather, MPI_Igatherv. SimGrid 3.32 runs every
 * non-blocking collective linearly, all its messages started at once: for an
 * allreduce or allgather each rank sends to every other, size x (size - 1) flows
 * sharing the network together (one 8-byte MPI_Iallgather at 128 ranks ran for
 * over 56 s of CPU in the max-min solver, 0.26 s at 64). And it completes their
 * receives with a test (MPI_Waitall goes through waitany, which tests), so each
 * receive stays in its actor's activity list (see progressBarrier): a root
 * gathering from 255 ranks kept 255 more at every gather. Here they run as
 * SimGrid's blocking collectives, which receive with waits and, with the
 * algorithms smpirun is told to pick (--cfg=smpi/coll-selector:mpich, as
 * tests/bench/smpi_allpairs.sh does), in a logarithmic number of steps; the
 * gatherv, which that selector leaves linear, is one blocking receive per rank at
 * the root (synchronous sends). The request is complete on return. fabscope
 * posts each of these and waits for it before anything else (runtime::Communicator,
 * RankIdentity, the allreduce kind's timed calls), so blocking here leaves nothing
 * waiting on this rank. */
inline int iallreduce(const void* send, void* receive, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                      MPI_Request* request) {
  *request = MPI_REQUEST_NULL;
  return MPI_Allreduce(send, receive, count, type, op, comm);
}

inline int iallgather(const void* send, int sendCount, MPI_Datatype sendType, void* receive, int receiveCount,
                      MPI_Datatype receiveType, MPI_Comm comm, MPI_Request* request) {
  *request = MPI_REQUEST_NULL;
  return MPI_Allgather(send, sendCount, sendType, receive, receiveCount, receiveType, comm);
}

inline int ibcast(void* data, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request* request) {
  *request = MPI_REQUEST_NULL;
  return MPI_Bcast(data, count, type, root, comm);
}

inline int igather(const void* send, int sendCount, MPI_Datatype sendType, void* receive, int receiveCount,
                   MPI_Datatype receiveType, int root, MPI_Comm comm, MPI_Request* request) {
  *request = MPI_REQUEST_NULL;
  return MPI_Gather(send, sendCount, sendType, receive, receiveCount, receiveType, root, comm);
}

constexpr int gathervTag = 0x7ffffff1;

inline int igatherv(const void* send, int sendCount, MPI_Datatype sendType, void* receive, const int* receiveCounts,
                    const int* displacements, MPI_Datatype receiveType, int root, MPI_Comm comm, MPI_Request* request) {
  *request = MPI_REQUEST_NULL;
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // Synchronous: a small MPI_Send is eager in SimGrid (detached, held in one list of
  // the whole simulation until received), and ranks ran several gathers ahead of a
  // root still receiving the first (32 ranks: about 290 such sends alive at once).
  if (rank != root) return MPI_Ssend(send, sendCount, sendType, root, gathervTag, comm);
  MPI_Aint lowerBound = 0, extent = 0;
  MPI_Type_get_extent(receiveType, &lowerBound, &extent);
  for (int r = 0; r < size; ++r) {
    char* slot = static_cast<char*>(receive) + static_cast<MPI_Aint>(displacements[r]) * extent;
    int rc = r == root ? MPI_Sendrecv(send, sendCount, sendType, root, gathervTag, slot, receiveCounts[r], receiveType,
                                      root, gathervTag, comm, MPI_STATUS_IGNORE)
                       : MPI_Recv(slot, receiveCounts[r], receiveType, r, gathervTag, comm, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

}  // namespace fabscope_smpi

#define MPI_Ibarrier(comm, request) fabscope_smpi::ibarrier((comm), (request))
#define MPI_Test(request, flag, status) fabscope_smpi::test((request), (flag), (status))
#define MPI_Wait(request, status) fabscope_smpi::wait((request), (status))
#define MPI_Request_free(request) fabscope_smpi::requestFree((request))
#define MPI_Iallreduce(send, receive, count, type, op, comm, request) \
  fabscope_smpi::iallreduce((send), (receive), (count), (type), (op), (comm), (request))
#define MPI_Iallgather(send, sendCount, sendType, receive, receiveCount, receiveType, comm, request)           \
  fabscope_smpi::iallgather((send), (sendCount), (sendType), (receive), (receiveCount), (receiveType), (comm), \
                            (request))
#define MPI_Ibcast(data, count, type, root, comm, request) \
  fabscope_smpi::ibcast((data), (count), (type), (root), (comm), (request))
#define MPI_Igather(send, sendCount, sendType, receive, receiveCount, receiveType, root, comm, request)             \
  fabscope_smpi::igather((send), (sendCount), (sendType), (receive), (receiveCount), (receiveType), (root), (comm), \
                         (request))
#define MPI_Igatherv(send, sendCount, sendType, receive, receiveCounts, displacements, receiveType, root, comm,        \
                     request)                                                                                          \
  fabscope_smpi::igatherv((send), (sendCount), (sendType), (receive), (receiveCounts), (displacements), (receiveType), \
                          (root), (comm), (request))
#endif /* __cplusplus */

/* gethostname names the machine running the simulation, the same for every rank;
 * a rank's host is the simulated host SMPI placed it on (the hostfile's name). */
#include <simgrid/host.h>
#include <string.h>
#include <unistd.h>
static inline int fabscope_smpi_gethostname(char* name, size_t length) {
  const char* simulated = sg_host_get_name(sg_host_self());
  if (length == 0) return -1;
  strncpy(name, simulated, length - 1);
  name[length - 1] = '\0';
  return 0;
}
#define gethostname(name, length) fabscope_smpi_gethostname((name), (length))
