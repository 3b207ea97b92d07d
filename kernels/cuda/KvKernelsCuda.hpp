#pragma once
// CUDA versions of the KV block jobs in kernels/host (same layouts, same
// pattern and checksum, tested byte for byte against the host code):
// gather/scatter between a paged pool and a contiguous staging buffer, fill,
// checksum and verify. One thread block per (layer, plane, block); copies use
// 16-byte vector accesses when pool, staging and block size are 16-byte
// aligned. All calls are asynchronous on the given stream. Include-safe
// without nvcc; defined only in CUDA builds (FABSCOPE_HAVE_CUDA).
#include <chrono>
#include <cstdint>
#include <span>

#include "cuda/CudaApi.hpp"
#include "host/KvCopyGeometry.hpp"
#include "host/KvFillVerifyHost.hpp"

namespace fabscope::kernels::cuda {

// A request's block ids in device memory. Capacity is fixed at construction so
// upload() never allocates; upload() checks every id against the geometry on
// the host before copying (a bad id never reaches a kernel).
class DeviceBlockList {
 public:
  explicit DeviceBlockList(std::uint64_t capacity);
  void upload(std::span<const std::uint32_t> blockIds, const KvCopyGeometry& geometry, const Stream& stream);
  const std::uint32_t* deviceIds() const { return static_cast<const std::uint32_t*>(device_.data()); }
  std::uint64_t size() const { return size_; }
  std::uint64_t capacity() const { return capacity_; }

 private:
  std::uint64_t capacity_;
  std::uint64_t size_ = 0;
  PinnedHostBuffer host_;  // staging for the async upload
  DeviceBuffer device_;
  Event uploaded_{false};  // the last upload's copy has left host_
  bool uploadPending_ = false;
};

void gatherKvBlocks(const void* pool, void* staging, const KvCopyGeometry& geometry, const DeviceBlockList& blocks,
                    KvLayerRange range, const Stream& stream);
void scatterKvBlocks(const void* staging, void* pool, const KvCopyGeometry& geometry, const DeviceBlockList& blocks,
                     KvLayerRange range, const Stream& stream);
void fillKvBlocks(void* pool, const KvCopyGeometry& geometry, const DeviceBlockList& blocks, std::uint64_t requestId,
                  KvLayerRange range, const Stream& stream);
// Writes one checksum per (layer, plane, block) to deviceChecksums in staging
// order (see checksumKvBlocksHost); it must hold range.count() * planes * n values.
void checksumKvBlocks(const void* pool, const KvCopyGeometry& geometry, const DeviceBlockList& blocks,
                      KvLayerRange range, std::uint64_t* deviceChecksums, const Stream& stream);

// Verifies a request's blocks against the fill pattern on the GPU. Buffers
// are allocated once; enqueue() + wait() do not allocate.
class KvVerifier {
 public:
  KvVerifier();
  void enqueue(const void* pool, const KvCopyGeometry& geometry, const DeviceBlockList& blocks, std::uint64_t requestId,
               KvLayerRange range, const Stream& stream);
  // Waits for the last enqueue() and reports the first wrong byte (in layer,
  // plane, block, byte order), like verifyKvBlocksHost.
  KvMismatch wait(const Stream& stream, std::chrono::nanoseconds timeout);
  std::uint64_t mismatchedWords() const;  // of the last wait()

 private:
  DeviceBuffer result_;  // [0] first bad linear byte (UINT64_MAX: none), [1] bad word count
  PinnedHostBuffer hostResult_;
  // What the last enqueue() looked at, to decode the linear index in wait().
  const void* pool_ = nullptr;
  KvCopyGeometry geometry_{};
  const DeviceBlockList* blocks_ = nullptr;
  std::uint64_t requestId_ = 0;
  KvLayerRange range_{};
};

}  // namespace fabscope::kernels::cuda
