// The worker of quickcheck's intra-node loop: two ranks of this binary started
// by `fabscope quickcheck` under mpirun, measuring through the same transport
// code the tests use (transport/TransportFactory). Rank 0 prints one line:
// "quickcheck-loop: latency_us=X bandwidth_GBps=Y".
#include <algorithm>
#include <cstdio>
#include <vector>

#include "quickcheck/Quickcheck.hpp"
#include "runtime/Clock.hpp"
#include "runtime/Deadline.hpp"
#include "runtime/Errors.hpp"
#include "runtime/Mpi.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::quickcheck {

namespace {

constexpr int latencyTag = 21;
constexpr int bandwidthTag = 22;
constexpr int ackTag = 23;
constexpr int warmupRounds = 100;

runtime::Nanoseconds median(std::vector<runtime::Nanoseconds>& values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

}  // namespace

int runQuickcheckLoopWorker(const LoopSettings& s, double seconds, int& argc, char**& argv) {
  runtime::MpiEnvironment mpi(argc, argv);
  const auto world = runtime::Communicator::world();
  const int rank = world.rank();
  if (world.size() != 2) {
    if (rank == 0) std::printf("quickcheck-loop: error: needs exactly 2 ranks, got %d\n", world.size());
    return exit_code::usage;
  }
  const int peer = 1 - rank;
  try {
    const auto deadline = runtime::Deadline::afterSeconds(seconds);
    auto t = transport::openTransport(s.transport, world, rank, {}, deadline);
    t->reserve(s.bandwidthWindow + 1);
    std::vector<std::byte> small(2 * 8);
    std::vector<std::byte> large(static_cast<std::size_t>(s.bandwidthBytes) * s.bandwidthWindow);
    std::vector<runtime::Nanoseconds> roundTrips(static_cast<std::size_t>(s.latencyIterations));
    std::vector<runtime::Nanoseconds> roundTimes(static_cast<std::size_t>(s.bandwidthRounds));
    std::fill(large.begin(), large.end(), std::byte{0x5a});
    world.barrier(deadline);

    // 8-byte ping-pong: rank 0 sends, rank 1 answers; half the round trip is one way.
    for (int i = -warmupRounds; i < s.latencyIterations; ++i) {
      const auto start = runtime::monotonicNow();
      if (rank == 0) {
        t->postRecv(1, peer, latencyTag, small.data() + 8, 8);
        t->postSend(0, peer, latencyTag, small.data(), 8);
        t->waitSlots(0, 2, deadline);
      } else {
        t->postRecv(1, peer, latencyTag, small.data() + 8, 8);
        t->waitSlots(1, 1, deadline);
        t->postSend(0, peer, latencyTag, small.data(), 8);
        t->waitSlots(0, 1, deadline);
      }
      if (i >= 0) roundTrips[static_cast<std::size_t>(i)] = runtime::monotonicNow() - start;
    }
    world.barrier(deadline);

    // Windows of large messages from rank 0 to rank 1, each closed by a 1-byte ack.
    const auto bytes = static_cast<std::size_t>(s.bandwidthBytes);
    for (int round = -1; round < s.bandwidthRounds; ++round) {
      const auto start = runtime::monotonicNow();
      if (rank == 0) {
        for (int w = 0; w < s.bandwidthWindow; ++w) t->postSend(w, peer, bandwidthTag, large.data() + w * bytes, bytes);
        t->postRecv(s.bandwidthWindow, peer, ackTag, small.data(), 1);
        t->waitSlots(0, s.bandwidthWindow + 1, deadline);
      } else {
        for (int w = 0; w < s.bandwidthWindow; ++w) t->postRecv(w, peer, bandwidthTag, large.data() + w * bytes, bytes);
        t->waitSlots(0, s.bandwidthWindow, deadline);
        t->postSend(s.bandwidthWindow, peer, ackTag, small.data(), 1);
        t->waitSlots(s.bandwidthWindow, 1, deadline);
      }
      if (round >= 0) roundTimes[static_cast<std::size_t>(round)] = runtime::monotonicNow() - start;
    }
    world.barrier(deadline);
    t.reset();
    if (rank == 0) {
      const double oneWayUs = double(median(roundTrips)) / 2 / 1e3;
      // bytes per nanosecond = GB/s (10^9 bytes per second)
      const double gbps =
          double(bytes) * s.bandwidthWindow / double(std::max<runtime::Nanoseconds>(median(roundTimes), 1));
      std::printf("quickcheck-loop: latency_us=%.3f bandwidth_GBps=%.3f\n", oneWayUs, gbps);
      std::fflush(stdout);
    }
    return exit_code::ok;
  } catch (const std::exception& e) {
    std::printf("quickcheck-loop: error on rank %d: %s\n", rank, e.what());
    std::fflush(stdout);
    return exit_code::runtimeFailure;
  }
}

}  // namespace fabscope::quickcheck
