#include "kinds/kvpush/KvPushMemory.hpp"

#include "host/KvGatherScatterHost.hpp"
#include "runtime/Clock.hpp"

namespace fabscope::suite::kvpush {

KvMemory::KvMemory(KvMemoryMode mode, const kernels::KvCopyGeometry& geometry, std::uint64_t maxBlocks,
                   std::uint64_t stagingBytes, std::uint64_t stagingSlots, BufferArena& arena, bool pinnedHost)
    : mode_(mode), geometry_(geometry), stagingBytes_(stagingBytes), stagingSlots_(stagingBytes ? stagingSlots : 0) {
  const std::size_t stagingArea = stagingBytes_ * stagingSlots_;
  switch (mode_) {
    case KvMemoryMode::hostPool:
      if (pinnedHost) {  // memory: cuda-host
        pinnedPool_ = std::make_unique<PinnedStaging>(geometry_.poolBytes());
        pinned_ = std::make_unique<PinnedStaging>(stagingArea);
        hostPool_ = pinnedPool_->data();
        hostStaging_ = pinned_->data();
      } else {
        hostPool_ = arena.allocate(geometry_.poolBytes());
        hostStaging_ = arena.allocate(stagingArea);
      }
      break;
    case KvMemoryMode::gpuViaHost:
      gpu_ = std::make_unique<GpuKvPool>(geometry_, maxBlocks, stagingBytes_, 1, gpuTimeout);
      pinned_ = std::make_unique<PinnedStaging>(stagingArea);
      hostStaging_ = pinned_->data();
      break;
    case KvMemoryMode::gpuDirect:
      gpu_ = std::make_unique<GpuKvPool>(geometry_, maxBlocks, stagingBytes_, stagingSlots_, gpuTimeout);
      break;
  }
}

std::byte* KvMemory::pool() const {
  switch (mode_) {
    case KvMemoryMode::hostPool:
      return hostPool_;
    case KvMemoryMode::gpuViaHost:
      return nullptr;
    case KvMemoryMode::gpuDirect:
      return gpu_->poolData();
  }
  return nullptr;
}

std::byte* KvMemory::staging(std::uint64_t slot) const {
  if (mode_ == KvMemoryMode::gpuDirect) return stagingSlots_ ? gpu_->stagingSlot(slot) : nullptr;
  return hostStaging_ + slot * stagingBytes_;
}

transport::MemoryKind KvMemory::transportMemory() const {
  switch (mode_) {
    case KvMemoryMode::hostPool:
      return pinnedPool_ ? transport::MemoryKind::cudaHost : transport::MemoryKind::host;
    case KvMemoryMode::gpuViaHost:
      return transport::MemoryKind::cudaHost;
    case KvMemoryMode::gpuDirect:
      return transport::MemoryKind::cuda;
  }
  return transport::MemoryKind::host;
}

void KvMemory::fill(std::span<const std::uint32_t> blockIds, std::uint64_t requestId, std::int64_t corruptAt) {
  if (gpu_) {
    gpu_->fill(blockIds, requestId, corruptAt);
    return;
  }
  kernels::fillKvBlocksHost(hostPool_, geometry_, blockIds, requestId, geometry_.allLayers());
  if (corruptAt >= 0) hostPool_[corruptAt] ^= std::byte{0x5A};
}

GpuStageTimes KvMemory::gather(std::span<const std::uint32_t> blockIds, std::uint64_t slot) {
  switch (mode_) {
    case KvMemoryMode::hostPool: {
      const auto t0 = runtime::monotonicNow();
      kernels::gatherKvBlocksHost(hostPool_, staging(slot), geometry_, blockIds, geometry_.allLayers());
      return {runtime::monotonicNow() - t0, 0};
    }
    case KvMemoryMode::gpuViaHost:
      return gpu_->gatherToHost(blockIds, staging(slot));
    case KvMemoryMode::gpuDirect:
      return {gpu_->gatherToSlot(blockIds, slot), 0};
  }
  return {};
}

GpuStageTimes KvMemory::scatter(std::uint64_t slot, std::span<const std::uint32_t> blockIds) {
  switch (mode_) {
    case KvMemoryMode::hostPool: {
      const auto t0 = runtime::monotonicNow();
      kernels::scatterKvBlocksHost(staging(slot), hostPool_, geometry_, blockIds, geometry_.allLayers());
      return {runtime::monotonicNow() - t0, 0};
    }
    case KvMemoryMode::gpuViaHost:
      return gpu_->scatterFromHost(staging(slot), blockIds);
    case KvMemoryMode::gpuDirect:
      return {gpu_->scatterFromSlot(slot, blockIds), 0};
  }
  return {};
}

kernels::KvMismatch KvMemory::verify(std::span<const std::uint32_t> blockIds, std::uint64_t requestId) {
  if (gpu_) return gpu_->verify(blockIds, requestId);
  return kernels::verifyKvBlocksHost(hostPool_, geometry_, blockIds, requestId, geometry_.allLayers());
}

}  // namespace fabscope::suite::kvpush
