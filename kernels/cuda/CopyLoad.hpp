#pragma once
// Host<->GPU copy-engine load: the "copy" neighbour condition on GPU builds
// (a serving node stages KV blocks and weights over PCIe while its NIC is
// measured). Worker threads keep `depth` cudaMemcpyAsync calls of `chunkBytes`
// in flight per direction between pinned host memory and device memory, until
// stopped or until their deadline, and count the bytes that completed.
// Include-safe without nvcc; defined only in CUDA builds.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace fabscope::kernels::cuda {

enum class CopyDirection { hostToDevice, deviceToHost, both };

struct CopyLoadConfig {
  int device = 0;
  CopyDirection direction = CopyDirection::both;
  std::uint64_t chunkBytes = 64ull << 20;
  int depth = 4;  // copies in flight per direction
};

struct CopyLoadStats {
  std::uint64_t hostToDeviceBytes = 0;
  std::uint64_t deviceToHostBytes = 0;
  double hostToDeviceSeconds = 0;  // first issue to last completion
  double deviceToHostSeconds = 0;
  double hostToDeviceGBps() const {
    return hostToDeviceSeconds > 0 ? hostToDeviceBytes / hostToDeviceSeconds / 1e9 : 0;
  }
  double deviceToHostGBps() const {
    return deviceToHostSeconds > 0 ? deviceToHostBytes / deviceToHostSeconds / 1e9 : 0;
  }
};

class CopyLoad {
 public:
  // Allocates all pinned and device memory up front.
  explicit CopyLoad(const CopyLoadConfig& config);
  ~CopyLoad();  // stops and joins the workers
  CopyLoad(const CopyLoad&) = delete;
  CopyLoad& operator=(const CopyLoad&) = delete;

  // Starts the workers; they stop on their own after maxDuration.
  void start(std::chrono::nanoseconds maxDuration);
  // Signals the workers, waits for their in-flight copies and returns what
  // moved. Each GPU wait is bounded (a hung copy engine becomes CudaTimeout);
  // a worker's CUDA error is rethrown here.
  CopyLoadStats stop();
  // start() + wait for the deadline + stop().
  CopyLoadStats runFor(std::chrono::nanoseconds duration);

 private:
  struct Worker;
  CopyLoadStats joinAndCollect();
  CopyLoadConfig config_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<bool> stopRequested_{false};
  bool started_ = false;
};

}  // namespace fabscope::kernels::cuda
