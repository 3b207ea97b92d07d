// Host KV gather/scatter round trips, fill/verify and checksums, for GQA and
// MLA layouts in bf16 and fp8 sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "host/KvFillVerifyHost.hpp"
#include "host/KvGatherScatterHost.hpp"
#include "host/KvPattern.hpp"
#include "kv/KvBlockLayout.hpp"
#include "kv/RequestBlockPlacement.hpp"
#include "model/ModelSpec.hpp"

namespace fk = fabscope::kernels;
namespace fm = fabscope::model;
namespace fkv = fabscope::kv;

namespace {

struct LayoutCase {
  const char* name;
  const char* preset;
  std::uint32_t tp;
  fm::Dtype kvDtype;
  std::uint32_t blockTokens;
};

fkv::KvBlockLayout makeLayout(const LayoutCase& c, std::uint64_t poolBlocks) {
  fm::ModelSpec model = fm::findPreset(c.preset);
  model.kvCacheDtype = c.kvDtype;
  model.layers = std::min<std::uint32_t>(model.layers, 4);  // keep the pool small
  return fkv::KvBlockLayout::fromModel(model, {c.tp}, c.blockTokens, poolBlocks);
}

class HostKvCopy : public ::testing::TestWithParam<LayoutCase> {};

}  // namespace

TEST_P(HostKvCopy, GatherScatterRoundTrip) {
  const auto layout = makeLayout(GetParam(), 64);
  const auto g = layout.copyGeometry();
  fkv::RequestBlockPlacement sender(64, layout.blockTokens, 11), receiver(64, layout.blockTokens, 12);
  const std::uint64_t tokens = 10 * layout.blockTokens - 3;  // partial last block
  const auto srcIds = sender.place(tokens);
  const auto dstIds = receiver.place(tokens);
  ASSERT_NE(srcIds, dstIds);

  std::vector<std::uint8_t> srcPool(g.poolBytes(), 0xAB), dstPool(g.poolBytes(), 0xCD);
  fk::fillKvBlocksHost(srcPool.data(), g, srcIds, 77, g.allLayers());
  std::vector<std::uint8_t> staging(g.stagingBytes(srcIds.size(), g.allLayers()));
  fk::gatherKvBlocksHost(srcPool.data(), staging.data(), g, srcIds, g.allLayers());
  fk::scatterKvBlocksHost(staging.data(), dstPool.data(), g, dstIds, g.allLayers());

  EXPECT_FALSE(fk::verifyKvBlocksHost(dstPool.data(), g, dstIds, 77, g.allLayers()).found);
  // Every block, byte for byte, against the sender's block.
  for (std::uint32_t l = 0; l < g.layers; ++l)
    for (std::uint32_t p = 0; p < g.planes; ++p)
      for (std::size_t i = 0; i < srcIds.size(); ++i)
        ASSERT_EQ(0, std::memcmp(srcPool.data() + g.poolOffset(l, p, srcIds[i]),
                                 dstPool.data() + g.poolOffset(l, p, dstIds[i]), g.blockBytes))
            << "layer " << l << " plane " << p << " block " << i;
  // Blocks the request does not own are untouched.
  std::vector<bool> owned(64, false);
  for (auto id : dstIds) owned[id] = true;
  for (std::uint64_t blk = 0; blk < 64; ++blk)
    if (!owned[blk]) {
      EXPECT_EQ(dstPool[g.poolOffset(0, 0, blk)], 0xCD);
    }
  // Wrong request id is caught.
  EXPECT_TRUE(fk::verifyKvBlocksHost(dstPool.data(), g, dstIds, 78, g.allLayers()).found);
}

TEST_P(HostKvCopy, LayerByLayerGatherMatchesSlicesOfFullGather) {
  const auto layout = makeLayout(GetParam(), 32);
  const auto g = layout.copyGeometry();
  fkv::RequestBlockPlacement placement(32, layout.blockTokens, 5);
  const auto ids = placement.place(7 * layout.blockTokens);
  std::vector<std::uint8_t> pool(g.poolBytes());
  fk::fillKvBlocksHost(pool.data(), g, ids, 3, g.allLayers());
  std::vector<std::uint8_t> full(g.stagingBytes(ids.size(), g.allLayers()));
  fk::gatherKvBlocksHost(pool.data(), full.data(), g, ids, g.allLayers());
  for (std::uint32_t l = 0; l < g.layers; ++l) {
    const fk::KvLayerRange one{l, l + 1};
    std::vector<std::uint8_t> slice(g.stagingBytes(ids.size(), one));
    fk::gatherKvBlocksHost(pool.data(), slice.data(), g, ids, one);
    EXPECT_EQ(0, std::memcmp(slice.data(), full.data() + l * slice.size(), slice.size())) << "layer " << l;
  }
}

TEST_P(HostKvCopy, ChecksumsMatchExpectedAndCatchOneFlippedByte) {
  const auto layout = makeLayout(GetParam(), 16);
  const auto g = layout.copyGeometry();
  fkv::RequestBlockPlacement placement(16, layout.blockTokens, 8);
  const auto ids = placement.place(3 * layout.blockTokens);
  std::vector<std::uint8_t> pool(g.poolBytes());
  fk::fillKvBlocksHost(pool.data(), g, ids, 1234, g.allLayers());
  std::vector<std::uint64_t> sums(g.layers * g.planes * ids.size());
  fk::checksumKvBlocksHost(pool.data(), g, ids, g.allLayers(), sums);
  for (std::uint32_t l = 0; l < g.layers; ++l)
    for (std::uint32_t p = 0; p < g.planes; ++p)
      for (std::size_t i = 0; i < ids.size(); ++i)
        EXPECT_EQ(sums[(l * g.planes + p) * ids.size() + i], fk::expectedKvBlockChecksum(1234, l, p, i, g.blockBytes));

  // Flip one byte somewhere in the middle of the last layer's last block.
  const std::uint32_t l = g.layers - 1, p = g.planes - 1;
  const std::uint64_t offset = g.poolOffset(l, p, ids.back()) + g.blockBytes / 2 + 3;
  pool[offset] ^= 0x01;
  std::vector<std::uint64_t> after(sums.size());
  fk::checksumKvBlocksHost(pool.data(), g, ids, g.allLayers(), after);
  const std::size_t flipped = (l * g.planes + p) * ids.size() + ids.size() - 1;
  for (std::size_t k = 0; k < sums.size(); ++k) {
    if (k == flipped) {
      EXPECT_NE(after[k], sums[k]);
    } else {
      EXPECT_EQ(after[k], sums[k]);
    }
  }
  const auto mismatch = fk::verifyKvBlocksHost(pool.data(), g, ids, 1234, g.allLayers());
  ASSERT_TRUE(mismatch.found);
  EXPECT_EQ(mismatch.layer, l);
  EXPECT_EQ(mismatch.plane, p);
  EXPECT_EQ(mismatch.logicalBlock, ids.size() - 1);
  EXPECT_EQ(mismatch.poolBlock, ids.back());
  EXPECT_EQ(mismatch.byteInBlock, g.blockBytes / 2 + 3);
  EXPECT_EQ(mismatch.expected ^ mismatch.actual, 0x01);
  EXPECT_NE(mismatch.describe().find("byte " + std::to_string(g.blockBytes / 2 + 3)), std::string::npos)
      << mismatch.describe();
}

INSTANTIATE_TEST_SUITE_P(Layouts, HostKvCopy,
                         ::testing::Values(LayoutCase{"Llama70bTp8Bf16", "llama3-70b", 8, fm::Dtype::bf16, 16},
                                           LayoutCase{"Llama70bTp8Fp8", "llama3-70b", 8, fm::Dtype::fp8, 16},
                                           LayoutCase{"Llama8bTp1Bf16", "llama3-8b", 1, fm::Dtype::bf16, 16},
                                           LayoutCase{"DeepSeekMlaBf16", "deepseek-v3", 8, fm::Dtype::bf16, 64},
                                           LayoutCase{"DeepSeekMlaFp8", "deepseek-v3", 8, fm::Dtype::fp8, 16}),
                         [](const ::testing::TestParamInfo<LayoutCase>& info) { return std::string(info.param.name); });

TEST(HostKvChecksum, EverySingleByteFlipDetectedIncludingTail) {
  // 45 bytes: five whole words and a 5-byte tail.
  std::vector<std::uint8_t> block(45);
  for (std::size_t i = 0; i < block.size(); ++i) block[i] = static_cast<std::uint8_t>(i * 37);
  const auto reference = fk::blockChecksumHost(block.data(), block.size());
  for (std::size_t i = 0; i < block.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      block[i] ^= static_cast<std::uint8_t>(1u << bit);
      EXPECT_NE(fk::blockChecksumHost(block.data(), block.size()), reference) << "byte " << i << " bit " << bit;
      block[i] ^= static_cast<std::uint8_t>(1u << bit);
    }
  // Swapping two words is caught too (position-keyed terms).
  std::swap_ranges(block.begin(), block.begin() + 8, block.begin() + 8);
  EXPECT_NE(fk::blockChecksumHost(block.data(), block.size()), reference);
}

TEST(HostKvChecksum, OddBlockSizeFillAndExpected) {
  const fk::KvCopyGeometry g{2, 1, 4, 45};
  const std::vector<std::uint32_t> ids{3, 1};
  std::vector<std::uint8_t> pool(g.poolBytes());
  fk::fillKvBlocksHost(pool.data(), g, ids, 5, g.allLayers());
  EXPECT_FALSE(fk::verifyKvBlocksHost(pool.data(), g, ids, 5, g.allLayers()).found);
  EXPECT_EQ(fk::blockChecksumHost(pool.data() + g.poolOffset(1, 0, 1), 45),
            fk::expectedKvBlockChecksum(5, 1, 0, 1, 45));
  pool[g.poolOffset(1, 0, 1) + 44] ^= 0x80;  // last tail byte
  const auto m = fk::verifyKvBlocksHost(pool.data(), g, ids, 5, g.allLayers());
  ASSERT_TRUE(m.found);
  EXPECT_EQ(m.byteInBlock, 44u);
}

TEST(HostKvCopyArguments, OutOfRangeIsRejectedBeforeCopying) {
  const fk::KvCopyGeometry g{2, 2, 4, 64};
  std::vector<std::uint8_t> pool(g.poolBytes()), staging(g.stagingBytes(1, g.allLayers()));
  const std::vector<std::uint32_t> bad{4};
  EXPECT_THROW(fk::gatherKvBlocksHost(pool.data(), staging.data(), g, bad, g.allLayers()), std::invalid_argument);
  const std::vector<std::uint32_t> ok{3};
  EXPECT_THROW(fk::gatherKvBlocksHost(pool.data(), staging.data(), g, ok, {1, 3}), std::invalid_argument);
  EXPECT_THROW(fk::gatherKvBlocksHost(pool.data(), staging.data(), g, ok, {1, 1}), std::invalid_argument);
  const fk::KvCopyGeometry threePlanes{2, 3, 4, 64};
  EXPECT_THROW(fk::scatterKvBlocksHost(staging.data(), pool.data(), threePlanes, ok, {0, 1}), std::invalid_argument);
}
