// Runs the GPU tests. Without a GPU every test skips and the program exits 77
// so ctest reports "skipped" rather than a pass that checked nothing; with
// FABSCOPE_REQUIRE_GPU=1 (the GPU machine's runner) a missing GPU fails.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "cuda/CudaApi.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int devices = fabscope::kernels::cuda::deviceCount();
  const char* require = std::getenv("FABSCOPE_REQUIRE_GPU");
  if (devices == 0 && require != nullptr && std::string(require) == "1") {
    std::fprintf(stderr, "fabscope_gpu_tests: FABSCOPE_REQUIRE_GPU=1 but no CUDA device is visible\n");
    return 1;
  }
  if (devices > 0) {
    const auto info = fabscope::kernels::cuda::deviceInfo(0);
    std::printf("GPU 0: %s, %d SMs, compute %d.%d, %zu MiB, PCI %s\n", info.name.c_str(), info.multiprocessors,
                info.computeMajor, info.computeMinor, info.memoryBytes >> 20, info.pciBusId.c_str());
  }
  const int rc = RUN_ALL_TESTS();
  if (rc == 0 && devices == 0) {
    std::printf("fabscope_gpu_tests: no CUDA device, all tests skipped\n");
    return 77;
  }
  return rc;
}
