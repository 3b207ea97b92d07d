#include "memory/BufferArena.hpp"

#include <vector>

#include "host/PatternFill.hpp"
#include "memory/MemoryKinds.hpp"

namespace fabscope::suite {

using memory::memoryKindOps;

MemoryKind memoryKindOf(const std::string& name) { return memoryKindOps(name).kind; }

std::byte* BufferArena::allocate(std::size_t bytes, MemoryKind kind) {
  buffers_.push_back(memoryKindOps(kind).allocate(bytes));
  return buffers_.back().get();
}

// Memory host code cannot touch goes through a host copy (setup and checks
// only, never inside a timed loop).
void fillPattern(std::byte* data, std::size_t bytes, std::uint64_t seed, MemoryKind kind) {
  const auto& ops = memoryKindOps(kind);
  if (ops.hostAddressable) return kernels::fillPatternHost(data, bytes, seed);
  std::vector<std::byte> host(bytes);
  kernels::fillPatternHost(host.data(), bytes, seed);
  ops.fromHost(data, host.data(), bytes);
}

std::size_t verifyPattern(const std::byte* data, std::size_t bytes, std::uint64_t seed, MemoryKind kind) {
  const auto& ops = memoryKindOps(kind);
  if (ops.hostAddressable) return kernels::verifyPatternHost(data, bytes, seed);
  std::vector<std::byte> host(bytes);
  ops.toHost(host.data(), data, bytes);
  return kernels::verifyPatternHost(host.data(), bytes, seed);
}

void corruptOneByte(std::byte* data, std::size_t bytes, MemoryKind kind) {
  if (bytes == 0) return;
  const auto& ops = memoryKindOps(kind);
  std::byte value{};
  ops.toHost(&value, data + bytes / 2, 1);
  value ^= std::byte{0x5A};
  ops.fromHost(data + bytes / 2, &value, 1);
}

void zeroBuffer(std::byte* data, std::size_t bytes, MemoryKind kind) { memoryKindOps(kind).zero(data, bytes); }

}  // namespace fabscope::suite
