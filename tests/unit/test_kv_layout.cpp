// KV pool layout arithmetic and offsets for GQA and MLA.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "kv/KvBlockLayout.hpp"
#include "kv/KvBlockPool.hpp"
#include "model/ModelSpec.hpp"

namespace fm = fabscope::model;
namespace fkv = fabscope::kv;

TEST(KvBlockLayout, Llama70bTp8) {
  const auto layout = fkv::KvBlockLayout::fromModel(fm::findPreset("llama3-70b"), {8}, 16, 1000);
  EXPECT_EQ(layout.kind, fkv::KvLayoutKind::gqa);
  EXPECT_EQ(layout.planes(), 2u);
  EXPECT_EQ(layout.kvHeads, 1u);
  EXPECT_EQ(layout.blockBytes(), 4096u);          // one of K or V
  EXPECT_EQ(layout.blockBytesPerLayer(), 8192u);  // K and V
  EXPECT_EQ(layout.blockBytesAllLayers(), 640u * 1024);
  EXPECT_EQ(layout.poolBytes(), 640u * 1024 * 1000);
  EXPECT_EQ(layout.describe(),
            "GQA 80 layers x (K,V) x 1000 blocks x 16 tokens x 1 kv_heads x 128 head_dim x 2 B (bf16)");
}

TEST(KvBlockLayout, GqaOffsetsAreLayerMajorKThenV) {
  const auto layout = fkv::KvBlockLayout::fromModel(fm::findPreset("llama3-8b"), {2}, 16, 10);
  const std::uint64_t b = layout.blockBytes();  // 16 x 4 heads x 128 x 2 = 16 KiB
  EXPECT_EQ(b, 16u * 4 * 128 * 2);
  EXPECT_EQ(layout.offset(0, fkv::KvPlane::key, 0), 0u);
  EXPECT_EQ(layout.offset(0, fkv::KvPlane::key, 3), 3 * b);
  EXPECT_EQ(layout.offset(0, fkv::KvPlane::value, 0), 10 * b);
  EXPECT_EQ(layout.offset(1, fkv::KvPlane::key, 0), 20 * b);
  EXPECT_EQ(layout.offset(31, fkv::KvPlane::value, 9), layout.poolBytes() - b);
  EXPECT_THROW(layout.offset(32, fkv::KvPlane::key, 0), std::out_of_range);
  EXPECT_THROW(layout.offset(0, fkv::KvPlane::key, 10), std::out_of_range);
}

TEST(KvBlockLayout, OffsetsTileThePoolExactly) {
  const auto layout = fkv::KvBlockLayout::fromModel(fm::findPreset("llama3-8b"), {8}, 16, 7);
  std::set<std::uint64_t> offsets;
  for (std::uint32_t l = 0; l < layout.layers; ++l)
    for (auto p : {fkv::KvPlane::key, fkv::KvPlane::value})
      for (std::uint64_t blk = 0; blk < layout.numBlocks; ++blk) offsets.insert(layout.offset(l, p, blk));
  ASSERT_EQ(offsets.size(), layout.layers * 2u * layout.numBlocks);
  std::uint64_t expected = 0;
  for (const auto o : offsets) {
    EXPECT_EQ(o, expected);
    expected += layout.blockBytes();
  }
  EXPECT_EQ(expected, layout.poolBytes());
}

TEST(KvBlockLayout, DeepSeekMla) {
  auto model = fm::findPreset("deepseek-v3");
  const auto layout = fkv::KvBlockLayout::fromModel(model, {8}, 64, 100);
  EXPECT_EQ(layout.kind, fkv::KvLayoutKind::mla);
  EXPECT_EQ(layout.planes(), 1u);
  EXPECT_EQ(layout.latent, 576u);
  EXPECT_EQ(layout.blockBytes(), 64u * 576 * 2);
  EXPECT_EQ(layout.offset(1, fkv::KvPlane::latent, 0), 100 * layout.blockBytes());
  EXPECT_THROW(layout.offset(0, fkv::KvPlane::value, 0), std::out_of_range);
  model.kvCacheDtype = fm::Dtype::fp8;
  EXPECT_EQ(fkv::KvBlockLayout::fromModel(model, {8}, 64, 100).blockBytes(), 64u * 576);
}

TEST(KvBlockLayout, CopyGeometryMatchesOffsets) {
  const auto layout = fkv::KvBlockLayout::fromModel(fm::findPreset("llama3-70b"), {8}, 16, 50);
  const auto g = layout.copyGeometry();
  EXPECT_EQ(g.layers, 80u);
  EXPECT_EQ(g.planes, 2u);
  EXPECT_EQ(g.poolBlocks, 50u);
  EXPECT_EQ(g.blockBytes, 4096u);
  EXPECT_EQ(g.poolBytes(), layout.poolBytes());
  EXPECT_EQ(g.poolOffset(7, 1, 33), layout.offset(7, fkv::KvPlane::value, 33));
  // Staging: layer-major, so one layer of an n-block request is contiguous.
  const fabscope::kernels::KvLayerRange layers{10, 12};
  EXPECT_EQ(g.stagingBytes(5, layers), 2u * 2 * 5 * 4096);
  EXPECT_EQ(g.stagingOffset(layers, 11, 0, 0, 5), 2u * 5 * 4096);
  EXPECT_EQ(g.stagingOffset(layers, 10, 1, 4, 5), (5u + 4) * 4096);
}

TEST(KvBlockPool, SizingFromBlocksAndBudget) {
  const auto& m = fm::findPreset("llama3-70b");
  const auto pool = fkv::KvBlockPool::withBlocks(m, {8}, 16, 4096);
  EXPECT_EQ(pool.bytes(), 4096u * 640 * 1024);
  EXPECT_EQ(pool.blocksFor(8192), 512u);
  EXPECT_EQ(pool.requestsThatFit(8192), 8u);
  const auto budget = fkv::KvBlockPool::withinBudget(m, {8}, 16, 1ull << 30);  // 1 GiB
  EXPECT_EQ(budget.numBlocks(), (1ull << 30) / (640 * 1024));
  EXPECT_THROW(fkv::KvBlockPool::withinBudget(m, {8}, 16, 1000), std::invalid_argument);
}

TEST(KvBlockLayout, RejectsZeroCounts) {
  const auto& m = fm::findPreset("llama3-8b");
  EXPECT_THROW(fkv::KvBlockLayout::fromModel(m, {1}, 0, 10), std::invalid_argument);
  EXPECT_THROW(fkv::KvBlockLayout::fromModel(m, {1}, 16, 0), std::invalid_argument);
  EXPECT_THROW(fkv::KvBlockLayout::fromModel(m, {3}, 16, 10), std::invalid_argument);
}
