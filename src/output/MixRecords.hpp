#pragma once
// Rows of the mix test's /tests/NNNN/mix_classes table (docs/file-format.md):
// one per traffic class and phase, written by the instance's rank 0.
#include <cstddef>
#include <cstdint>

#include "output/Records.hpp"

namespace fabscope::output {

struct MixClassRecord {
  char traffic_class[16];  // allreduce | alltoall | kvpush | api
  char phase[16];          // isolated | together
  std::int32_t ranks;      // ranks that recorded samples of the class
  std::int64_t samples;    // operations measured (all ranks)
  std::int64_t bytes;      // bytes of one operation (the largest, per rank)
  double mean_ns, p50_ns, p99_ns, max_ns;
  std::int64_t span_ns;    // first start to last end of the class in the phase (global clock)
  double inflation_mean;   // together / isolated (NaN in isolated rows)
  double inflation_p99;
  std::int64_t verified;   // operations whose every byte was checked and right
  std::int64_t failed;     // operations whose check failed
};

template <>
inline H5Type compoundTypeOf<MixClassRecord>() {
  H5Type type(H5Tcreate(H5T_COMPOUND, sizeof(MixClassRecord)), "H5Tcreate");
  auto field = [&](const char* name, std::size_t offset, hid_t t) {
    checkH5(H5Tinsert(type.get(), name, offset, t), std::string("H5Tinsert ") + name);
  };
  H5Type str16 = fixedStringType(sizeof(MixClassRecord::phase));
  field("class", offsetof(MixClassRecord, traffic_class), str16.get());
  field("phase", offsetof(MixClassRecord, phase), str16.get());
  field("ranks", offsetof(MixClassRecord, ranks), H5T_NATIVE_INT32);
  field("samples", offsetof(MixClassRecord, samples), H5T_NATIVE_INT64);
  field("bytes", offsetof(MixClassRecord, bytes), H5T_NATIVE_INT64);
  field("mean_ns", offsetof(MixClassRecord, mean_ns), H5T_NATIVE_DOUBLE);
  field("p50_ns", offsetof(MixClassRecord, p50_ns), H5T_NATIVE_DOUBLE);
  field("p99_ns", offsetof(MixClassRecord, p99_ns), H5T_NATIVE_DOUBLE);
  field("max_ns", offsetof(MixClassRecord, max_ns), H5T_NATIVE_DOUBLE);
  field("span_ns", offsetof(MixClassRecord, span_ns), H5T_NATIVE_INT64);
  field("inflation_mean", offsetof(MixClassRecord, inflation_mean), H5T_NATIVE_DOUBLE);
  field("inflation_p99", offsetof(MixClassRecord, inflation_p99), H5T_NATIVE_DOUBLE);
  field("verified", offsetof(MixClassRecord, verified), H5T_NATIVE_INT64);
  field("failed", offsetof(MixClassRecord, failed), H5T_NATIVE_INT64);
  return type;
}

}  // namespace fabscope::output
