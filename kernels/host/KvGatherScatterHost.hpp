#pragma once
// Host implementation of the KV block copies: gather a request's scattered
// pool blocks into one contiguous staging buffer (layout in KvCopyGeometry.hpp)
// and scatter a staging buffer back into pool blocks. The CUDA kernels in
// kernels/cuda do the same and are tested byte for byte against these.
#include <cstdint>
#include <span>

#include "host/KvCopyGeometry.hpp"

namespace fabscope::kernels {

// Copies pool block blockIds[i] of every (layer in range, plane) to staging
// position i. Throws std::invalid_argument on out-of-range ids or layers.
void gatherKvBlocksHost(const void* pool, void* staging, const KvCopyGeometry& geometry,
                        std::span<const std::uint32_t> blockIds, KvLayerRange range);

// The inverse: staging position i goes to pool block blockIds[i].
void scatterKvBlocksHost(const void* staging, void* pool, const KvCopyGeometry& geometry,
                         std::span<const std::uint32_t> blockIds, KvLayerRange range);

}  // namespace fabscope::kernels
