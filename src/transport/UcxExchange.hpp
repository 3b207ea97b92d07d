#pragma once
// Control-plane exchange of opaque per-rank blobs (UCX worker addresses and
// packed remote keys, verbs queue-pair descriptions): every rank's bytes on
// every rank, built from the Communicator's deadline-bounded gather and
// broadcast. Used by the UCX and verbs backends at setup, never in timed loops.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/Mpi.hpp"

namespace fabscope::transport {

inline std::vector<std::vector<std::byte>> allgatherBlobs(const runtime::Communicator& world,
                                                          std::span<const std::byte> mine,
                                                          const runtime::Deadline& deadline) {
  std::vector<int> counts;
  std::vector<std::byte> joined = world.gatherBytes(mine, 0, counts, deadline);
  const int ranks = world.size();
  counts.resize(static_cast<std::size_t>(ranks));
  world.broadcast(counts.data(), static_cast<int>(counts.size() * sizeof(int)), 0, deadline);
  std::int64_t total = 0;
  for (int c : counts) total += c;
  joined.resize(static_cast<std::size_t>(total));
  if (total > 0) world.broadcast(joined.data(), static_cast<int>(total), 0, deadline);
  std::vector<std::vector<std::byte>> out(static_cast<std::size_t>(ranks));
  std::size_t at = 0;
  for (int r = 0; r < ranks; ++r) {
    const auto n = static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]);
    out[static_cast<std::size_t>(r)].assign(joined.begin() + static_cast<std::ptrdiff_t>(at),
                                            joined.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
  }
  return out;
}

}  // namespace fabscope::transport
