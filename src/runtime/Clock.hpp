#pragma once
// One clock for every timestamp fabscope takes: CLOCK_MONOTONIC in nanoseconds.
// Read through the vDSO (about 20 ns), so it is cheap enough for the timed loop.
#include <cstdint>
#include <ctime>

namespace fabscope::runtime {

using Nanoseconds = std::int64_t;

inline Nanoseconds monotonicNow() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<Nanoseconds>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline Nanoseconds realtimeNow() noexcept {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<Nanoseconds>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace fabscope::runtime
