#include "cuda/CudaApi.hpp"

#include <thread>
#include <utility>

#include "cuda/CudaCheck.hpp"

namespace fabscope::kernels::cuda {

namespace {

// Polls `query` until it stops answering cudaErrorNotReady or the deadline
// passes. Spins briefly first (short waits are common and latency matters),
// then yields.
template <class Query>
void pollUntilDone(Query query, std::chrono::nanoseconds timeout, const char* what) {
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t polls = 0;; ++polls) {
    const cudaError_t status = query();
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) detail::throwCudaError(status, what, __FILE__, __LINE__);
    if (std::chrono::steady_clock::now() - start > timeout)
      throw CudaTimeout(std::string(what) + ": GPU work not finished after " +
                        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) + " ms");
    if (polls > 1000) std::this_thread::yield();
  }
}

}  // namespace

int deviceCount() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return count;
}

DeviceInfo deviceInfo(int device) {
  cudaDeviceProp prop{};
  FABSCOPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceInfo info;
  info.index = device;
  info.name = prop.name;
  info.multiprocessors = prop.multiProcessorCount;
  info.computeMajor = prop.major;
  info.computeMinor = prop.minor;
  info.memoryBytes = prop.totalGlobalMem;
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) == cudaSuccess) info.pciBusId = bus;
  return info;
}

void setDevice(int device) { FABSCOPE_CUDA_CHECK(cudaSetDevice(device)); }

int currentDevice() {
  int device = 0;
  FABSCOPE_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

// --- Stream -----------------------------------------------------------------
Stream::Stream() {
  cudaStream_t s = nullptr;
  FABSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  handle_ = s;
}
Stream::~Stream() {
  if (handle_) (void)cudaStreamDestroy(handle_);
}
Stream::Stream(Stream&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (handle_) (void)cudaStreamDestroy(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}
void Stream::synchronize(std::chrono::nanoseconds timeout) const {
  pollUntilDone([this] { return cudaStreamQuery(handle_); }, timeout, "cudaStreamQuery");
}
bool Stream::idle() const {
  const cudaError_t status = cudaStreamQuery(handle_);
  if (status == cudaSuccess) return true;
  if (status == cudaErrorNotReady) return false;
  detail::throwCudaError(status, "cudaStreamQuery", __FILE__, __LINE__);
}

// --- Event ------------------------------------------------------------------
Event::Event(bool timing) {
  cudaEvent_t e = nullptr;
  FABSCOPE_CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  handle_ = e;
}
Event::~Event() {
  if (handle_) (void)cudaEventDestroy(handle_);
}
Event::Event(Event&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (handle_) (void)cudaEventDestroy(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}
void Event::record(const Stream& stream) { FABSCOPE_CUDA_CHECK(cudaEventRecord(handle_, stream.get())); }
void Event::synchronize(std::chrono::nanoseconds timeout) const {
  pollUntilDone([this] { return cudaEventQuery(handle_); }, timeout, "cudaEventQuery");
}
bool Event::done() const {
  const cudaError_t status = cudaEventQuery(handle_);
  if (status == cudaSuccess) return true;
  if (status == cudaErrorNotReady) return false;
  detail::throwCudaError(status, "cudaEventQuery", __FILE__, __LINE__);
}
float Event::elapsedMs(const Event& start, const Event& stop) {
  float ms = 0;
  FABSCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, start.handle_, stop.handle_));
  return ms;
}

// --- DeviceBuffer -----------------------------------------------------------
DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes > 0) FABSCOPE_CUDA_CHECK(cudaMalloc(&data_, bytes));
}
DeviceBuffer::~DeviceBuffer() {
  if (data_) (void)cudaFree(data_);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) (void)cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

// --- PinnedHostBuffer -------------------------------------------------------
PinnedHostBuffer::PinnedHostBuffer(std::size_t bytes, bool mapped) : bytes_(bytes), mapped_(mapped) {
  if (bytes > 0) FABSCOPE_CUDA_CHECK(cudaHostAlloc(&data_, bytes, mapped ? cudaHostAllocMapped : cudaHostAllocDefault));
}
PinnedHostBuffer::~PinnedHostBuffer() {
  if (data_) (void)cudaFreeHost(data_);
}
PinnedHostBuffer::PinnedHostBuffer(PinnedHostBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      mapped_(std::exchange(other.mapped_, false)) {}
PinnedHostBuffer& PinnedHostBuffer::operator=(PinnedHostBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) (void)cudaFreeHost(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    mapped_ = std::exchange(other.mapped_, false);
  }
  return *this;
}
void* PinnedHostBuffer::devicePointer() const {
  if (!mapped_) throw CudaError("PinnedHostBuffer::devicePointer: buffer was not allocated as mapped");
  void* device = nullptr;
  FABSCOPE_CUDA_CHECK(cudaHostGetDevicePointer(&device, data_, 0));
  return device;
}

void copyAsync(void* dst, const void* src, std::size_t bytes, const Stream& stream) {
  FABSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream.get()));
}
void memsetAsync(void* dst, int value, std::size_t bytes, const Stream& stream) {
  FABSCOPE_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, stream.get()));
}
void copy(void* dst, const void* src, std::size_t bytes) {
  FABSCOPE_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
}

}  // namespace fabscope::kernels::cuda
