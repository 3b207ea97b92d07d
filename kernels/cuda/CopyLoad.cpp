#include "cuda/CopyLoad.hpp"

#include <cuda_runtime.h>

#include <exception>
#include <stdexcept>

#include "cuda/CudaApi.hpp"
#include "cuda/CudaCheck.hpp"

namespace fabscope::kernels::cuda {

namespace {
// One chunk copy never takes this long on a healthy GPU (64 MiB at PCIe Gen3
// x1 is ~70 ms); past it the copy engine is hung.
constexpr std::chrono::seconds kDrainTimeout{30};
}  // namespace

struct CopyLoad::Worker {
  bool hostToDevice = true;
  int device = 0;
  std::uint64_t chunkBytes = 0;
  int depth = 0;
  PinnedHostBuffer host;
  DeviceBuffer deviceMemory;
  std::unique_ptr<Stream> stream;
  std::vector<Event> done;  // one per in-flight slot
  std::thread thread;
  std::exception_ptr error;
  std::uint64_t bytes = 0;
  double seconds = 0;

  void run(const std::atomic<bool>& stopRequested, std::chrono::nanoseconds maxDuration) {
    try {
      setDevice(device);
      const auto start = std::chrono::steady_clock::now();
      const auto deadline = start + maxDuration;
      void* dst = hostToDevice ? deviceMemory.data() : host.data();
      const void* src = hostToDevice ? host.data() : deviceMemory.data();
      const std::size_t slotBytes = chunkBytes;
      std::uint64_t issued = 0, completed = 0;
      // Ring of `depth` slots, each its own region so copies in flight never
      // share memory; a slot is reused once its event has fired.
      auto slotOffset = [&](std::uint64_t k) { return (k % depth) * slotBytes; };
      while (!stopRequested.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < deadline) {
        if (issued - completed == static_cast<std::uint64_t>(depth)) {
          done[completed % depth].synchronize(kDrainTimeout);
          ++completed;
        }
        FABSCOPE_CUDA_CHECK(cudaMemcpyAsync(
            static_cast<char*>(dst) + slotOffset(issued), static_cast<const char*>(src) + slotOffset(issued), slotBytes,
            hostToDevice ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, stream->get()));
        done[issued % depth].record(*stream);
        ++issued;
      }
      stream->synchronize(kDrainTimeout);
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      bytes = issued * slotBytes;
    } catch (...) {
      error = std::current_exception();
    }
  }
};

CopyLoad::CopyLoad(const CopyLoadConfig& config) : config_(config) {
  if (config.chunkBytes == 0 || config.depth < 1)
    throw std::invalid_argument("CopyLoad: chunkBytes and depth must be positive");
  setDevice(config.device);
  auto add = [&](bool hostToDevice) {
    auto w = std::make_unique<Worker>();
    w->hostToDevice = hostToDevice;
    w->device = config.device;
    w->chunkBytes = config.chunkBytes;
    w->depth = config.depth;
    const std::size_t bytes = config.chunkBytes * static_cast<std::size_t>(config.depth);
    w->host = PinnedHostBuffer(bytes);
    w->deviceMemory = DeviceBuffer(bytes);
    w->stream = std::make_unique<Stream>();
    for (int k = 0; k < config.depth; ++k) w->done.emplace_back(false);
    workers_.push_back(std::move(w));
  };
  if (config.direction != CopyDirection::deviceToHost) add(true);
  if (config.direction != CopyDirection::hostToDevice) add(false);
}

CopyLoad::~CopyLoad() {
  stopRequested_ = true;
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
}

void CopyLoad::start(std::chrono::nanoseconds maxDuration) {
  if (started_) throw std::logic_error("CopyLoad::start while running");
  stopRequested_ = false;
  for (auto& w : workers_) {
    w->error = nullptr;
    w->bytes = 0;
    w->seconds = 0;
    w->thread = std::thread([this, worker = w.get(), maxDuration] { worker->run(stopRequested_, maxDuration); });
  }
  started_ = true;
}

CopyLoadStats CopyLoad::stop() {
  if (!started_) throw std::logic_error("CopyLoad::stop without start");
  stopRequested_ = true;
  return joinAndCollect();
}

CopyLoadStats CopyLoad::runFor(std::chrono::nanoseconds duration) {
  start(duration);
  return joinAndCollect();  // the workers stop at their own deadline
}

CopyLoadStats CopyLoad::joinAndCollect() {
  // Each worker bounds its own GPU waits (kDrainTimeout), so join cannot hang.
  for (auto& w : workers_) w->thread.join();
  started_ = false;
  for (auto& w : workers_)
    if (w->error) std::rethrow_exception(w->error);
  CopyLoadStats stats;
  for (auto& w : workers_) {
    (w->hostToDevice ? stats.hostToDeviceBytes : stats.deviceToHostBytes) = w->bytes;
    (w->hostToDevice ? stats.hostToDeviceSeconds : stats.deviceToHostSeconds) = w->seconds;
  }
  return stats;
}

}  // namespace fabscope::kernels::cuda
