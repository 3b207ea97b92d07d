#include "kv/KvBlockLayout.hpp"

#include <stdexcept>

#include "model/TrafficSizes.hpp"

namespace fabscope::kv {

KvBlockLayout KvBlockLayout::fromModel(const model::ModelSpec& model, const model::ParallelLayout& parallel,
                                       std::uint32_t blockTokens, std::uint64_t numBlocks) {
  KvBlockLayout layout;
  layout.layers = model.layers;
  layout.numBlocks = numBlocks;
  layout.blockTokens = blockTokens;
  layout.dtype = model.kvDtype();
  if (model.usesMla()) {
    layout.kind = KvLayoutKind::mla;
    layout.latent = model.mla->latentValues();
  } else {
    layout.kind = KvLayoutKind::gqa;
    layout.kvHeads = model::kvHeadsPerRank(model, parallel);
    layout.headDim = model.headDim;
  }
  layout.validate();
  return layout;
}

void KvBlockLayout::validate() const {
  auto positive = [](std::uint64_t v, const char* what) {
    if (v == 0) throw std::invalid_argument(std::string("KV block layout: ") + what + " must be positive");
  };
  positive(layers, "layers");
  positive(numBlocks, "num_blocks");
  positive(blockTokens, "block_tokens");
  if (kind == KvLayoutKind::gqa) {
    positive(kvHeads, "kv_heads");
    positive(headDim, "head_dim");
  } else {
    positive(latent, "latent");
  }
  if (numBlocks > 0xFFFFFFFFull)
    throw std::invalid_argument("KV block layout: num_blocks " + std::to_string(numBlocks) +
                                " exceeds the 32-bit block ids the copy kernels use");
}

std::uint64_t KvBlockLayout::valuesPerToken() const {
  return kind == KvLayoutKind::gqa ? std::uint64_t{kvHeads} * headDim : latent;
}

std::uint64_t KvBlockLayout::blockBytes() const {
  return std::uint64_t{blockTokens} * valuesPerToken() * model::dtypeBytes(dtype);
}

std::uint64_t KvBlockLayout::offset(std::uint32_t layer, KvPlane plane, std::uint64_t block) const {
  const auto p = static_cast<std::uint32_t>(plane);
  if (layer >= layers)
    throw std::out_of_range("KV layout: layer " + std::to_string(layer) + " >= " + std::to_string(layers) + " layers");
  if (p >= planes())
    throw std::out_of_range("KV layout: plane " + std::to_string(p) + " does not exist in an MLA layout");
  if (block >= numBlocks)
    throw std::out_of_range("KV layout: block " + std::to_string(block) + " >= " + std::to_string(numBlocks) +
                            " blocks in the pool");
  return copyGeometry().poolOffset(layer, p, block);
}

kernels::KvCopyGeometry KvBlockLayout::copyGeometry() const {
  kernels::KvCopyGeometry g;
  g.layers = layers;
  g.planes = planes();
  g.poolBlocks = numBlocks;
  g.blockBytes = blockBytes();
  return g;
}

std::string KvBlockLayout::describe() const {
  const std::string dt = std::to_string(model::dtypeBytes(dtype)) + " B (" + std::string(model::dtypeName(dtype)) + ")";
  if (kind == KvLayoutKind::gqa)
    return "GQA " + std::to_string(layers) + " layers x (K,V) x " + std::to_string(numBlocks) + " blocks x " +
           std::to_string(blockTokens) + " tokens x " + std::to_string(kvHeads) + " kv_heads x " +
           std::to_string(headDim) + " head_dim x " + dt;
  return "MLA " + std::to_string(layers) + " layers x " + std::to_string(numBlocks) + " blocks x " +
         std::to_string(blockTokens) + " tokens x " + std::to_string(latent) + " latent x " + dt;
}

}  // namespace fabscope::kv
