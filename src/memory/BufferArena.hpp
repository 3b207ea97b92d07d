#pragma once
// Buffers of the running test instance, in the memory the scenario asked for
// (memory: host, cuda, cuda-host; UCX perftest's allocator-per-memory-type
// split). The runner releases them after an instance that ended cleanly and
// keeps them after a missed deadline: transfers that could not be cancelled
// may still read or write them (MPI's single-copy path faulted on freed send
// buffers otherwise).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/Transport.hpp"

namespace fabscope::suite {

using transport::MemoryKind;

// "host" | "cuda" | "cuda-host" (the scenario's spelling).
MemoryKind memoryKindOf(const std::string& name);

class BufferArena {
 public:
  // Host memory is page-aligned and touched once, so the first timed
  // iteration pays no page faults. Device memory lives on the current GPU.
  std::byte* allocate(std::size_t bytes, MemoryKind kind = MemoryKind::host);
  void release() { buffers_.clear(); }
  // Keeps everything until the arena dies (the end of the run).
  void abandon() {
    for (auto& b : buffers_) abandoned_.push_back(std::move(b));
    buffers_.clear();
  }

 private:
  std::vector<std::shared_ptr<std::byte>> buffers_;
  std::vector<std::shared_ptr<std::byte>> abandoned_;
};

// Setup and checking outside timed loops, for any memory kind (device memory
// goes through a host copy).
void fillPattern(std::byte* data, std::size_t bytes, std::uint64_t seed, MemoryKind kind);
// Index of the first wrong byte, or `bytes` when all are right.
std::size_t verifyPattern(const std::byte* data, std::size_t bytes, std::uint64_t seed, MemoryKind kind);
void zeroBuffer(std::byte* data, std::size_t bytes, MemoryKind kind);
// Flips the middle byte (the data checks' self-test, test key corrupt_for_test).
void corruptOneByte(std::byte* data, std::size_t bytes, MemoryKind kind);

}  // namespace fabscope::suite
