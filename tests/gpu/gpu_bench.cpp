// fabscope_gpu_bench: the GPU data-movement helpers against the plain CUDA
// operation moving the same bytes, as ratios, in one run.
//  1. KV gather/scatter kernels vs cudaMemcpyAsync device-to-device of the
//     same total bytes, per block size (2 KiB .. 64 KiB; MLA sizes included).
//     Target: >= 0.80 for 8 KiB+ blocks.
//  2. CopyLoad (host<->GPU copy condition) vs a plain pinned cudaMemcpyAsync
//     loop, per direction. Target: >= 0.95.
//  3. The cost of recording a sample on the GPU path: a small device-to-device
//     copy polled to completion (what fabscope's GPU tests wait on), bare vs
//     with the two clock reads and the SampleBuffer store fabscope adds.
// Exit 0 after printing; 77 when there is no GPU.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "GpuTestSupport.hpp"
#include "cuda/CopyLoad.hpp"
#include "cuda/CudaApi.hpp"
#include "cuda/CudaCheck.hpp"
#include "cuda/KvKernelsCuda.hpp"
#include "kinds/SampleBuffer.hpp"
#include "runtime/Clock.hpp"

namespace fk = fabscope::kernels;
namespace fc = fabscope::kernels::cuda;
using namespace std::chrono_literals;

namespace {

// Median-free but warm: best of `reps` timed batches, each `iters` launches.
template <class Launch>
double bestSeconds(const fc::Stream& stream, int reps, int iters, Launch launch) {
  fc::Event start, stop;
  for (int w = 0; w < 3; ++w) launch();
  stream.synchronize(60s);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    start.record(stream);
    for (int i = 0; i < iters; ++i) launch();
    stop.record(stream);
    stop.synchronize(60s);
    best = std::min(best, fc::Event::elapsedMs(start, stop) / 1e3 / iters);
  }
  return best;
}

void benchGatherScatter() {
  std::printf("\n== KV gather/scatter kernels vs cudaMemcpyAsync D2D (same bytes) ==\n");
  std::printf("%-12s %7s %9s %12s %12s %7s %12s %7s\n", "block_bytes", "blocks", "total_MiB", "memcpy_GB/s",
              "gather_GB/s", "ratio", "scatter_GB/s", "ratio");
  const std::uint64_t sizes[] = {2048, 4096, 8192, 9216, 16384, 18432, 32768, 65536};
  constexpr std::uint32_t layers = 8, planes = 2;
  constexpr std::uint64_t totalTarget = 256ull << 20;
  fc::Stream stream;
  for (const std::uint64_t blockBytes : sizes) {
    const std::uint64_t n = totalTarget / (layers * planes * blockBytes);
    const fk::KvCopyGeometry g{layers, planes, 2 * n, blockBytes};
    const auto ids = fabscope::gputest::scatteredIds(g.poolBlocks, n, blockBytes);
    const std::uint64_t bytes = g.stagingBytes(n, g.allLayers());
    fc::DeviceBuffer pool(g.poolBytes()), staging(bytes), copyDst(bytes);
    fc::memsetAsync(pool.data(), 1, pool.size(), stream);
    fc::memsetAsync(staging.data(), 2, staging.size(), stream);
    fc::DeviceBlockList list(n);
    list.upload(ids, g, stream);
    const double tMemcpy =
        bestSeconds(stream, 5, 10, [&] { fc::copyAsync(copyDst.data(), staging.data(), bytes, stream); });
    const double tGather = bestSeconds(
        stream, 5, 10, [&] { fc::gatherKvBlocks(pool.data(), staging.data(), g, list, g.allLayers(), stream); });
    const double tScatter = bestSeconds(
        stream, 5, 10, [&] { fc::scatterKvBlocks(staging.data(), pool.data(), g, list, g.allLayers(), stream); });
    std::printf("%-12llu %7llu %9.1f %12.1f %12.1f %7.2f %12.1f %7.2f\n", static_cast<unsigned long long>(blockBytes),
                static_cast<unsigned long long>(n * layers * planes), bytes / 1048576.0, bytes / tMemcpy / 1e9,
                bytes / tGather / 1e9, tMemcpy / tGather, bytes / tScatter / 1e9, tMemcpy / tScatter);
  }
}

double plainCopyLoopGBps(bool hostToDevice, std::uint64_t chunk, int depth, double seconds) {
  fc::PinnedHostBuffer host(chunk * depth);
  fc::DeviceBuffer device(chunk * depth);
  fc::Stream stream;
  fc::Event start, stop;
  // Calibrate the iteration count for roughly `seconds`.
  auto run = [&](int iters) {
    start.record(stream);
    for (int i = 0; i < iters; ++i) {
      const std::uint64_t off = (i % depth) * chunk;
      if (hostToDevice)
        FABSCOPE_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(device.data()) + off,
                                            static_cast<char*>(host.data()) + off, chunk, cudaMemcpyHostToDevice,
                                            stream.get()));
      else
        FABSCOPE_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(host.data()) + off,
                                            static_cast<char*>(device.data()) + off, chunk, cudaMemcpyDeviceToHost,
                                            stream.get()));
    }
    stop.record(stream);
    stop.synchronize(120s);
    return fc::Event::elapsedMs(start, stop) / 1e3;
  };
  const double probe = run(4) / 4;
  const int iters = std::max(8, static_cast<int>(seconds / probe));
  const double t = run(iters);
  return chunk * double(iters) / t / 1e9;
}

void benchCopyLoad() {
  std::printf("\n== CopyLoad vs plain pinned cudaMemcpyAsync loop (64 MiB chunks) ==\n");
  std::printf("%-14s %12s %14s %7s\n", "direction", "plain_GB/s", "copyload_GB/s", "ratio");
  constexpr std::uint64_t chunk = 64ull << 20;
  for (const bool h2d : {true, false}) {
    const double plain = plainCopyLoopGBps(h2d, chunk, 4, 1.0);
    fc::CopyLoadConfig config;
    config.direction = h2d ? fc::CopyDirection::hostToDevice : fc::CopyDirection::deviceToHost;
    config.chunkBytes = chunk;
    fc::CopyLoad load(config);
    const auto s = load.runFor(1s);
    const double ours = h2d ? s.hostToDeviceGBps() : s.deviceToHostGBps();
    std::printf("%-14s %12.1f %14.1f %7.2f\n", h2d ? "host->device" : "device->host", plain, ours, ours / plain);
  }
  fc::CopyLoadConfig both;
  both.chunkBytes = chunk;
  fc::CopyLoad load(both);
  const auto s = load.runFor(1s);
  std::printf("%-14s %12s %14s  H2D %.1f GB/s + D2H %.1f GB/s concurrently\n", "both", "-", "-", s.hostToDeviceGBps(),
              s.deviceToHostGBps());
}

// One operation of the GPU path: an 8-byte copy on the stream, polled until
// the stream is idle (cudaStreamQuery, as fabscope's waits do).
void smallCopyPolled(void* dst, const void* src, cudaStream_t stream) {
  FABSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, 8, cudaMemcpyDeviceToDevice, stream));
  while (cudaStreamQuery(stream) == cudaErrorNotReady) {
  }
}

void benchSampleRecording() {
  std::printf("\n== Recording a sample on the GPU path (8 B D2D copy, polled) ==\n");
  constexpr int iterations = 20000, rounds = 7;
  fc::DeviceBuffer a(64), b(64);
  fc::Stream stream;
  fabscope::suite::SampleBuffer samples(iterations);
  double bare = 1e30, recorded = 1e30;
  for (int round = 0; round < rounds; ++round) {  // alternated, best of each: the machine is shared
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) smallCopyPolled(b.data(), a.data(), stream.get());
    auto t1 = std::chrono::steady_clock::now();
    bare = std::min(bare, std::chrono::duration<double, std::nano>(t1 - t0).count() / iterations);
    samples.clear();
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
      const auto post = fabscope::runtime::monotonicNow();
      smallCopyPolled(b.data(), a.data(), stream.get());
      const auto done = fabscope::runtime::monotonicNow();
      samples.record(0, i, -1, 8, post, done);
    }
    t1 = std::chrono::steady_clock::now();
    recorded = std::min(recorded, std::chrono::duration<double, std::nano>(t1 - t0).count() / iterations);
  }
  std::printf("%-22s %10s %14s %12s %7s\n", "operation", "bare_ns", "recorded_ns", "overhead_ns", "ratio");
  std::printf("%-22s %10.0f %14.0f %12.0f %7.3f\n", "8B copy + poll", bare, recorded, recorded - bare, recorded / bare);
}

}  // namespace

int main() {
  if (fc::deviceCount() == 0) {
    std::printf("fabscope_gpu_bench: no CUDA device, nothing measured\n");
    return 77;
  }
  try {
    const auto info = fc::deviceInfo(0);
    std::printf("fabscope_gpu_bench on GPU 0: %s (%d SMs, PCI %s)\n", info.name.c_str(), info.multiprocessors,
                info.pciBusId.c_str());
    benchGatherScatter();
    benchCopyLoad();
    benchSampleRecording();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fabscope_gpu_bench: %s\n", e.what());
    return 3;
  }
  return 0;
}
