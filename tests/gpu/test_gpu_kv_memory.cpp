// kvpush's KvMemory in its GPU arrangements: device-direct (device pool and
// device staging slots, what a device-capable transport such as NCCL sends
// from and receives into) and via pinned host staging; gather into a slot,
// scatter out of it into other blocks, verify on the device. Byte for byte
// against the host implementation for the staging contents.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "GpuTestSupport.hpp"
#include "cuda/CudaApi.hpp"
#include "host/KvFillVerifyHost.hpp"
#include "host/KvGatherScatterHost.hpp"
#include "kinds/kvpush/KvPushMemory.hpp"

namespace {

using namespace fabscope::suite::kvpush;
namespace fk = fabscope::kernels;
namespace fc = fabscope::kernels::cuda;
using fabscope::gputest::scatteredIds;

struct Case {
  fk::KvCopyGeometry g{3, 2, 64, 4096};
  std::uint64_t blocks = 10;
  std::vector<std::uint32_t> src = scatteredIds(64, 10, 1);
  std::vector<std::uint32_t> dst;
  std::vector<std::uint8_t> expectedStaging;  // host gather of request 42

  Case() {
    for (std::uint32_t b = 0; b < g.poolBlocks && dst.size() < blocks; ++b)
      if (std::find(src.begin(), src.end(), b) == src.end()) dst.push_back(b);
    std::vector<std::uint8_t> pool(g.poolBytes());
    fk::fillKvBlocksHost(pool.data(), g, src, 42, g.allLayers());
    expectedStaging.resize(g.stagingBytes(blocks, g.allLayers()));
    fk::gatherKvBlocksHost(pool.data(), expectedStaging.data(), g, src, g.allLayers());
  }
};

TEST(GpuKvMemory, DeviceDirectSlotsRoundTrip) {
  FABSCOPE_REQUIRE_DEVICE();
  Case c;
  const auto stagingBytes = c.expectedStaging.size();
  fabscope::suite::BufferArena arena;
  KvMemory m(KvMemoryMode::gpuDirect, c.g, c.blocks, stagingBytes, 3, arena, false);
  EXPECT_EQ(m.transportMemory(), fabscope::transport::MemoryKind::cuda);
  EXPECT_EQ(m.staging(2) - m.staging(0), static_cast<std::ptrdiff_t>(2 * stagingBytes));
  m.fill(c.src, 42, -1);
  EXPECT_FALSE(m.verify(c.src, 42).found);
  const auto t = m.gather(c.src, 2);
  EXPECT_EQ(t.copyNs, 0);  // no host hop
  EXPECT_GT(t.kernelNs, 0);
  std::vector<std::uint8_t> staged(stagingBytes);
  fc::copy(staged.data(), m.staging(2), stagingBytes);
  EXPECT_EQ(staged, c.expectedStaging);
  EXPECT_TRUE(m.verify(c.dst, 42).found);
  m.scatter(2, c.dst);
  EXPECT_FALSE(m.verify(c.dst, 42).found);
  // Per-block messages land at pool() + poolOffset: the device pool itself.
  std::vector<std::uint8_t> block(c.g.blockBytes);
  fc::copy(block.data(), m.pool() + c.g.poolOffset(1, 1, c.dst[3]), block.size());
  EXPECT_EQ(0,
            std::memcmp(block.data(), c.expectedStaging.data() + c.g.stagingOffset(c.g.allLayers(), 1, 1, 3, c.blocks),
                        block.size()));
  m.fill(c.src, 7, static_cast<std::int64_t>(c.g.poolOffset(0, 0, c.src[0])));
  EXPECT_TRUE(m.verify(c.src, 7).found);
}

TEST(GpuKvMemory, ViaPinnedHostStagingTimesTheCopies) {
  FABSCOPE_REQUIRE_DEVICE();
  Case c;
  const auto stagingBytes = c.expectedStaging.size();
  fabscope::suite::BufferArena arena;
  KvMemory m(KvMemoryMode::gpuViaHost, c.g, c.blocks, stagingBytes, 2, arena, false);
  EXPECT_EQ(m.pool(), nullptr);  // the transport never sees device memory
  EXPECT_EQ(m.transportMemory(), fabscope::transport::MemoryKind::cudaHost);
  m.fill(c.src, 42, -1);
  const auto t = m.gather(c.src, 1);
  EXPECT_GT(t.copyNs, 0);
  EXPECT_EQ(0, std::memcmp(m.staging(1), c.expectedStaging.data(), stagingBytes));
  m.scatter(1, c.dst);
  EXPECT_FALSE(m.verify(c.dst, 42).found);
}

}  // namespace
