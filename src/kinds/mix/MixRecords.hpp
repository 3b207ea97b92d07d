#pragma once
// The mix kind's records: rows of /tests/NNNN/mix_classes (docs/file-format.md),
// one per traffic class and phase, written by the instance's rank 0, and the
// flags that label its samples.
#include <cstdint>
#include <vector>

#include "output/RecordLayout.hpp"

namespace fabscope::suite::mix {

// A mix instance's samples: the traffic class + 1 in bits 16-18 (1 allreduce,
// 2 alltoall, 3 kvpush, 4 api) and the phase (set: together; clear: isolated).
namespace sample_flags {
inline constexpr std::uint32_t classShift = 16;
inline constexpr std::uint32_t classMask = 0x7u << classShift;
inline constexpr std::uint32_t together = 1u << 19;
}  // namespace sample_flags

struct MixClassRecord {
  char traffic_class[16];  // allreduce | alltoall | kvpush | api
  char phase[16];          // isolated | together
  std::int32_t ranks;      // ranks that recorded samples of the class
  std::int64_t samples;    // operations measured (all ranks)
  std::int64_t bytes;      // bytes of one operation (the largest, per rank)
  double mean_ns, p50_ns, p99_ns, max_ns;
  std::int64_t span_ns;   // first start to last end of the class in the phase (global clock)
  double inflation_mean;  // together / isolated (NaN in isolated rows)
  double inflation_p99;
  std::int64_t verified;  // operations whose every byte was checked and right
  std::int64_t failed;    // operations whose check failed
  static std::vector<output::Column> columns();
};

inline std::vector<output::Column> MixClassRecord::columns() {
  using R = MixClassRecord;
  using output::column;
  return {column("class", &R::traffic_class),
          column("phase", &R::phase),
          column("ranks", &R::ranks),
          column("samples", &R::samples),
          column("bytes", &R::bytes, "B"),
          column("mean_ns", &R::mean_ns, "ns"),
          column("p50_ns", &R::p50_ns, "ns"),
          column("p99_ns", &R::p99_ns, "ns"),
          column("max_ns", &R::max_ns, "ns"),
          column("span_ns", &R::span_ns, "ns"),
          column("inflation_mean", &R::inflation_mean, "ratio"),
          column("inflation_p99", &R::inflation_p99, "ratio"),
          column("verified", &R::verified),
          column("failed", &R::failed)};
}

}  // namespace fabscope::suite::mix
