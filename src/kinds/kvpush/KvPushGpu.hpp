#pragma once
// The GPU side of kvpush (memory: cuda): the KV pool lives in device memory;
// a request is filled, gathered, scattered and verified by the kernels in
// kernels/cuda. Over a transport that cannot address device memory it
// crosses through pinned host staging buffers (staged strategy only), with
// the host<->device copy time measured apart from the kernels and from the
// network. Over one that can (NCCL), every strategy sends straight from and
// into device memory: the pool's blocks, or a device staging slot.
//
// Declared in every build; defined only when FABSCOPE_HAVE_CUDA (callers
// check the memory kind, which the scenario loader allows only then).
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>

#include "host/KvCopyGeometry.hpp"
#include "host/KvFillVerifyHost.hpp"

namespace fabscope::suite::kvpush {

struct GpuStageTimes {
  std::int64_t kernelNs = 0;  // gather (prefill) or scatter (decode) on the GPU
  std::int64_t copyNs = 0;    // device -> pinned host (prefill) or back (decode)
};

// Pinned host memory for the network side of the staging (RAII; CUDA builds).
class PinnedStaging {
 public:
  explicit PinnedStaging(std::size_t bytes);
  ~PinnedStaging();
  PinnedStaging(PinnedStaging&&) noexcept;
  PinnedStaging& operator=(PinnedStaging&&) noexcept;
  std::byte* data() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class GpuKvPool {
 public:
  // Allocates the device pool, `stagingSlots` device staging buffers of
  // stagingBytes each and room for `maxBlocks` block ids, on the current device.
  GpuKvPool(const kernels::KvCopyGeometry& geometry, std::uint64_t maxBlocks, std::uint64_t stagingBytes,
            std::uint64_t stagingSlots, std::chrono::nanoseconds timeout);
  ~GpuKvPool();
  GpuKvPool(const GpuKvPool&) = delete;
  GpuKvPool& operator=(const GpuKvPool&) = delete;

  // The request's pattern into its blocks (and, for the checker's self-test,
  // one flipped byte at pool offset `corruptAt` unless it is -1).
  void fill(std::span<const std::uint32_t> blockIds, std::uint64_t requestId, std::int64_t corruptAt);
  // Gathers the blocks into device staging, then copies it to `pinned`.
  GpuStageTimes gatherToHost(std::span<const std::uint32_t> blockIds, void* pinned);
  // Copies `pinned` to device staging, then scatters it into the blocks.
  GpuStageTimes scatterFromHost(const void* pinned, std::span<const std::uint32_t> blockIds);
  kernels::KvMismatch verify(std::span<const std::uint32_t> blockIds, std::uint64_t requestId);

  // Device-direct paths: what a device-capable transport sends from and
  // receives into. The kernels finish before these return (the transport's
  // own stream then reads or writes the memory).
  std::byte* poolData() const;
  std::byte* stagingSlot(std::uint64_t slot) const;
  // Gather into / scatter out of staging slot `slot`; returns the kernel time.
  std::int64_t gatherToSlot(std::span<const std::uint32_t> blockIds, std::uint64_t slot);
  std::int64_t scatterFromSlot(std::uint64_t slot, std::span<const std::uint32_t> blockIds);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fabscope::suite::kvpush
