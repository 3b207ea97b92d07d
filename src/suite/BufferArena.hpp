#pragma once
// Host buffers of the running test instance. The runner releases them after
// an instance that ended cleanly and keeps them after a missed deadline:
// transfers that could not be cancelled may still read or write them (MPI's
// single-copy path faulted on freed send buffers otherwise).
#include <vector>

#include "transport/HostBuffer.hpp"

namespace fabscope::suite {

class BufferArena {
 public:
  std::byte* allocate(std::size_t bytes) {
    buffers_.emplace_back(bytes);
    return buffers_.back().data();
  }
  void release() { buffers_.clear(); }
  // Keeps everything until the arena dies (the end of the run).
  void abandon() {
    for (auto& b : buffers_) abandoned_.push_back(std::move(b));
    buffers_.clear();
  }

 private:
  std::vector<transport::HostBuffer> buffers_;
  std::vector<transport::HostBuffer> abandoned_;
};

}  // namespace fabscope::suite
