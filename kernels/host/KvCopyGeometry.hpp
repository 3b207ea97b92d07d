#pragma once
// The shape of a paged KV pool as the copy kernels see it: plain numbers, no
// model knowledge (src/kv builds this from a model; the kernels library sits
// below src/ and must not depend on it).
//
// Pool: one allocation, layer-major; each layer holds `planes` arrays (2 for
// GQA: K then V; 1 for MLA: the latent) of `poolBlocks` blocks of `blockBytes`:
//   offset(layer, plane, block) = ((layer * planes + plane) * poolBlocks + block) * blockBytes
// This matches vLLM's per-layer [2, num_blocks, block_size, kv_heads, head_dim].
//
// Staging buffer for n blocks of one request over layers [begin, end): also
// layer-major, so every layer's slice is contiguous (layer-by-layer streaming):
//   offset(layer, plane, i) = (((layer - begin) * planes + plane) * n + i) * blockBytes
#include <cstdint>

#include "host/HostDevice.hpp"

namespace fabscope::kernels {

struct KvLayerRange {
  std::uint32_t begin = 0;
  std::uint32_t end = 0;  // exclusive
  FABSCOPE_HD constexpr std::uint32_t count() const { return end - begin; }
};

struct KvCopyGeometry {
  std::uint32_t layers = 0;
  std::uint32_t planes = 0;      // 2 = K and V (GQA), 1 = latent (MLA)
  std::uint64_t poolBlocks = 0;  // blocks per (layer, plane) in the pool
  std::uint64_t blockBytes = 0;  // bytes of one (layer, plane, block)

  FABSCOPE_HD constexpr KvLayerRange allLayers() const { return {0, layers}; }
  FABSCOPE_HD constexpr std::uint64_t poolBytes() const {
    return std::uint64_t{layers} * planes * poolBlocks * blockBytes;
  }
  FABSCOPE_HD constexpr std::uint64_t poolOffset(std::uint32_t layer, std::uint32_t plane, std::uint64_t block) const {
    return ((std::uint64_t{layer} * planes + plane) * poolBlocks + block) * blockBytes;
  }
  FABSCOPE_HD constexpr std::uint64_t stagingBytes(std::uint64_t blocks, KvLayerRange range) const {
    return std::uint64_t{range.count()} * planes * blocks * blockBytes;
  }
  FABSCOPE_HD constexpr std::uint64_t stagingOffset(KvLayerRange range, std::uint32_t layer, std::uint32_t plane,
                                                    std::uint64_t index, std::uint64_t blocks) const {
    return ((std::uint64_t{layer - range.begin} * planes + plane) * blocks + index) * blockBytes;
  }
};

// Throws std::invalid_argument when the geometry, the layer range or a block
// id is out of bounds, naming the offending value. Every host and CUDA entry
// point calls it before touching memory.
void checkKvCopyArguments(const KvCopyGeometry& geometry, const std::uint32_t* blockIds, std::uint64_t blockCount,
                          KvLayerRange range);
// The same without looking at block ids (they may live in device memory).
void checkKvGeometry(const KvCopyGeometry& geometry, KvLayerRange range);

}  // namespace fabscope::kernels
