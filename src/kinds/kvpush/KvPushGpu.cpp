#include "kinds/kvpush/KvPushGpu.hpp"

#include "fabscope/BuildConfig.hpp"

#if FABSCOPE_HAVE_CUDA
#include <algorithm>
#include <string>

#include "cuda/CudaApi.hpp"
#include "cuda/KvKernelsCuda.hpp"
#include "runtime/Clock.hpp"
#include "runtime/Errors.hpp"

namespace fabscope::suite::kvpush {

namespace cu = kernels::cuda;

struct PinnedStaging::Impl {
  cu::PinnedHostBuffer buffer;
};

PinnedStaging::PinnedStaging(std::size_t bytes) : impl_(std::make_unique<Impl>(Impl{cu::PinnedHostBuffer(bytes)})) {}
PinnedStaging::~PinnedStaging() = default;
PinnedStaging::PinnedStaging(PinnedStaging&&) noexcept = default;
PinnedStaging& PinnedStaging::operator=(PinnedStaging&&) noexcept = default;
std::byte* PinnedStaging::data() const { return static_cast<std::byte*>(impl_->buffer.data()); }

struct GpuKvPool::Impl {
  kernels::KvCopyGeometry geometry;
  std::chrono::nanoseconds timeout;
  cu::Stream stream;
  cu::DeviceBuffer pool;
  cu::DeviceBuffer staging;
  std::uint64_t stagingBytes;  // of one slot
  std::uint64_t stagingSlots;
  cu::DeviceBlockList blocks;
  cu::KvVerifier verifier;
  cu::Event begin, kernelDone, copyDone;

  Impl(const kernels::KvCopyGeometry& g, std::uint64_t maxBlocks, std::uint64_t stagingSize, std::uint64_t slots,
       std::chrono::nanoseconds t)
      : geometry(g),
        timeout(t),
        pool(g.poolBytes()),
        staging(std::max<std::uint64_t>(stagingSize * slots, 1)),
        stagingBytes(stagingSize),
        stagingSlots(slots),
        blocks(maxBlocks) {}

  std::int64_t elapsedNs(const cu::Event& a, const cu::Event& b) const {
    return static_cast<std::int64_t>(static_cast<double>(cu::Event::elapsedMs(a, b)) * 1e6);
  }
};

GpuKvPool::GpuKvPool(const kernels::KvCopyGeometry& geometry, std::uint64_t maxBlocks, std::uint64_t stagingBytes,
                     std::uint64_t stagingSlots, std::chrono::nanoseconds timeout)
    : impl_(std::make_unique<Impl>(geometry, maxBlocks, stagingBytes, std::max<std::uint64_t>(stagingSlots, 1),
                                   timeout)) {
  cu::memsetAsync(impl_->pool.data(), 0, impl_->pool.size(), impl_->stream);
  impl_->stream.synchronize(timeout);
}

GpuKvPool::~GpuKvPool() = default;

void GpuKvPool::fill(std::span<const std::uint32_t> blockIds, std::uint64_t requestId, std::int64_t corruptAt) {
  auto& m = *impl_;
  m.blocks.upload(blockIds, m.geometry, m.stream);
  cu::fillKvBlocks(m.pool.data(), m.geometry, m.blocks, requestId, m.geometry.allLayers(), m.stream);
  if (corruptAt >= 0) {
    // A byte that differs from any pattern byte in one position: xor via a
    // read-modify-write on the host (setup path, not timed).
    m.stream.synchronize(m.timeout);
    std::byte b{};
    auto* at = static_cast<std::byte*>(m.pool.data()) + corruptAt;
    cu::copy(&b, at, 1);
    b ^= std::byte{0x5A};
    cu::copy(at, &b, 1);
  }
  m.stream.synchronize(m.timeout);
}

GpuStageTimes GpuKvPool::gatherToHost(std::span<const std::uint32_t> blockIds, void* pinned) {
  auto& m = *impl_;
  m.blocks.upload(blockIds, m.geometry, m.stream);
  m.begin.record(m.stream);
  cu::gatherKvBlocks(m.pool.data(), m.staging.data(), m.geometry, m.blocks, m.geometry.allLayers(), m.stream);
  m.kernelDone.record(m.stream);
  cu::copyAsync(pinned, m.staging.data(), m.stagingBytes, m.stream);
  m.copyDone.record(m.stream);
  m.stream.synchronize(m.timeout);
  return {m.elapsedNs(m.begin, m.kernelDone), m.elapsedNs(m.kernelDone, m.copyDone)};
}

GpuStageTimes GpuKvPool::scatterFromHost(const void* pinned, std::span<const std::uint32_t> blockIds) {
  auto& m = *impl_;
  m.blocks.upload(blockIds, m.geometry, m.stream);
  m.begin.record(m.stream);
  cu::copyAsync(m.staging.data(), pinned, m.stagingBytes, m.stream);
  m.copyDone.record(m.stream);
  cu::scatterKvBlocks(m.staging.data(), m.pool.data(), m.geometry, m.blocks, m.geometry.allLayers(), m.stream);
  m.kernelDone.record(m.stream);
  m.stream.synchronize(m.timeout);
  return {m.elapsedNs(m.copyDone, m.kernelDone), m.elapsedNs(m.begin, m.copyDone)};
}

kernels::KvMismatch GpuKvPool::verify(std::span<const std::uint32_t> blockIds, std::uint64_t requestId) {
  auto& m = *impl_;
  m.blocks.upload(blockIds, m.geometry, m.stream);
  m.verifier.enqueue(m.pool.data(), m.geometry, m.blocks, requestId, m.geometry.allLayers(), m.stream);
  return m.verifier.wait(m.stream, m.timeout);
}

std::byte* GpuKvPool::poolData() const { return static_cast<std::byte*>(impl_->pool.data()); }

std::byte* GpuKvPool::stagingSlot(std::uint64_t slot) const {
  if (slot >= impl_->stagingSlots)
    throw UsageError("kvpush: device staging slot " + std::to_string(slot) + " of " +
                     std::to_string(impl_->stagingSlots));
  return static_cast<std::byte*>(impl_->staging.data()) + slot * impl_->stagingBytes;
}

std::int64_t GpuKvPool::gatherToSlot(std::span<const std::uint32_t> blockIds, std::uint64_t slot) {
  auto& m = *impl_;
  std::byte* to = stagingSlot(slot);
  m.blocks.upload(blockIds, m.geometry, m.stream);
  m.begin.record(m.stream);
  cu::gatherKvBlocks(m.pool.data(), to, m.geometry, m.blocks, m.geometry.allLayers(), m.stream);
  m.kernelDone.record(m.stream);
  m.stream.synchronize(m.timeout);
  return m.elapsedNs(m.begin, m.kernelDone);
}

std::int64_t GpuKvPool::scatterFromSlot(std::uint64_t slot, std::span<const std::uint32_t> blockIds) {
  auto& m = *impl_;
  const std::byte* from = stagingSlot(slot);
  m.blocks.upload(blockIds, m.geometry, m.stream);
  m.begin.record(m.stream);
  cu::scatterKvBlocks(from, m.pool.data(), m.geometry, m.blocks, m.geometry.allLayers(), m.stream);
  m.kernelDone.record(m.stream);
  m.stream.synchronize(m.timeout);
  return m.elapsedNs(m.begin, m.kernelDone);
}

}  // namespace fabscope::suite::kvpush
#endif

#if !FABSCOPE_HAVE_CUDA
// Without CUDA the loader refuses `memory: cuda` and `cuda-host`, so these are
// never reached; they exist so callers need no #if.
#include "runtime/Errors.hpp"

namespace fabscope::suite::kvpush {

namespace {
[[noreturn]] void noCuda() { throw UsageError("kvpush: this build has no CUDA (memory: cuda / cuda-host)"); }
}  // namespace

struct PinnedStaging::Impl {};
PinnedStaging::PinnedStaging(std::size_t) { noCuda(); }
PinnedStaging::~PinnedStaging() = default;
PinnedStaging::PinnedStaging(PinnedStaging&&) noexcept = default;
PinnedStaging& PinnedStaging::operator=(PinnedStaging&&) noexcept = default;
std::byte* PinnedStaging::data() const { noCuda(); }

struct GpuKvPool::Impl {};
GpuKvPool::GpuKvPool(const kernels::KvCopyGeometry&, std::uint64_t, std::uint64_t, std::uint64_t,
                     std::chrono::nanoseconds) {
  noCuda();
}
GpuKvPool::~GpuKvPool() = default;
void GpuKvPool::fill(std::span<const std::uint32_t>, std::uint64_t, std::int64_t) { noCuda(); }
GpuStageTimes GpuKvPool::gatherToHost(std::span<const std::uint32_t>, void*) { noCuda(); }
GpuStageTimes GpuKvPool::scatterFromHost(const void*, std::span<const std::uint32_t>) { noCuda(); }
kernels::KvMismatch GpuKvPool::verify(std::span<const std::uint32_t>, std::uint64_t) { noCuda(); }
std::byte* GpuKvPool::poolData() const { noCuda(); }
std::byte* GpuKvPool::stagingSlot(std::uint64_t) const { noCuda(); }
std::int64_t GpuKvPool::gatherToSlot(std::span<const std::uint32_t>, std::uint64_t) { noCuda(); }
std::int64_t GpuKvPool::scatterFromSlot(std::uint64_t, std::span<const std::uint32_t>) { noCuda(); }

}  // namespace fabscope::suite::kvpush
#endif
