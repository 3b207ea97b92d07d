#pragma once
// RAII over HDF5 identifiers, and the few typed helpers fabscope needs.
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

#include "runtime/Errors.hpp"

namespace fabscope::output {

template <herr_t (*Close)(hid_t)>
class Hid {
 public:
  Hid() = default;
  explicit Hid(hid_t id, const char* what) : id_(id) {
    if (id_ < 0) throw RuntimeFailure(std::string("HDF5: ") + what + " failed");
  }
  ~Hid() { reset(); }
  Hid(Hid&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)) {}
  Hid& operator=(Hid&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;

  hid_t get() const noexcept { return id_; }
  explicit operator bool() const noexcept { return id_ >= 0; }
  // Gives the identifier up without closing it (closing may be collective).
  hid_t release() noexcept { return std::exchange(id_, H5I_INVALID_HID); }
  void reset() noexcept {
    if (id_ >= 0) Close(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

using H5File = Hid<H5Fclose>;
using H5Group = Hid<H5Gclose>;
using H5Dataset = Hid<H5Dclose>;
using H5Space = Hid<H5Sclose>;
using H5Type = Hid<H5Tclose>;
using H5Plist = Hid<H5Pclose>;
using H5Attribute = Hid<H5Aclose>;

inline void checkH5(herr_t rc, const std::string& what) {
  if (rc < 0) throw RuntimeFailure("HDF5: " + what + " failed");
}

using AttributeValue = std::variant<std::int64_t, double, std::string>;

// Creates or replaces attribute `name` on object `id`.
void writeAttribute(hid_t id, const std::string& name, const AttributeValue& value);

// A fixed-length, NUL-padded string type of `bytes` bytes for table columns.
H5Type fixedStringType(std::size_t bytes);

// Silences HDF5's own error stack printing: errors surface as exceptions.
void quietHdf5ErrorStack();

}  // namespace fabscope::output
