#pragma once
// Keeps every SM of a GPU busy with arithmetic for a requested time: the
// "GPU compute" neighbour condition (a serving GPU is never idle while its
// NIC moves KV blocks). The kernel stops at its deadline or as soon as the
// host raises a stop flag in mapped pinned memory, so a condition can start
// it before measurement and end it right after. Include-safe without nvcc;
// defined only in CUDA builds.
#include <chrono>
#include <cstdint>

#include "cuda/CudaApi.hpp"

namespace fabscope::kernels::cuda {

struct ComputeLoadResult {
  double gpuSeconds = 0;       // kernel run time by the GPU's global timer
  double fmaOpsPerSecond = 0;  // achieved fused multiply-adds per second
  bool stoppedByHost = false;  // false: ran to its deadline
};

class ComputeLoad {
 public:
  // blocksPerSm x 256 threads per SM; 2 fills a Hopper SM's warp slots well
  // enough to starve other kernels of issue slots without extra registers.
  explicit ComputeLoad(int blocksPerSm = 2);
  ~ComputeLoad();  // raises the stop flag and waits (bounded) for the kernel
  ComputeLoad(const ComputeLoad&) = delete;
  ComputeLoad& operator=(const ComputeLoad&) = delete;

  // Launches the kernel; it runs until maxDuration passes or stop() is called.
  void start(std::chrono::nanoseconds maxDuration);
  bool running() const;
  // Raises the stop flag, waits at most `timeout` for the kernel to leave.
  ComputeLoadResult stop(std::chrono::nanoseconds timeout = std::chrono::seconds(10));
  // start() then wait for the deadline: the kernel's own timing is the result.
  ComputeLoadResult runFor(std::chrono::nanoseconds duration);

 private:
  ComputeLoadResult collect(std::chrono::nanoseconds timeout);

  int grid_ = 0;
  std::chrono::nanoseconds maxDuration_{0};
  bool launched_ = false;
  Stream stream_;
  PinnedHostBuffer stopFlag_;  // mapped; the kernel polls it
  DeviceBuffer stats_;         // start ns, end ns, fma count, stopped flag
  PinnedHostBuffer hostStats_;
};

}  // namespace fabscope::kernels::cuda
