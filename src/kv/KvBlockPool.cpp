#include "kv/KvBlockPool.hpp"

#include <stdexcept>

#include "model/TrafficSizes.hpp"

namespace fabscope::kv {

KvBlockPool KvBlockPool::withBlocks(const model::ModelSpec& model, const model::ParallelLayout& parallel,
                                    std::uint32_t blockTokens, std::uint64_t numBlocks) {
  return KvBlockPool(KvBlockLayout::fromModel(model, parallel, blockTokens, numBlocks));
}

KvBlockPool KvBlockPool::withinBudget(const model::ModelSpec& model, const model::ParallelLayout& parallel,
                                      std::uint32_t blockTokens, std::uint64_t budgetBytes) {
  const KvBlockLayout one = KvBlockLayout::fromModel(model, parallel, blockTokens, 1);
  const std::uint64_t perBlock = one.blockBytesAllLayers();
  if (budgetBytes < perBlock)
    throw std::invalid_argument("KV pool budget of " + model::humanBytes(budgetBytes) +
                                " holds no block; one block over all layers needs " + model::humanBytes(perBlock));
  return withBlocks(model, parallel, blockTokens, budgetBytes / perBlock);
}

std::uint64_t KvBlockPool::blocksFor(std::uint64_t tokens) const {
  return model::blocksForTokens(tokens, layout_.blockTokens);
}

std::uint64_t KvBlockPool::requestsThatFit(std::uint64_t promptTokens) const {
  const std::uint64_t need = blocksFor(promptTokens);
  return need == 0 ? 0 : layout_.numBlocks / need;
}

std::string KvBlockPool::describe() const {
  return layout_.describe() + " = " + model::humanBytes(bytes()) + " per worker";
}

}  // namespace fabscope::kv
