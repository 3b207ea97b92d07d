#include "kv/RequestBlockPlacement.hpp"

#include <numeric>
#include <stdexcept>
#include <string>

namespace fabscope::kv {

RequestBlockPlacement::RequestBlockPlacement(std::uint64_t poolBlocks, std::uint32_t blockTokens, std::uint64_t seed)
    : seed_(seed), blockTokens_(blockTokens), rng_(seed), freeCount_(poolBlocks) {
  if (poolBlocks == 0 || poolBlocks > 0xFFFFFFFFull)
    throw std::invalid_argument("block placement: pool blocks must be in [1, 2^32), got " + std::to_string(poolBlocks));
  if (blockTokens == 0) throw std::invalid_argument("block placement: block_tokens must be positive");
  free_.resize(poolBlocks);
  std::iota(free_.begin(), free_.end(), 0u);
  inUse_.assign(poolBlocks, 0);
}

std::uint64_t RequestBlockPlacement::blocksFor(std::uint64_t tokens) const {
  return (tokens + blockTokens_ - 1) / blockTokens_;
}

std::uint64_t RequestBlockPlacement::uniformBelow(std::uint64_t bound) {
  // Reject the lowest (2^64 mod bound) values so every residue is equally likely.
  const std::uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const std::uint64_t x = rng_();
    if (x >= threshold) return x % bound;
  }
}

void RequestBlockPlacement::place(std::uint64_t tokens, std::span<std::uint32_t> out) {
  const std::uint64_t need = blocksFor(tokens);
  if (out.size() != need)
    throw std::invalid_argument("block placement: " + std::to_string(tokens) + " tokens need " + std::to_string(need) +
                                " blocks, output holds " + std::to_string(out.size()));
  if (need > freeCount_)
    throw std::length_error("block placement: " + std::to_string(tokens) + " tokens need " + std::to_string(need) +
                            " blocks, only " + std::to_string(freeCount_) + " of " + std::to_string(inUse_.size()) +
                            " are free");
  for (std::uint64_t i = 0; i < need; ++i) {
    // Draw one free slot, move the last free id into its place: O(1), no allocation.
    const std::uint64_t pick = uniformBelow(freeCount_);
    const std::uint32_t id = free_[pick];
    free_[pick] = free_[freeCount_ - 1];
    --freeCount_;
    inUse_[id] = 1;
    out[i] = id;
  }
}

std::vector<std::uint32_t> RequestBlockPlacement::place(std::uint64_t tokens) {
  std::vector<std::uint32_t> out(blocksFor(tokens));
  place(tokens, out);
  return out;
}

void RequestBlockPlacement::release(std::span<const std::uint32_t> blocks) {
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const std::uint32_t id = blocks[i];
    if (id >= inUse_.size() || inUse_[id] != 1) {
      for (std::size_t j = 0; j < i; ++j) inUse_[blocks[j]] = 1;  // leave the state untouched
      throw std::invalid_argument("block placement: releasing block " + std::to_string(id) +
                                  " which is not in use (double release or not from this pool)");
    }
    inUse_[id] = 2;  // marks duplicates inside `blocks` itself
  }
  for (const std::uint32_t id : blocks) {
    inUse_[id] = 0;
    free_[freeCount_++] = id;
  }
}

}  // namespace fabscope::kv
