#include <cstring>

#include "cuda/ComputeLoad.hpp"
#include "cuda/CudaCheck.hpp"

namespace fabscope::kernels::cuda {

namespace {

constexpr unsigned kThreads = 256;
// FMAs between looks at the clock and the flag: long enough that the checks
// cost nothing, short enough (~tens of microseconds) to stop promptly.
constexpr int kFmaPerCheck = 4096;

struct Stats {
  unsigned long long startNs;
  unsigned long long endNs;
  unsigned long long fmaOps;
  unsigned long long stoppedByHost;
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
  // Four independent dependency chains so the FMA pipes stay full.
  float a = threadIdx.x * 1e-3f, b = blockIdx.x * 1e-3f, c = 1.0001f, d = 0.9999f;
  unsigned long long rounds = 0;
  bool byHost = false;
  for (;;) {
#pragma unroll 16
    for (int k = 0; k < kFmaPerCheck / 4; ++k) {
      a = fmaf(a, c, d);
      b = fmaf(b, d, c);
      c = fmaf(c, a, -b);
      d = fmaf(d, b, -a);
    }
    ++rounds;
    if (*stopFlag != 0) {
      byHost = true;
      break;
    }
    if (globalTimerNs() - start >= durationNs) break;
  }
  // The sink keeps the arithmetic from being optimised away.
  if (a + b + c + d == 1234.5f) *sink = a;
  atomicAdd(&stats->fmaOps, rounds * kFmaPerCheck);
  atomicMax(&stats->endNs, globalTimerNs());
  if (byHost) atomicOr(&stats->stoppedByHost, 1ull);
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
      static_cast<Stats*>(stats_.data()),
      reinterpret_cast<float*>(static_cast<char*>(stats_.data()) + sizeof(Stats)));
  FABSCOPE_CUDA_CHECK_LAUNCH("computeLoadKernel");
  copyAsync(hostStats_.data(), stats_.data(), sizeof(Stats), stream_);
  maxDuration_ = maxDuration;
  launched_ = true;
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
