#include "host/KvGatherScatterHost.hpp"

#include <cstring>

namespace fabscope::kernels {

void gatherKvBlocksHost(const void* pool, void* staging, const KvCopyGeometry& g,
                        std::span<const std::uint32_t> blockIds, KvLayerRange range) {
  checkKvCopyArguments(g, blockIds.data(), blockIds.size(), range);
  const auto* src = static_cast<const std::uint8_t*>(pool);
  auto* dst = static_cast<std::uint8_t*>(staging);
  const std::uint64_t n = blockIds.size();
  for (std::uint32_t layer = range.begin; layer < range.end; ++layer)
    for (std::uint32_t plane = 0; plane < g.planes; ++plane)
      for (std::uint64_t i = 0; i < n; ++i)
        std::memcpy(dst + g.stagingOffset(range, layer, plane, i, n), src + g.poolOffset(layer, plane, blockIds[i]),
                    g.blockBytes);
}

void scatterKvBlocksHost(const void* staging, void* pool, const KvCopyGeometry& g,
                         std::span<const std::uint32_t> blockIds, KvLayerRange range) {
  checkKvCopyArguments(g, blockIds.data(), blockIds.size(), range);
  const auto* src = static_cast<const std::uint8_t*>(staging);
  auto* dst = static_cast<std::uint8_t*>(pool);
  const std::uint64_t n = blockIds.size();
  for (std::uint32_t layer = range.begin; layer < range.end; ++layer)
    for (std::uint32_t plane = 0; plane < g.planes; ++plane)
      for (std::uint64_t i = 0; i < n; ++i)
        std::memcpy(dst + g.poolOffset(layer, plane, blockIds[i]), src + g.stagingOffset(range, layer, plane, i, n),
                    g.blockBytes);
}

}  // namespace fabscope::kernels
