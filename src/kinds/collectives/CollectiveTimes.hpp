#pragma once
// A collective's per-iteration times on the global clock, from every rank's
// own (arrival, exit) stamps gathered to one rank: duration = last exit -
// first arrival (the collective is as slow as its slowest member), arrival
// spread = last arrival - first arrival, and which rank arrived last.
// Shared by the all-reduce and the all-to-all (each of its phases).
#include <cstdint>
#include <vector>

#include "runtime/Mpi.hpp"

namespace fabscope::suite {

struct CollectiveTimes {
  std::vector<double> duration;  // ns, per iteration
  std::vector<double> lateness;  // ns, per iteration
  std::vector<int> lastCount;    // per group rank: iterations it arrived last
  int straggler = 0;             // group rank that arrived last most often
  double stragglerFraction = 0;  // of the iterations
};

// stamps[r]: rank r's stamps, `width` per iteration; `in` and `out` pick the
// columns of the phase's arrival and exit.
CollectiveTimes collectiveTimes(const std::vector<std::vector<std::int64_t>>& stamps, std::size_t iterations,
                                std::size_t width, std::size_t in, std::size_t out);

// The second timing convention (nccl-tests' default): `calls` collectives
// launched back to back, one clock read before the first launch and one after
// the last completion on this rank's monotonic clock, nothing in between.
// The per-call figure above is what one decode step waits for; this one is
// the throughput of a busy pipeline, what published NCCL figures quote.
struct PipelinedBatch {
  int calls = 0;
  std::int64_t start_ns = 0, end_ns = 0;  // monotonic clock of this rank
};

// Per call of the batch on the global clock: (last end - first start over the
// group) / calls. Collective over `group`; the same value on every rank.
// `toGlobal` maps this rank's monotonic stamps to the global clock.
template <typename ToGlobal>
double pipelinedPerCallNs(const runtime::Communicator& group, const PipelinedBatch& batch, ToGlobal toGlobal,
                          const runtime::Deadline& deadline) {
  const auto first = group.allreduceMin(toGlobal(batch.start_ns), deadline);
  const auto last = group.allreduceMax(toGlobal(batch.end_ns), deadline);
  return batch.calls > 0 ? static_cast<double>(last - first) / batch.calls : 0.0;
}

// Every rank's stamps (global clock) on group rank 0; empty on the others.
std::vector<std::vector<std::int64_t>> gatherStamps(const runtime::Communicator& group,
                                                    const std::vector<std::int64_t>& mine,
                                                    const runtime::Deadline& deadline);

}  // namespace fabscope::suite
