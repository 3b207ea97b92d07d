#pragma once
// One worker's KV pool: how many blocks it has, what it costs in memory, and
// how many requests of a given prompt length it can hold at once.
#include <cstdint>
#include <string>

#include "kv/KvBlockLayout.hpp"

namespace fabscope::kv {

class KvBlockPool {
 public:
  // A pool of exactly numBlocks blocks per worker.
  static KvBlockPool withBlocks(const model::ModelSpec& model, const model::ParallelLayout& parallel,
                                std::uint32_t blockTokens, std::uint64_t numBlocks);
  // As many whole blocks as fit in budgetBytes (at least one, else
  // std::invalid_argument saying how much one block needs).
  static KvBlockPool withinBudget(const model::ModelSpec& model, const model::ParallelLayout& parallel,
                                  std::uint32_t blockTokens, std::uint64_t budgetBytes);

  const KvBlockLayout& layout() const { return layout_; }
  std::uint64_t numBlocks() const { return layout_.numBlocks; }
  std::uint64_t bytes() const { return layout_.poolBytes(); }
  std::uint64_t blocksFor(std::uint64_t tokens) const;
  // Requests of promptTokens each that fit side by side (0 if one does not fit).
  std::uint64_t requestsThatFit(std::uint64_t promptTokens) const;
  std::string describe() const;

 private:
  explicit KvBlockPool(KvBlockLayout layout) : layout_(layout) {}
  KvBlockLayout layout_;
};

}  // namespace fabscope::kv
