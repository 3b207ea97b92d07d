#pragma once
// Where a request's KV blocks sit in a worker's pool. Real paged caches hand
// out whatever blocks are free, so a request's blocks are scattered; this
// draws them at random distinct positions from a seeded generator so the same
// seed reproduces the same placement (the seed goes into the result file).
//
// All memory is allocated in the constructor; place() and release() only
// move indices, so they may run inside a timed loop.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace fabscope::kv {

class RequestBlockPlacement {
 public:
  RequestBlockPlacement(std::uint64_t poolBlocks, std::uint32_t blockTokens, std::uint64_t seed);

  std::uint64_t seed() const { return seed_; }
  std::uint64_t poolBlocks() const { return inUse_.size(); }
  std::uint64_t freeBlocks() const { return freeCount_; }
  std::uint64_t blocksFor(std::uint64_t tokens) const;

  // Fills `out` with blocksFor(tokens) distinct free pool block ids, drawn
  // uniformly at random, and marks them used. out.size() must equal
  // blocksFor(tokens) (std::invalid_argument otherwise); std::length_error when
  // fewer blocks are free.
  void place(std::uint64_t tokens, std::span<std::uint32_t> out);
  // Convenience for setup code (allocates the result).
  std::vector<std::uint32_t> place(std::uint64_t tokens);
  // Returns blocks to the free set; std::invalid_argument for ids that are
  // not in use (double release or foreign ids), before changing anything.
  void release(std::span<const std::uint32_t> blocks);

 private:
  // Uniform in [0, bound) from the raw 64-bit stream, by rejection, so the
  // sequence is the same with every standard library (std::uniform_int_distribution
  // is implementation-defined).
  std::uint64_t uniformBelow(std::uint64_t bound);

  std::uint64_t seed_;
  std::uint32_t blockTokens_;
  std::mt19937_64 rng_;
  std::vector<std::uint32_t> free_;  // free_[0, freeCount_) are the free ids
  std::uint64_t freeCount_;
  std::vector<std::uint8_t> inUse_;
};

}  // namespace fabscope::kv
