// CUDA KV block kernels. Grid: x = block index within the request, y = plane,
// z = layer within the range, so one thread block moves one (layer, plane,
// block) of blockBytes.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "cuda/CudaCheck.hpp"
#include "cuda/KvKernelsCuda.hpp"
#include "host/KvPattern.hpp"

namespace fabscope::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;
constexpr std::uint64_t kNoMismatch = ~std::uint64_t{0};

__device__ inline void copyBlock(std::uint8_t* __restrict__ dst, const std::uint8_t* __restrict__ src,
                                 std::uint64_t bytes, bool vectorised) {
  if (vectorised) {
    // 16-byte accesses; unrolled so each thread has several loads in flight.
    const auto* s = reinterpret_cast<const uint4*>(src);
    auto* d = reinterpret_cast<uint4*>(dst);
    const std::uint64_t vectors = bytes / 16;
#pragma unroll 4
    for (std::uint64_t v = threadIdx.x; v < vectors; v += blockDim.x) d[v] = s[v];
  } else {
    for (std::uint64_t b = threadIdx.x; b < bytes; b += blockDim.x) dst[b] = src[b];
  }
}

template <bool Gather>
__global__ void gatherScatterKernel(const std::uint8_t* __restrict__ from, std::uint8_t* __restrict__ to,
                                    KvCopyGeometry g, const std::uint32_t* __restrict__ ids, std::uint64_t n,
                                    KvLayerRange range, bool vectorised) {
  const std::uint64_t i = blockIdx.x;
  const std::uint32_t plane = blockIdx.y;
  const std::uint32_t layer = range.begin + blockIdx.z;
  const std::uint64_t poolOffset = g.poolOffset(layer, plane, ids[i]);
  const std::uint64_t stagingOffset = g.stagingOffset(range, layer, plane, i, n);
  if constexpr (Gather)
    copyBlock(to + stagingOffset, from + poolOffset, g.blockBytes, vectorised);
  else
    copyBlock(to + poolOffset, from + stagingOffset, g.blockBytes, vectorised);
}

__global__ void fillKernel(std::uint8_t* pool, KvCopyGeometry g, const std::uint32_t* ids, std::uint64_t requestId,
                           KvLayerRange range, bool wordAligned) {
  const std::uint64_t i = blockIdx.x;
  const std::uint32_t plane = blockIdx.y;
  const std::uint32_t layer = range.begin + blockIdx.z;
  std::uint8_t* block = pool + g.poolOffset(layer, plane, ids[i]);
  const std::uint64_t seed = kvBlockSeed(requestId, layer, plane, i);
  if (wordAligned) {
    auto* words = reinterpret_cast<std::uint64_t*>(block);
    for (std::uint64_t j = threadIdx.x; j < g.blockBytes / 8; j += blockDim.x) words[j] = kvPatternWord(seed, j);
  } else {
    for (std::uint64_t b = threadIdx.x; b < g.blockBytes; b += blockDim.x)
      block[b] = static_cast<std::uint8_t>(kvPatternWord(seed, b / 8) >> (8 * (b % 8)));
  }
}

__device__ inline std::uint64_t loadWord(const std::uint8_t* block, std::uint64_t j, std::uint64_t bytes,
                                         bool wordAligned) {
  if (wordAligned) return reinterpret_cast<const std::uint64_t*>(block)[j];
  const std::uint64_t remaining = bytes - 8 * j;
  return loadPartialWord(block + 8 * j, remaining < 8 ? remaining : 8);
}

__global__ void checksumKernel(const std::uint8_t* pool, KvCopyGeometry g, const std::uint32_t* ids, std::uint64_t n,
                               KvLayerRange range, std::uint64_t* out, bool wordAligned) {
  const std::uint64_t i = blockIdx.x;
  const std::uint32_t plane = blockIdx.y;
  const std::uint32_t layer = range.begin + blockIdx.z;
  const std::uint8_t* block = pool + g.poolOffset(layer, plane, ids[i]);
  const std::uint64_t words = (g.blockBytes + 7) / 8;
  std::uint64_t sum = 0;
  for (std::uint64_t j = threadIdx.x; j < words; j += blockDim.x)
    sum += checksumTerm(loadWord(block, j, g.blockBytes, wordAligned && j < g.blockBytes / 8), j);
  // Integer addition is associative, so this reduction matches the host's
  // sequential sum exactly.
  __shared__ std::uint64_t partial[kThreads];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[(std::uint64_t{blockIdx.z} * g.planes + plane) * n + i] = checksumFinish(partial[0], g.blockBytes);
}

__global__ void verifyKernel(const std::uint8_t* pool, KvCopyGeometry g, const std::uint32_t* ids, std::uint64_t n,
                             std::uint64_t requestId, KvLayerRange range, bool wordAligned,
                             unsigned long long* result) {
  const std::uint64_t i = blockIdx.x;
  const std::uint32_t plane = blockIdx.y;
  const std::uint32_t layer = range.begin + blockIdx.z;
  const std::uint8_t* block = pool + g.poolOffset(layer, plane, ids[i]);
  const std::uint64_t seed = kvBlockSeed(requestId, layer, plane, i);
  const std::uint64_t linearBase = g.stagingOffset(range, layer, plane, i, n);
  const std::uint64_t words = (g.blockBytes + 7) / 8;
  for (std::uint64_t j = threadIdx.x; j < words; j += blockDim.x) {
    const std::uint64_t valid = g.blockBytes - 8 * j < 8 ? g.blockBytes - 8 * j : 8;
    const std::uint64_t mask = valid == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * valid)) - 1;
    const std::uint64_t actual = loadWord(block, j, g.blockBytes, wordAligned && valid == 8);
    const std::uint64_t diff = (actual ^ kvPatternWord(seed, j)) & mask;
    if (diff != 0) {
      const unsigned firstByte = __ffsll(static_cast<long long>(diff)) / 8;  // lowest differing byte
      atomicMin(&result[0], static_cast<unsigned long long>(linearBase + 8 * j + firstByte));
      atomicAdd(&result[1], 1ull);
    }
  }
}

bool aligned(const void* p, std::uint64_t alignment) { return reinterpret_cast<std::uintptr_t>(p) % alignment == 0; }

void checkBlocks(const KvCopyGeometry& g, const DeviceBlockList& blocks, KvLayerRange range, const char* what) {
  checkKvGeometry(g, range);
  if (blocks.size() == 0) throw std::invalid_argument(std::string(what) + ": empty block list");
  if (blocks.size() > 0x7FFFFFFFull) throw std::invalid_argument(std::string(what) + ": too many blocks for one grid");
}

dim3 gridFor(const KvCopyGeometry& g, const DeviceBlockList& blocks, KvLayerRange range) {
  return dim3(static_cast<unsigned>(blocks.size()), g.planes, range.count());
}

template <bool Gather>
void launchGatherScatter(const void* from, void* to, const KvCopyGeometry& g, const DeviceBlockList& blocks,
                         KvLayerRange range, const Stream& stream) {
  checkBlocks(g, blocks, range, Gather ? "gatherKvBlocks" : "scatterKvBlocks");
  const bool vectorised = g.blockBytes % 16 == 0 && aligned(from, 16) && aligned(to, 16);
  gatherScatterKernel<Gather><<<gridFor(g, blocks, range), kThreads, 0, stream.get()>>>(
      static_cast<const std::uint8_t*>(from), static_cast<std::uint8_t*>(to), g, blocks.deviceIds(), blocks.size(),
      range, vectorised);
  FABSCOPE_CUDA_CHECK_LAUNCH(Gather ? "gatherKvBlocks" : "scatterKvBlocks");
}

}  // namespace

DeviceBlockList::DeviceBlockList(std::uint64_t capacity)
    : capacity_(capacity), host_(capacity * sizeof(std::uint32_t)), device_(capacity * sizeof(std::uint32_t)) {
  if (capacity == 0) throw std::invalid_argument("DeviceBlockList: capacity must be positive");
}

void DeviceBlockList::upload(std::span<const std::uint32_t> blockIds, const KvCopyGeometry& geometry,
                             const Stream& stream) {
  if (blockIds.size() > capacity_)
    throw std::invalid_argument("DeviceBlockList: " + std::to_string(blockIds.size()) +
                                " block ids exceed the capacity of " + std::to_string(capacity_));
  checkKvCopyArguments(geometry, blockIds.data(), blockIds.size(), geometry.allLayers());
  // The previous upload's copy may still be reading host_; wait for that copy
  // only (not for the kernels queued behind it) before overwriting it.
  if (uploadPending_) uploaded_.synchronize(std::chrono::seconds(30));
  std::memcpy(host_.data(), blockIds.data(), blockIds.size_bytes());
  copyAsync(device_.data(), host_.data(), blockIds.size_bytes(), stream);
  uploaded_.record(stream);
  uploadPending_ = true;
  size_ = blockIds.size();
}

void gatherKvBlocks(const void* pool, void* staging, const KvCopyGeometry& g, const DeviceBlockList& blocks,
                    KvLayerRange range, const Stream& stream) {
  launchGatherScatter<true>(pool, staging, g, blocks, range, stream);
}

void scatterKvBlocks(const void* staging, void* pool, const KvCopyGeometry& g, const DeviceBlockList& blocks,
                     KvLayerRange range, const Stream& stream) {
  launchGatherScatter<false>(staging, pool, g, blocks, range, stream);
}

void fillKvBlocks(void* pool, const KvCopyGeometry& g, const DeviceBlockList& blocks, std::uint64_t requestId,
                  KvLayerRange range, const Stream& stream) {
  checkBlocks(g, blocks, range, "fillKvBlocks");
  const bool wordAligned = g.blockBytes % 8 == 0 && aligned(pool, 8);
  fillKernel<<<gridFor(g, blocks, range), kThreads, 0, stream.get()>>>(
      static_cast<std::uint8_t*>(pool), g, blocks.deviceIds(), requestId, range, wordAligned);
  FABSCOPE_CUDA_CHECK_LAUNCH("fillKvBlocks");
}

void checksumKvBlocks(const void* pool, const KvCopyGeometry& g, const DeviceBlockList& blocks, KvLayerRange range,
                      std::uint64_t* deviceChecksums, const Stream& stream) {
  checkBlocks(g, blocks, range, "checksumKvBlocks");
  const bool wordAligned = g.blockBytes % 8 == 0 && aligned(pool, 8);
  checksumKernel<<<gridFor(g, blocks, range), kThreads, 0, stream.get()>>>(static_cast<const std::uint8_t*>(pool), g,
                                                                           blocks.deviceIds(), blocks.size(), range,
                                                                           deviceChecksums, wordAligned);
  FABSCOPE_CUDA_CHECK_LAUNCH("checksumKvBlocks");
}

KvVerifier::KvVerifier() : result_(2 * sizeof(std::uint64_t)), hostResult_(2 * sizeof(std::uint64_t)) {}

void KvVerifier::enqueue(const void* pool, const KvCopyGeometry& g, const DeviceBlockList& blocks,
                         std::uint64_t requestId, KvLayerRange range, const Stream& stream) {
  checkBlocks(g, blocks, range, "KvVerifier::enqueue");
  const std::uint64_t initial[2] = {kNoMismatch, 0};
  FABSCOPE_CUDA_CHECK(cudaMemcpyAsync(result_.data(), initial, sizeof initial, cudaMemcpyHostToDevice, stream.get()));
  // cudaMemcpyAsync from pageable memory is staged before it returns, so
  // `initial` going out of scope is safe.
  const bool wordAligned = g.blockBytes % 8 == 0 && aligned(pool, 8);
  verifyKernel<<<gridFor(g, blocks, range), kThreads, 0, stream.get()>>>(
      static_cast<const std::uint8_t*>(pool), g, blocks.deviceIds(), blocks.size(), requestId, range, wordAligned,
      static_cast<unsigned long long*>(result_.data()));
  FABSCOPE_CUDA_CHECK_LAUNCH("KvVerifier::enqueue");
  copyAsync(hostResult_.data(), result_.data(), result_.size(), stream);
  pool_ = pool;
  geometry_ = g;
  blocks_ = &blocks;
  requestId_ = requestId;
  range_ = range;
}

KvMismatch KvVerifier::wait(const Stream& stream, std::chrono::nanoseconds timeout) {
  if (blocks_ == nullptr) throw std::logic_error("KvVerifier::wait without enqueue");
  stream.synchronize(timeout);
  const auto* r = static_cast<const std::uint64_t*>(hostResult_.data());
  KvMismatch m;
  if (r[0] == kNoMismatch) return m;
  // Decode the staging-order linear index into (layer, plane, block, byte).
  const std::uint64_t n = blocks_->size();
  const std::uint64_t blockIndex = r[0] / geometry_.blockBytes;
  m.found = true;
  m.byteInBlock = r[0] % geometry_.blockBytes;
  m.logicalBlock = blockIndex % n;
  m.plane = static_cast<std::uint32_t>(blockIndex / n % geometry_.planes);
  m.planeIsLatent = geometry_.planes == 1;
  m.layer = range_.begin + static_cast<std::uint32_t>(blockIndex / n / geometry_.planes);
  std::uint32_t poolBlock = 0;
  copy(&poolBlock, blocks_->deviceIds() + m.logicalBlock, sizeof poolBlock);
  m.poolBlock = poolBlock;
  copy(&m.actual,
       static_cast<const std::uint8_t*>(pool_) + geometry_.poolOffset(m.layer, m.plane, poolBlock) + m.byteInBlock, 1);
  const std::uint64_t seed = kvBlockSeed(requestId_, m.layer, m.plane, m.logicalBlock);
  m.expected = static_cast<std::uint8_t>(kvPatternWord(seed, m.byteInBlock / 8) >> (8 * (m.byteInBlock % 8)));
  return m;
}

std::uint64_t KvVerifier::mismatchedWords() const { return static_cast<const std::uint64_t*>(hostResult_.data())[1]; }

}  // namespace fabscope::kernels::cuda
