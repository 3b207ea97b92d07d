#include <cstring>

#include "cuda/ComputeLoad.hpp"
#include "cuda/CudaCheck.hpp"

namespace fabscope::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;
// FMAs per thread between looks at the clock and the flag: long enough that
// the checks cost little, short enough (tens of microseconds) to stop promptly.
constexpr int kFmaPerCheck = 8192;

struct Stats {
  unsigned long long startNs;
  unsigned long long endNs;
  unsigned long long fmaOps;
  unsigned long long stoppedByHost;
  int deviceStop;  // block 0 relays the host flag here for the other blocks
};

__device__ inline unsigned long long globalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void computeLoadKernel(unsigned long long durationNs, const volatile int* stopFlag, Stats* stats,
                                  float* sink) {
  const unsigned long long start = globalTimerNs();
  if (blockIdx.x == 0 && threadIdx.x == 0) stats->startNs = start;
  // Eight independent chains keep the FMA pipes full; x -> x * m + k
  // converges (no overflow, no denormals), so the values stay ordinary floats.
  constexpr int kChains = 8;
  float v[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) v[c] = threadIdx.x * 1e-3f + c;
  const float m = 0.9999f, k = 1e-4f;
  unsigned long long rounds = 0;
  // Only block 0 reads the host flag (a read across PCIe) and relays it in
  // device memory; in every block only thread 0 looks, then tells the block.
  // Hundreds of blocks polling mapped memory would turn the load into a PCIe
  // read storm instead of arithmetic.
  volatile int* relay = &stats->deviceStop;
  __shared__ int stopReason;  // 0 go on, 1 deadline, 2 host asked
  int reason = 0;
  while (reason == 0) {
    for (int r = 0; r < kFmaPerCheck / kChains; ++r) {
#pragma unroll
      for (int c = 0; c < kChains; ++c) v[c] = fmaf(v[c], m, k);
    }
    ++rounds;
    if (threadIdx.x == 0) {
      if (blockIdx.x == 0 && *stopFlag != 0) *relay = 1;
      stopReason = *relay != 0 ? 2 : (globalTimerNs() - start >= durationNs ? 1 : 0);
    }
    __syncthreads();
    reason = stopReason;
    __syncthreads();
  }
  float total = 0;
#pragma unroll
  for (int c = 0; c < kChains; ++c) total += v[c];
  // The sink keeps the arithmetic from being optimised away.
  if (total == 1234.5f) *sink = total;
  atomicAdd(&stats->fmaOps, rounds * kFmaPerCheck);
  atomicMax(&stats->endNs, globalTimerNs());
  if (reason == 2 && threadIdx.x == 0) atomicOr(&stats->stoppedByHost, 1ull);
}

}  // namespace

ComputeLoad::ComputeLoad(int blocksPerSm)
    : stopFlag_(sizeof(int), true), stats_(sizeof(Stats) + sizeof(float)), hostStats_(sizeof(Stats)) {
  if (blocksPerSm < 1) throw std::invalid_argument("ComputeLoad: blocksPerSm must be at least 1");
  grid_ = deviceInfo(currentDevice()).multiprocessors * blocksPerSm;
}

ComputeLoad::~ComputeLoad() {
  if (!launched_) return;
  try {
    stop(std::chrono::seconds(10));
  } catch (...) {
    // A destructor must not throw; the stream's destructor still runs.
  }
}

void ComputeLoad::start(std::chrono::nanoseconds maxDuration) {
  if (launched_) throw std::logic_error("ComputeLoad::start while the previous load has not been stopped");
  if (maxDuration.count() <= 0) throw std::invalid_argument("ComputeLoad::start: duration must be positive");
  *static_cast<volatile int*>(stopFlag_.data()) = 0;
  memsetAsync(stats_.data(), 0, sizeof(Stats), stream_);
  computeLoadKernel<<<grid_, kThreads, 0, stream_.get()>>>(
      static_cast<unsigned long long>(maxDuration.count()), static_cast<const volatile int*>(stopFlag_.devicePointer()),
      static_cast<Stats*>(stats_.data()), reinterpret_cast<float*>(static_cast<char*>(stats_.data()) + sizeof(Stats)));
  FABSCOPE_CUDA_CHECK_LAUNCH("computeLoadKernel");
  launched_ = true;  // from here on the destructor must stop the kernel
  maxDuration_ = maxDuration;
  copyAsync(hostStats_.data(), stats_.data(), sizeof(Stats), stream_);
}

bool ComputeLoad::running() const { return launched_ && !stream_.idle(); }

ComputeLoadResult ComputeLoad::stop(std::chrono::nanoseconds timeout) {
  if (!launched_) throw std::logic_error("ComputeLoad::stop without start");
  *static_cast<volatile int*>(stopFlag_.data()) = 1;
  return collect(timeout);
}

ComputeLoadResult ComputeLoad::runFor(std::chrono::nanoseconds duration) {
  start(duration);
  return collect(duration + std::chrono::seconds(10));
}

ComputeLoadResult ComputeLoad::collect(std::chrono::nanoseconds timeout) {
  launched_ = false;
  stream_.synchronize(timeout);
  Stats s;
  std::memcpy(&s, hostStats_.data(), sizeof s);
  ComputeLoadResult r;
  r.gpuSeconds = s.endNs > s.startNs ? (s.endNs - s.startNs) * 1e-9 : 0.0;
  r.fmaOpsPerSecond = r.gpuSeconds > 0 ? double(s.fmaOps) / r.gpuSeconds : 0.0;
  r.stoppedByHost = s.stoppedByHost != 0;
  return r;
}

}  // namespace fabscope::kernels::cuda
