// kvpush's KvMemory on host memory: staging slots side by side, gather into
// a slot and scatter out of it into other blocks, verification catches a
// flipped byte. (The GPU arrangements: tests/gpu/test_gpu_kv_memory.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "kinds/kvpush/KvPushMemory.hpp"

namespace fabscope {
namespace {

using namespace suite::kvpush;

std::vector<std::uint32_t> scattered(std::uint64_t poolBlocks, std::uint64_t n, std::uint64_t seed) {
  std::vector<std::uint32_t> all(poolBlocks);
  std::iota(all.begin(), all.end(), 0u);
  std::mt19937_64 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(n);
  return all;
}

TEST(KvMemory, HostPoolStagingSlotsRoundTrip) {
  const kernels::KvCopyGeometry g{3, 2, 64, 4096};
  const std::uint64_t blocks = 10;
  const auto stagingBytes = g.stagingBytes(blocks, g.allLayers());
  suite::BufferArena arena;
  KvMemory m(KvMemoryMode::hostPool, g, blocks, stagingBytes, 3, arena, false);
  EXPECT_EQ(m.transportMemory(), transport::MemoryKind::host);
  EXPECT_EQ(m.poolBytes(), g.poolBytes());
  EXPECT_EQ(m.stagingAreaBytes(), 3 * stagingBytes);
  EXPECT_EQ(m.staging(2) - m.staging(0), static_cast<std::ptrdiff_t>(2 * stagingBytes));
  EXPECT_EQ(m.stagingArea(), m.staging(0));

  const auto src = scattered(g.poolBlocks, blocks, 1);
  std::vector<std::uint32_t> dst;
  for (std::uint32_t b = 0; b < g.poolBlocks && dst.size() < blocks; ++b)
    if (std::find(src.begin(), src.end(), b) == src.end()) dst.push_back(b);
  m.fill(src, 42, -1);
  EXPECT_FALSE(m.verify(src, 42).found);
  EXPECT_TRUE(m.verify(src, 43).found);  // another request's pattern
  const auto gathered = m.gather(src, 2);
  EXPECT_EQ(gathered.copyNs, 0);
  EXPECT_TRUE(m.verify(dst, 42).found);  // not there yet
  m.scatter(2, dst);
  EXPECT_FALSE(m.verify(dst, 42).found);

  // The checker's self-test flips one byte of the first block.
  m.fill(src, 7, static_cast<std::int64_t>(g.poolOffset(0, 0, src[0])));
  const auto bad = m.verify(src, 7);
  EXPECT_TRUE(bad.found);
}

TEST(KvMemory, WithoutStagingThereAreNoSlots) {
  const kernels::KvCopyGeometry g{2, 1, 16, 512};
  suite::BufferArena arena;
  KvMemory m(KvMemoryMode::hostPool, g, 4, 0, 5, arena, false);
  EXPECT_EQ(m.stagingAreaBytes(), 0u);
  EXPECT_NE(m.pool(), nullptr);
}

}  // namespace
}  // namespace fabscope
