// The GPU neighbour loads: compute load honours its time, copy load moves bytes.
#include <gtest/gtest.h>

#include <thread>

#include "GpuTestSupport.hpp"
#include "cuda/ComputeLoad.hpp"
#include "cuda/CopyLoad.hpp"

namespace fc = fabscope::kernels::cuda;
using namespace std::chrono_literals;

TEST(GpuComputeLoad, RunsForTheRequestedTime) {
  FABSCOPE_REQUIRE_DEVICE();
  fc::ComputeLoad load;
  const auto begin = std::chrono::steady_clock::now();
  const auto r = load.runFor(300ms);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_FALSE(r.stoppedByHost);
  EXPECT_GE(r.gpuSeconds, 0.300);
  EXPECT_LT(r.gpuSeconds, 0.330);  // stops within ~10% of the deadline
  EXPECT_GE(wall, 0.300);
  EXPECT_LT(wall, 0.600);
  EXPECT_GT(r.fmaOpsPerSecond, 1e12);  // an H200 does ~3e13 fp32 FMA/s; idle would be 0
  std::printf("compute load: %.3f s on the GPU, %.3g FMA/s\n", r.gpuSeconds, r.fmaOpsPerSecond);
}

TEST(GpuComputeLoad, StopsEarlyWhenAsked) {
  FABSCOPE_REQUIRE_DEVICE();
  fc::ComputeLoad load;
  load.start(20s);
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(load.running());
  const auto begin = std::chrono::steady_clock::now();
  const auto r = load.stop(5s);
  const double stopLatency = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_TRUE(r.stoppedByHost);
  EXPECT_LT(r.gpuSeconds, 1.0);
  EXPECT_LT(stopLatency, 0.1);
  EXPECT_FALSE(load.running());
}

TEST(GpuCopyLoad, MovesBytesBothWays) {
  FABSCOPE_REQUIRE_DEVICE();
  fc::CopyLoadConfig config;
  config.chunkBytes = 16ull << 20;
  fc::CopyLoad load(config);
  const auto s = load.runFor(500ms);
  EXPECT_GT(s.hostToDeviceBytes, 0u);
  EXPECT_GT(s.deviceToHostBytes, 0u);
  EXPECT_GE(s.hostToDeviceSeconds, 0.5);
  EXPECT_GT(s.hostToDeviceGBps(), 5.0);  // any PCIe Gen4+ link does far more
  EXPECT_GT(s.deviceToHostGBps(), 5.0);
  std::printf("copy load both ways: H2D %.1f GB/s, D2H %.1f GB/s\n", s.hostToDeviceGBps(), s.deviceToHostGBps());
}

TEST(GpuCopyLoad, StopsWhenAsked) {
  FABSCOPE_REQUIRE_DEVICE();
  fc::CopyLoadConfig config;
  config.direction = fc::CopyDirection::hostToDevice;
  config.chunkBytes = 8ull << 20;
  fc::CopyLoad load(config);
  load.start(60s);
  std::this_thread::sleep_for(200ms);
  const auto begin = std::chrono::steady_clock::now();
  const auto s = load.stop();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count(), 0.5);
  EXPECT_GT(s.hostToDeviceBytes, 0u);
  EXPECT_EQ(s.deviceToHostBytes, 0u);
  EXPECT_LT(s.hostToDeviceSeconds, 1.0);
}
