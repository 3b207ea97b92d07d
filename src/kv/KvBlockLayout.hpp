#pragma once
// Per-rank layout of a paged KV cache, derived from a model and its TP split:
//   GQA: per layer (K/V, num_blocks, block_tokens, kv_heads_per_rank, head_dim)
//   MLA: per layer (num_blocks, block_tokens, latent)
// in one layer-major pool allocation (offsets: kernels/host/KvCopyGeometry.hpp).
#include <cstdint>
#include <string>

#include "host/KvCopyGeometry.hpp"
#include "model/ModelSpec.hpp"

namespace fabscope::kv {

enum class KvLayoutKind { gqa, mla };

// Plane index inside a layer: GQA has key (0) and value (1); MLA has only latent (0).
enum class KvPlane : std::uint32_t { key = 0, value = 1, latent = 0 };

struct KvBlockLayout {
  KvLayoutKind kind = KvLayoutKind::gqa;
  std::uint32_t layers = 0;
  std::uint64_t numBlocks = 0;  // blocks in one worker's pool
  std::uint32_t blockTokens = 0;
  std::uint32_t kvHeads = 0;  // per rank (GQA)
  std::uint32_t headDim = 0;  // GQA
  std::uint32_t latent = 0;   // values per token (MLA)
  model::Dtype dtype = model::Dtype::bf16;

  // Throws std::invalid_argument (via model::kvHeadsPerRank and checks here)
  // when the model cannot be split that way or a count is zero.
  static KvBlockLayout fromModel(const model::ModelSpec& model, const model::ParallelLayout& parallel,
                                 std::uint32_t blockTokens, std::uint64_t numBlocks);

  void validate() const;
  std::uint32_t planes() const { return kind == KvLayoutKind::gqa ? 2 : 1; }
  std::uint64_t valuesPerToken() const;  // per plane: kv_heads x head_dim, or latent
  std::uint64_t blockBytes() const;      // one (layer, plane, block)
  std::uint64_t blockBytesPerLayer() const { return blockBytes() * planes(); }
  std::uint64_t blockBytesAllLayers() const { return blockBytesPerLayer() * layers; }
  std::uint64_t poolBytes() const { return blockBytesAllLayers() * numBlocks; }
  // Byte offset of (layer, plane, block) in the pool; throws std::out_of_range
  // naming the bad index.
  std::uint64_t offset(std::uint32_t layer, KvPlane plane, std::uint64_t block) const;
  kernels::KvCopyGeometry copyGeometry() const;
  // "GQA 80 layers x (K,V) x 4096 blocks x 16 tokens x 1 kv_heads x 128 head_dim x 2 B (bf16)"
  std::string describe() const;
};

}  // namespace fabscope::kv
