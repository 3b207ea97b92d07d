#include "runtime/ClockSync.hpp"

#include <limits>

namespace fabscope::runtime {
namespace {

constexpr int clockSyncTag = 0x7c10;

// Rank 0's side of one round: post the reply's receive first so the reply
// never waits in an unexpected-message queue.
void pingPeer(const Communicator& comm, int peer, Nanoseconds* sendValue, Nanoseconds* recvValue,
              const Deadline& deadline) {
  MPI_Request requests[2];
  checkMpi(MPI_Irecv(recvValue, 1, MPI_INT64_T, peer, clockSyncTag, comm.handle(), &requests[1]),
           "MPI_Irecv(clock sync)");
  checkMpi(MPI_Isend(sendValue, 1, MPI_INT64_T, peer, clockSyncTag, comm.handle(), &requests[0]),
           "MPI_Isend(clock sync)");
  int done = 0;
  waitUntil(
      [&] {
        checkMpi(MPI_Testall(2, requests, &done, MPI_STATUSES_IGNORE), "MPI_Testall(clock sync)");
        return done != 0;
      },
      deadline, "the clock-sync reply of a peer rank");
}

}  // namespace

ClockSync ClockSync::measure(const Communicator& world, int rounds, const Deadline& deadline) {
  ClockSync sync;
  const int size = world.size();
  std::vector<Nanoseconds> packed(2 * static_cast<std::size_t>(size), 0);
  if (world.rank() == 0) {
    for (int peer = 1; peer < size; ++peer) {
      Nanoseconds bestRtt = std::numeric_limits<Nanoseconds>::max();
      Nanoseconds bestOffset = 0;
      for (int round = 0; round < rounds; ++round) {
        Nanoseconds t0 = monotonicNow();
        Nanoseconds remote = 0;
        pingPeer(world, peer, &t0, &remote, deadline);
        const Nanoseconds t1 = monotonicNow();
        if (t1 - t0 < bestRtt) {
          bestRtt = t1 - t0;
          bestOffset = remote - (t0 + t1) / 2;
        }
      }
      packed[2 * static_cast<std::size_t>(peer)] = bestOffset;
      packed[2 * static_cast<std::size_t>(peer) + 1] = bestRtt / 2;
    }
  } else {
    for (int round = 0; round < rounds; ++round) {
      Nanoseconds ignored = 0;
      Nanoseconds now = 0;
      // Reply with the time the ping arrived: taken right after it lands.
      MPI_Request r;
      checkMpi(MPI_Irecv(&ignored, 1, MPI_INT64_T, 0, clockSyncTag, world.handle(), &r),
               "MPI_Irecv(clock sync)");
      int done = 0;
      waitUntil(
          [&] {
            checkMpi(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test(clock sync)");
            return done != 0;
          },
          deadline, "a clock-sync ping from rank 0");
      now = monotonicNow();
      checkMpi(MPI_Isend(&now, 1, MPI_INT64_T, 0, clockSyncTag, world.handle(), &r),
               "MPI_Isend(clock sync)");
      waitUntil(
          [&] {
            checkMpi(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test(clock sync)");
            return done != 0;
          },
          deadline, "the clock-sync reply to rank 0");
    }
  }
  world.broadcast(packed.data(), static_cast<int>(packed.size() * sizeof(Nanoseconds)), 0,
                  deadline);
  for (int r = 0; r < size; ++r)
    sync.all_.push_back({packed[2 * static_cast<std::size_t>(r)],
                         packed[2 * static_cast<std::size_t>(r) + 1]});
  sync.mine_ = sync.all_[static_cast<std::size_t>(world.rank())];
  return sync;
}

}  // namespace fabscope::runtime
