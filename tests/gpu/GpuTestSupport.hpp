#pragma once
// Shared helpers for the GPU test and benchmark programs.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "cuda/CudaApi.hpp"

#define FABSCOPE_REQUIRE_DEVICE()                                                     \
  do {                                                                                \
    if (::fabscope::kernels::cuda::deviceCount() == 0) GTEST_SKIP() << "no CUDA GPU"; \
  } while (0)

namespace fabscope::gputest {

// n distinct block ids out of poolBlocks, scattered.
inline std::vector<std::uint32_t> scatteredIds(std::uint64_t poolBlocks, std::uint64_t n, std::uint64_t seed) {
  std::vector<std::uint32_t> all(poolBlocks);
  std::iota(all.begin(), all.end(), 0u);
  std::mt19937_64 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(n);
  return all;
}

}  // namespace fabscope::gputest
