// CUDA KV kernels against the host implementation, byte for byte.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "GpuTestSupport.hpp"
#include "cuda/CudaApi.hpp"
#include "cuda/KvKernelsCuda.hpp"
#include "host/KvFillVerifyHost.hpp"
#include "host/KvGatherScatterHost.hpp"
#include "host/PatternFill.hpp"

namespace fk = fabscope::kernels;
namespace fc = fabscope::kernels::cuda;
using fabscope::gputest::scatteredIds;
using namespace std::chrono_literals;

namespace {

struct GeometryCase {
  const char* name;
  fk::KvCopyGeometry geometry;
  std::uint64_t requestBlocks;
};

// Block bytes per (layer, plane), 16-token blocks:
//   Llama-3-70B TP=8: 1 kv head x 128 x 2 B = 4096 (bf16), 2048 (fp8)
//   Llama-3-8B TP=1: 8 kv heads x 128 x 2 B x 16 = 32768
//   DeepSeek-V3 MLA: 576 latent x 2 B x 16 = 18432 (bf16), 9216 (fp8)
// plus odd sizes that force the byte-wise and 8-byte paths.
const GeometryCase kCases[] = {
    {"Llama70bTp8Bf16", {6, 2, 200, 4096}, 37}, {"Llama70bTp8Fp8", {6, 2, 200, 2048}, 37},
    {"Llama8bTp1Bf16", {3, 2, 64, 32768}, 20},  {"DeepSeekMlaBf16", {5, 1, 128, 18432}, 33},
    {"DeepSeekMlaFp8", {5, 1, 128, 9216}, 33},  {"Odd45Bytes", {3, 2, 50, 45}, 17},
    {"EightByteAligned24", {3, 1, 50, 24}, 17},
};

class GpuKvKernels : public ::testing::TestWithParam<GeometryCase> {
 protected:
  void SetUp() override { FABSCOPE_REQUIRE_DEVICE(); }
};

std::vector<std::uint8_t> download(const fc::DeviceBuffer& buffer) {
  std::vector<std::uint8_t> out(buffer.size());
  fc::copy(out.data(), buffer.data(), buffer.size());
  return out;
}

}  // namespace

TEST_P(GpuKvKernels, GatherAndScatterMatchHost) {
  const auto& c = GetParam();
  const auto& g = c.geometry;
  const auto srcIds = scatteredIds(g.poolBlocks, c.requestBlocks, 1);
  const auto dstIds = scatteredIds(g.poolBlocks, c.requestBlocks, 2);

  std::vector<std::uint8_t> hostPool(g.poolBytes()), hostTarget(g.poolBytes());
  fk::fillPatternHost(hostPool.data(), hostPool.size(), 10);
  fk::fillPatternHost(hostTarget.data(), hostTarget.size(), 20);
  std::vector<std::uint8_t> hostStaging(g.stagingBytes(c.requestBlocks, g.allLayers()));
  fk::gatherKvBlocksHost(hostPool.data(), hostStaging.data(), g, srcIds, g.allLayers());
  std::vector<std::uint8_t> expectedTarget = hostTarget;
  fk::scatterKvBlocksHost(hostStaging.data(), expectedTarget.data(), g, dstIds, g.allLayers());

  fc::Stream stream;
  fc::DeviceBuffer pool(hostPool.size()), target(hostTarget.size()), staging(hostStaging.size());
  fc::copy(pool.data(), hostPool.data(), hostPool.size());
  fc::copy(target.data(), hostTarget.data(), hostTarget.size());
  fc::DeviceBlockList src(c.requestBlocks), dst(c.requestBlocks);
  src.upload(srcIds, g, stream);
  dst.upload(dstIds, g, stream);
  fc::gatherKvBlocks(pool.data(), staging.data(), g, src, g.allLayers(), stream);
  fc::scatterKvBlocks(staging.data(), target.data(), g, dst, g.allLayers(), stream);
  stream.synchronize(30s);

  EXPECT_EQ(download(staging), hostStaging);
  EXPECT_EQ(download(target), expectedTarget);  // whole pool: untouched blocks too
}

TEST_P(GpuKvKernels, LayerRangeAndMisalignedStaging) {
  const auto& c = GetParam();
  const auto& g = c.geometry;
  const auto ids = scatteredIds(g.poolBlocks, c.requestBlocks, 3);
  const fk::KvLayerRange range{1, g.layers};
  std::vector<std::uint8_t> hostPool(g.poolBytes());
  fk::fillPatternHost(hostPool.data(), hostPool.size(), 30);
  std::vector<std::uint8_t> expected(g.stagingBytes(ids.size(), range));
  fk::gatherKvBlocksHost(hostPool.data(), expected.data(), g, ids, range);

  fc::Stream stream;
  fc::DeviceBuffer pool(hostPool.size()), staging(expected.size() + 4);
  fc::copy(pool.data(), hostPool.data(), hostPool.size());
  fc::DeviceBlockList list(ids.size());
  list.upload(ids, g, stream);
  // 4 bytes off alignment: the kernel must fall back from 16-byte accesses.
  auto* shifted = static_cast<std::uint8_t*>(staging.data()) + 4;
  fc::gatherKvBlocks(pool.data(), shifted, g, list, range, stream);
  stream.synchronize(30s);
  std::vector<std::uint8_t> got(expected.size());
  fc::copy(got.data(), shifted, got.size());
  EXPECT_EQ(got, expected);
}

TEST_P(GpuKvKernels, FillChecksumVerifyMatchHost) {
  const auto& c = GetParam();
  const auto& g = c.geometry;
  const auto ids = scatteredIds(g.poolBlocks, c.requestBlocks, 4);
  std::vector<std::uint8_t> hostPool(g.poolBytes(), 0);
  fk::fillKvBlocksHost(hostPool.data(), g, ids, 99, g.allLayers());
  std::vector<std::uint64_t> hostSums(g.layers * g.planes * ids.size());
  fk::checksumKvBlocksHost(hostPool.data(), g, ids, g.allLayers(), hostSums);

  fc::Stream stream;
  fc::DeviceBuffer pool(g.poolBytes()), sums(hostSums.size() * sizeof(std::uint64_t));
  fc::memsetAsync(pool.data(), 0, pool.size(), stream);
  fc::DeviceBlockList list(ids.size());
  list.upload(ids, g, stream);
  fc::fillKvBlocks(pool.data(), g, list, 99, g.allLayers(), stream);
  fc::checksumKvBlocks(pool.data(), g, list, g.allLayers(), static_cast<std::uint64_t*>(sums.data()), stream);
  fc::KvVerifier verifier;
  verifier.enqueue(pool.data(), g, list, 99, g.allLayers(), stream);
  EXPECT_FALSE(verifier.wait(stream, 30s).found);
  EXPECT_EQ(verifier.mismatchedWords(), 0u);
  EXPECT_EQ(download(pool), hostPool);
  std::vector<std::uint64_t> gpuSums(hostSums.size());
  fc::copy(gpuSums.data(), sums.data(), sums.size());
  EXPECT_EQ(gpuSums, hostSums);

  // One flipped byte in the middle of logical block 5 of the last layer's last plane.
  const std::uint32_t layer = g.layers - 1, plane = g.planes - 1;
  const std::uint64_t byte = g.blockBytes / 2;
  auto* target = static_cast<std::uint8_t*>(pool.data()) + g.poolOffset(layer, plane, ids[5]) + byte;
  std::uint8_t value = 0;
  fc::copy(&value, target, 1);
  value ^= 0x10;
  fc::copy(target, &value, 1);
  verifier.enqueue(pool.data(), g, list, 99, g.allLayers(), stream);
  const auto m = verifier.wait(stream, 30s);
  ASSERT_TRUE(m.found);
  EXPECT_EQ(m.layer, layer);
  EXPECT_EQ(m.plane, plane);
  EXPECT_EQ(m.logicalBlock, 5u);
  EXPECT_EQ(m.poolBlock, ids[5]);
  EXPECT_EQ(m.byteInBlock, byte);
  EXPECT_EQ(m.actual, value);
  EXPECT_EQ(m.expected ^ m.actual, 0x10);
  EXPECT_EQ(verifier.mismatchedWords(), 1u);
  // Same answer as the host verifier on the same bytes.
  const auto hostView = download(pool);
  const auto hm = fk::verifyKvBlocksHost(hostView.data(), g, ids, 99, g.allLayers());
  EXPECT_EQ(hm.describe(), m.describe());
}

INSTANTIATE_TEST_SUITE_P(Layouts, GpuKvKernels, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GeometryCase>& info) {
                           return std::string(info.param.name);
                         });

TEST(GpuKvBlockList, RejectsBadIdsAndOverflow) {
  FABSCOPE_REQUIRE_DEVICE();
  fc::Stream stream;
  const fk::KvCopyGeometry g{2, 2, 10, 64};
  fc::DeviceBlockList list(4);
  const std::vector<std::uint32_t> outside{1, 10};
  EXPECT_THROW(list.upload(outside, g, stream), std::invalid_argument);
  const std::vector<std::uint32_t> tooMany{0, 1, 2, 3, 4};
  EXPECT_THROW(list.upload(tooMany, g, stream), std::invalid_argument);
}

TEST(GpuErrors, FailedAllocationNamesTheCall) {
  FABSCOPE_REQUIRE_DEVICE();
  try {
    fc::DeviceBuffer huge(std::size_t{1} << 50);  // 1 PiB
    FAIL() << "expected CudaError";
  } catch (const fc::CudaError& e) {
    EXPECT_NE(std::string(e.what()).find("cudaMalloc"), std::string::npos) << e.what();
  }
}
