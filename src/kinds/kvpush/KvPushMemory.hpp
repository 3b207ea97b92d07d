#pragma once
// Where one kvpush rank keeps its KV: the block pool and one staging slot per
// lane (staged strategy), in the memory the transport will address, with the
// operations the workers need on them (fill, gather, scatter, verify). Three
// arrangements, chosen once per instance:
//   host pool      memory: host (pageable) or cuda-host (pinned); host code
//   GPU via host   memory: cuda over a transport that cannot address device
//                  memory: device pool, pinned host staging, copies timed
//   GPU direct     memory: cuda over one that can (NCCL): device pool and
//                  device staging; the transport reads and writes them
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>

#include "host/KvCopyGeometry.hpp"
#include "host/KvFillVerifyHost.hpp"
#include "kinds/kvpush/KvPushGpu.hpp"
#include "memory/BufferArena.hpp"
#include "transport/Transport.hpp"

namespace fabscope::suite::kvpush {

enum class KvMemoryMode { hostPool, gpuViaHost, gpuDirect };

class KvMemory {
 public:
  // Pageable host memory comes from `arena` (kept by the runner after a
  // missed deadline); pinned (`pinnedHost`: memory cuda-host) and device
  // memory are owned here. `stagingSlots` x `stagingBytes` of staging (0 for
  // strategies without staging).
  KvMemory(KvMemoryMode mode, const kernels::KvCopyGeometry& geometry, std::uint64_t maxBlocks,
           std::uint64_t stagingBytes, std::uint64_t stagingSlots, BufferArena& arena, bool pinnedHost);

  KvMemoryMode mode() const { return mode_; }
  // The pool as the transport addresses it (per-block messages): host, or
  // device memory in gpuDirect mode. Null in gpuViaHost mode.
  std::byte* pool() const;
  std::size_t poolBytes() const { return geometry_.poolBytes(); }
  // Staging slot `slot` as the transport addresses it.
  std::byte* staging(std::uint64_t slot) const;
  std::byte* stagingArea() const { return staging(0); }
  std::size_t stagingAreaBytes() const { return stagingBytes_ * stagingSlots_; }
  std::uint64_t stagingSlotBytes() const { return stagingBytes_; }
  // The memory kind of pool() and staging() for exposeRegion.
  transport::MemoryKind transportMemory() const;

  // The request's pattern into its blocks; flips one byte at pool offset
  // `corruptAt` unless it is -1 (the checker's self-test).
  void fill(std::span<const std::uint32_t> blockIds, std::uint64_t requestId, std::int64_t corruptAt);
  // Gathers the blocks into staging slot `slot` / scatters them back; the
  // kernel (or host loop) time and, in gpuViaHost mode, the copy time.
  GpuStageTimes gather(std::span<const std::uint32_t> blockIds, std::uint64_t slot);
  GpuStageTimes scatter(std::uint64_t slot, std::span<const std::uint32_t> blockIds);
  kernels::KvMismatch verify(std::span<const std::uint32_t> blockIds, std::uint64_t requestId);

 private:
  KvMemoryMode mode_;
  kernels::KvCopyGeometry geometry_;
  std::uint64_t stagingBytes_;
  std::uint64_t stagingSlots_;
  std::byte* hostPool_ = nullptr;     // hostPool mode
  std::byte* hostStaging_ = nullptr;  // hostPool mode (arena) or gpuViaHost (pinned_)
  std::unique_ptr<PinnedStaging> pinnedPool_;
  std::unique_ptr<PinnedStaging> pinned_;
  std::unique_ptr<GpuKvPool> gpu_;
};

// A GPU copy or kernel that takes this long is hung, not slow.
inline constexpr std::chrono::nanoseconds gpuTimeout = std::chrono::seconds(30);

}  // namespace fabscope::suite::kvpush
