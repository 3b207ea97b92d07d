#include "memory/MemoryKinds.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "fabscope/BuildConfig.hpp"
#include "runtime/Errors.hpp"
#if FABSCOPE_HAVE_CUDA
#include "cuda/CudaApi.hpp"
#endif

namespace fabscope::memory {
namespace {

// --- host: page-aligned and touched once, so the first timed iteration pays no page faults

std::shared_ptr<std::byte> hostAllocate(std::size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes ? bytes : 1) != 0) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return {static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); }};
}
void hostCopy(std::byte* to, const std::byte* from, std::size_t bytes) { std::memcpy(to, from, bytes); }
void hostZero(std::byte* data, std::size_t bytes) { std::memset(data, 0, bytes); }

#if FABSCOPE_HAVE_CUDA
// --- cuda (device memory on the current GPU) and cuda-host (pinned host memory)

template <typename CudaBuffer>
std::shared_ptr<std::byte> owned(CudaBuffer buffer) {
  auto owner = std::make_shared<CudaBuffer>(std::move(buffer));
  return {owner, static_cast<std::byte*>(owner->data())};  // aliasing: frees with the owner
}
void deviceZero(std::byte* data, std::size_t bytes) {
  kernels::cuda::Stream stream;
  kernels::cuda::memsetAsync(data, 0, bytes, stream);
  stream.synchronize(std::chrono::seconds(30));
}
std::shared_ptr<std::byte> deviceAllocate(std::size_t bytes) {
  auto p = owned(kernels::cuda::DeviceBuffer(bytes ? bytes : 1));
  deviceZero(p.get(), bytes);
  return p;
}
void deviceCopy(std::byte* to, const std::byte* from, std::size_t bytes) { kernels::cuda::copy(to, from, bytes); }
std::shared_ptr<std::byte> pinnedAllocate(std::size_t bytes) {
  auto p = owned(kernels::cuda::PinnedHostBuffer(bytes ? bytes : 1));
  std::memset(p.get(), 0, bytes);
  return p;
}
constexpr const char* kCuda = "";
#else
[[noreturn]] void noCuda() { throw UsageError("memory: cuda and cuda-host need a build with CUDA"); }
std::shared_ptr<std::byte> deviceAllocate(std::size_t) { noCuda(); }
void deviceCopy(std::byte*, const std::byte*, std::size_t) { noCuda(); }
void deviceZero(std::byte*, std::size_t) { noCuda(); }
std::shared_ptr<std::byte> pinnedAllocate(std::size_t) { noCuda(); }
constexpr const char* kCuda = "built without CUDA";
#endif

}  // namespace

const std::vector<MemoryKindOps>& memoryKinds() {
  static const std::vector<MemoryKindOps> kinds = {
      {MemoryKind::host, "host", "", true, hostAllocate, hostCopy, hostCopy, hostZero},
      {MemoryKind::cuda, "cuda", kCuda, false, deviceAllocate, deviceCopy, deviceCopy, deviceZero},
      {MemoryKind::cudaHost, "cuda-host", kCuda, true, pinnedAllocate, hostCopy, hostCopy, hostZero},
  };
  return kinds;
}

const MemoryKindOps& memoryKindOps(MemoryKind kind) {
  for (const auto& k : memoryKinds())
    if (k.kind == kind) return k;
  throw std::logic_error("memory kind missing from the registry");
}

const MemoryKindOps& memoryKindOps(const std::string& name) {
  std::string known;
  for (const auto& k : memoryKinds()) {
    if (name == k.name) return k;
    known += (known.empty() ? "" : ", ") + std::string(k.name);
  }
  throw UsageError("unknown memory kind '" + name + "' (expected one of " + known + ")");
}

}  // namespace fabscope::memory
