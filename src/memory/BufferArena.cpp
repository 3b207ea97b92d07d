#include "memory/BufferArena.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include "fabscope/BuildConfig.hpp"
#include "host/PatternFill.hpp"
#include "runtime/Errors.hpp"
#if FABSCOPE_HAVE_CUDA
#include "cuda/CudaApi.hpp"
#endif

namespace fabscope::suite {
namespace {

std::shared_ptr<std::byte> hostBuffer(std::size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes ? bytes : 1) != 0) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return {static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); }};
}

#if FABSCOPE_HAVE_CUDA
template <typename CudaBuffer>
std::shared_ptr<std::byte> cudaBuffer(CudaBuffer buffer) {
  auto owner = std::make_shared<CudaBuffer>(std::move(buffer));
  return {owner, static_cast<std::byte*>(owner->data())};  // aliasing: frees with the owner
}
#endif

[[noreturn, maybe_unused]] void noCuda(MemoryKind kind) {
  throw UsageError(std::string("memory: ") + (kind == MemoryKind::cuda ? "cuda" : "cuda-host") +
                   " needs a build with CUDA");
}

}  // namespace

MemoryKind memoryKindOf(const std::string& name) {
  if (name == "host") return MemoryKind::host;
  if (name == "cuda") return MemoryKind::cuda;
  if (name == "cuda-host") return MemoryKind::cudaHost;
  throw UsageError("unknown memory kind '" + name + "' (expected host, cuda or cuda-host)");
}

std::byte* BufferArena::allocate(std::size_t bytes, MemoryKind kind) {
  switch (kind) {
    case MemoryKind::host: buffers_.push_back(hostBuffer(bytes)); break;
#if FABSCOPE_HAVE_CUDA
    case MemoryKind::cuda: {
      buffers_.push_back(cudaBuffer(kernels::cuda::DeviceBuffer(bytes ? bytes : 1)));
      zeroBuffer(buffers_.back().get(), bytes, kind);
      break;
    }
    case MemoryKind::cudaHost: {
      buffers_.push_back(cudaBuffer(kernels::cuda::PinnedHostBuffer(bytes ? bytes : 1)));
      std::memset(buffers_.back().get(), 0, bytes);
      break;
    }
#else
    default: noCuda(kind);
#endif
  }
  return buffers_.back().get();
}

void fillPattern(std::byte* data, std::size_t bytes, std::uint64_t seed, MemoryKind kind) {
  if (kind != MemoryKind::cuda) return kernels::fillPatternHost(data, bytes, seed);
#if FABSCOPE_HAVE_CUDA
  std::vector<std::byte> host(bytes);
  kernels::fillPatternHost(host.data(), bytes, seed);
  kernels::cuda::copy(data, host.data(), bytes);
#else
  noCuda(kind);
#endif
}

std::size_t verifyPattern(const std::byte* data, std::size_t bytes, std::uint64_t seed, MemoryKind kind) {
  if (kind != MemoryKind::cuda) return kernels::verifyPatternHost(data, bytes, seed);
#if FABSCOPE_HAVE_CUDA
  std::vector<std::byte> host(bytes);
  kernels::cuda::copy(host.data(), data, bytes);
  return kernels::verifyPatternHost(host.data(), bytes, seed);
#else
  noCuda(kind);
#endif
}

void corruptOneByte(std::byte* data, std::size_t bytes, MemoryKind kind) {
  if (bytes == 0) return;
  std::byte* at = data + bytes / 2;
  if (kind != MemoryKind::cuda) {
    *at ^= std::byte{0x5A};
    return;
  }
#if FABSCOPE_HAVE_CUDA
  std::byte value{};
  kernels::cuda::copy(&value, at, 1);
  value ^= std::byte{0x5A};
  kernels::cuda::copy(at, &value, 1);
#else
  noCuda(kind);
#endif
}

void zeroBuffer(std::byte* data, std::size_t bytes, MemoryKind kind) {
  if (kind != MemoryKind::cuda) {
    std::memset(data, 0, bytes);
    return;
  }
#if FABSCOPE_HAVE_CUDA
  kernels::cuda::Stream stream;
  kernels::cuda::memsetAsync(data, 0, bytes, stream);
  stream.synchronize(std::chrono::seconds(30));
#else
  noCuda(kind);
#endif
}

}  // namespace fabscope::suite
