#pragma once
// RAII wrappers over the CUDA runtime for code compiled without nvcc: this
// header names no CUDA type beyond the opaque stream/event structs, so any
// .cpp in the project may include it. Only call into it when the build has
// CUDA (fabscope/BuildConfig.hpp: FABSCOPE_HAVE_CUDA == 1); the definitions are
// compiled only then.
//
// Every failing runtime call throws CudaError with the call, the CUDA error
// name and string, and the source position.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

struct CUstream_st;  // cudaStream_t is CUstream_st*
struct CUevent_st;   // cudaEvent_t is CUevent_st*

namespace fabscope::kernels::cuda {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A wait on the GPU ran past its deadline (a hung kernel or copy); the work
// may still be queued, so the device should be treated as unusable.
class CudaTimeout : public CudaError {
 public:
  using CudaError::CudaError;
};

// Number of usable devices; 0 when there is no driver or no GPU (never throws).
int deviceCount() noexcept;

struct DeviceInfo {
  int index = 0;
  std::string name;
  int multiprocessors = 0;
  int computeMajor = 0;
  int computeMinor = 0;
  std::size_t memoryBytes = 0;
  std::string pciBusId;
};
DeviceInfo deviceInfo(int device);
void setDevice(int device);
int currentDevice();

class Stream {
 public:
  Stream();  // non-blocking stream on the current device
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  CUstream_st* get() const { return handle_; }
  // Waits for all queued work, polling so a hang becomes CudaTimeout.
  void synchronize(std::chrono::nanoseconds timeout) const;
  bool idle() const;  // true when all queued work has finished

 private:
  CUstream_st* handle_ = nullptr;
};

class Event {
 public:
  explicit Event(bool timing = true);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  CUevent_st* get() const { return handle_; }
  void record(const Stream& stream);
  void synchronize(std::chrono::nanoseconds timeout) const;
  bool done() const;
  // Milliseconds between two recorded, completed timing events.
  static float elapsedMs(const Event& start, const Event& stop);

 private:
  CUevent_st* handle_ = nullptr;
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);  // cudaMalloc on the current device
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Page-locked host memory (cudaHostAlloc), optionally mapped into the
// device's address space (devicePointer()).
class PinnedHostBuffer {
 public:
  PinnedHostBuffer() = default;
  explicit PinnedHostBuffer(std::size_t bytes, bool mapped = false);
  ~PinnedHostBuffer();
  PinnedHostBuffer(PinnedHostBuffer&& other) noexcept;
  PinnedHostBuffer& operator=(PinnedHostBuffer&& other) noexcept;
  PinnedHostBuffer(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return bytes_; }
  void* devicePointer() const;  // only for mapped buffers

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  bool mapped_ = false;
};

// cudaMemcpyAsync with cudaMemcpyDefault (direction from unified addressing).
void copyAsync(void* dst, const void* src, std::size_t bytes, const Stream& stream);
void memsetAsync(void* dst, int value, std::size_t bytes, const Stream& stream);
// Blocking copy for setup and error paths.
void copy(void* dst, const void* src, std::size_t bytes);

}  // namespace fabscope::kernels::cuda
