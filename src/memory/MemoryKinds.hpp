#pragma once
// One registry of memory kinds (perftest's memory_ctx, UCX perftest's allocator
// per memory type): each kind says once how it is spelled in a scenario,
// whether this build can use it, how to allocate it, whether host code may
// touch it, and how bytes move between it and the host. Everything that
// allocates, fills, checks or zeroes test buffers goes through this table, so a
// new memory kind (e.g. ROCm device memory) is one entry here, one enum value
// in transport/Transport.hpp and its copy functions.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "transport/Transport.hpp"

namespace fabscope::memory {

using transport::MemoryKind;

struct MemoryKindOps {
  MemoryKind kind;
  const char* name;         // the scenario's spelling: "host", "cuda", "cuda-host"
  const char* unavailable;  // "" when this build can use it, else why not ("built without CUDA")
  bool hostAddressable;     // host code may read and write it directly (pageable or pinned host memory)
  // Zero-filled memory of at least one byte; throws when the kind is unavailable.
  std::shared_ptr<std::byte> (*allocate)(std::size_t bytes);
  // Copies between this kind and host memory (for host-addressable kinds a memcpy).
  void (*toHost)(std::byte* host, const std::byte* data, std::size_t bytes);
  void (*fromHost)(std::byte* data, const std::byte* host, std::size_t bytes);
  void (*zero)(std::byte* data, std::size_t bytes);
};

// Every kind, available in this build or not, in the order the docs list them.
const std::vector<MemoryKindOps>& memoryKinds();
const MemoryKindOps& memoryKindOps(MemoryKind kind);
// UsageError naming the known kinds for an unknown name.
const MemoryKindOps& memoryKindOps(const std::string& name);

}  // namespace fabscope::memory
