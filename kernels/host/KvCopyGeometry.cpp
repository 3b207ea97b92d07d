#include "host/KvCopyGeometry.hpp"

#include <limits>
#include <stdexcept>
#include <string>

namespace fabscope::kernels {

void checkKvGeometry(const KvCopyGeometry& g, KvLayerRange range) {
  if (g.layers == 0 || g.poolBlocks == 0 || g.blockBytes == 0)
    throw std::invalid_argument("KV copy geometry: layers (" + std::to_string(g.layers) + "), pool blocks (" +
                                std::to_string(g.poolBlocks) + ") and block bytes (" + std::to_string(g.blockBytes) +
                                ") must all be positive");
  if (g.planes != 1 && g.planes != 2)
    throw std::invalid_argument("KV copy geometry: planes must be 1 (MLA) or 2 (K,V), got " + std::to_string(g.planes));
  if (g.poolBytes() / g.blockBytes / g.planes / g.layers != g.poolBlocks)
    throw std::invalid_argument("KV copy geometry: pool size overflows 64 bits");
  if (range.begin >= range.end || range.end > g.layers)
    throw std::invalid_argument("KV layer range [" + std::to_string(range.begin) + ", " + std::to_string(range.end) +
                                ") is empty or exceeds the " + std::to_string(g.layers) + " layers of the pool");
}

void checkKvCopyArguments(const KvCopyGeometry& g, const std::uint32_t* blockIds, std::uint64_t blockCount,
                          KvLayerRange range) {
  checkKvGeometry(g, range);
  if (blockCount > 0 && blockIds == nullptr)
    throw std::invalid_argument("KV copy: null block id list for " + std::to_string(blockCount) + " blocks");
  for (std::uint64_t i = 0; i < blockCount; ++i)
    if (blockIds[i] >= g.poolBlocks)
      throw std::invalid_argument("KV copy: block id " + std::to_string(blockIds[i]) + " at index " +
                                  std::to_string(i) + " is outside the pool of " + std::to_string(g.poolBlocks) +
                                  " blocks");
}

}  // namespace fabscope::kernels
