#pragma once
// Page-aligned host memory, touched once at allocation so the first timed
// iteration does not pay for page faults.
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace fabscope::transport {

class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(std::size_t bytes) : bytes_(bytes) {
    void* p = nullptr;
    if (posix_memalign(&p, 4096, bytes ? bytes : 1) != 0) throw std::bad_alloc();
    std::memset(p, 0, bytes);
    data_.reset(static_cast<std::byte*>(p));
  }
  std::byte* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return bytes_; }

 private:
  struct Free {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> data_;
  std::size_t bytes_ = 0;
};

}  // namespace fabscope::transport
