#include "runtime/ClockSync.hpp"

#include "fabscope/BuildConfig.hpp"

#include <bit>
#include <limits>

namespace fabscope::runtime {
namespace {

constexpr int clockSyncTag = 0x7c10;
constexpr int clockOffsetTag = 0x7c11;

void waitFor(MPI_Request* requests, int count, const Deadline& deadline, const char* what, int peer) {
#if FABSCOPE_SMPI
  // Waits, not polls: simulated ranks cannot be lost, and under SimGrid 3.32 every
  // poll of the ranks still waiting for their turn in the tree (all but a few, for
  // all 50 rounds of every step) was a simulated computation whose end searched its
  // actor's activity list, which kept every receive a test had completed: at 256
  // ranks this wait was most of the start-up's CPU.
  (void)deadline, (void)what, (void)peer;
  for (int i = 0; i < count; ++i) checkMpi(MPI_Wait(&requests[i], MPI_STATUS_IGNORE), "MPI_Wait(clock sync)");
#else
  int done = 0;
  waitUntil(
      [&] {
        checkMpi(MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE), "MPI_Testall(clock sync)");
        return done != 0;
      },
      deadline, what, peer);
#endif
}

// The parent's side of one round: post the reply's receive first so the reply
// never waits in an unexpected-message queue.
void pingChild(const Communicator& comm, int child, Nanoseconds* sendValue, Nanoseconds* recvValue,
               const Deadline& deadline) {
  MPI_Request requests[2];
  checkMpi(MPI_Irecv(recvValue, 1, MPI_INT64_T, child, clockSyncTag, comm.handle(), &requests[1]),
           "MPI_Irecv(clock sync)");
  checkMpi(MPI_Isend(sendValue, 1, MPI_INT64_T, child, clockSyncTag, comm.handle(), &requests[0]),
           "MPI_Isend(clock sync)");
  waitFor(requests, 2, deadline, "the clock-sync reply of a child rank", child);
}

// The child's side: `rounds` replies, each with the time the ping arrived
// (taken right after it lands), then its composed offset from the parent.
ClockOffset answerParent(const Communicator& comm, int parent, int rounds, const Deadline& deadline) {
  for (int round = 0; round < rounds; ++round) {
    Nanoseconds ignored = 0;
    MPI_Request r;
    checkMpi(MPI_Irecv(&ignored, 1, MPI_INT64_T, parent, clockSyncTag, comm.handle(), &r), "MPI_Irecv(clock sync)");
    waitFor(&r, 1, deadline, "a clock-sync ping from the parent rank", parent);
    Nanoseconds now = monotonicNow();
    checkMpi(MPI_Isend(&now, 1, MPI_INT64_T, parent, clockSyncTag, comm.handle(), &r), "MPI_Isend(clock sync)");
    waitFor(&r, 1, deadline, "the clock-sync reply to the parent rank", parent);
  }
  Nanoseconds composed[2] = {0, 0};
  MPI_Request r;
  checkMpi(MPI_Irecv(composed, 2, MPI_INT64_T, parent, clockOffsetTag, comm.handle(), &r), "MPI_Irecv(clock offset)");
  waitFor(&r, 1, deadline, "this rank's clock offset from the parent rank", parent);
  return {composed[0], composed[1]};
}

}  // namespace

int clockTreeParent(int rank) {
  if (rank <= 0) return -1;
  return rank - static_cast<int>(std::bit_floor(static_cast<unsigned>(rank)));
}

std::vector<int> clockTreeChildren(int rank, int size) {
  std::vector<int> children;
  // Steps after the one that synchronised `rank` (rank 0: from step 0).
  long step = rank == 0 ? 1 : static_cast<long>(std::bit_floor(static_cast<unsigned>(rank))) * 2;
  for (; rank + step < size; step *= 2) children.push_back(rank + static_cast<int>(step));
  return children;
}

int clockTreeSteps(int size) {
  return size <= 1 ? 0 : static_cast<int>(std::bit_width(static_cast<unsigned>(size - 1)));
}

ClockOffset composeOffset(const ClockOffset& parent, Nanoseconds childMinusParent, Nanoseconds halfRoundTrip) {
  return {parent.offset + childMinusParent, parent.uncertainty + halfRoundTrip};
}

ClockSync ClockSync::measure(const Communicator& world, int rounds, const Deadline& deadline) {
  ClockSync sync;
  const int me = world.rank();
  if (me > 0) sync.mine_ = answerParent(world, clockTreeParent(me), rounds, deadline);
  for (int child : clockTreeChildren(me, world.size())) {
    Nanoseconds bestRtt = std::numeric_limits<Nanoseconds>::max();
    Nanoseconds bestOffset = 0;
    for (int round = 0; round < rounds; ++round) {
      Nanoseconds t0 = monotonicNow();
      Nanoseconds remote = 0;
      pingChild(world, child, &t0, &remote, deadline);
      const Nanoseconds t1 = monotonicNow();
      if (t1 - t0 < bestRtt) {
        bestRtt = t1 - t0;
        bestOffset = remote - (t0 + t1) / 2;
      }
    }
    const auto composed = composeOffset(sync.mine_, bestOffset, bestRtt / 2);
    Nanoseconds packed[2] = {composed.offset, composed.uncertainty};
    MPI_Request r;
    checkMpi(MPI_Isend(packed, 2, MPI_INT64_T, child, clockOffsetTag, world.handle(), &r), "MPI_Isend(clock offset)");
    waitFor(&r, 1, deadline, "the clock offset to a child rank", child);
  }
  return sync;
}

}  // namespace fabscope::runtime
