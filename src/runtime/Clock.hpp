#pragma once
// One clock for every timestamp fabscope takes: CLOCK_MONOTONIC in nanoseconds.
// Read through the vDSO (about 20 ns), so it is cheap enough for the timed loop.
#include <algorithm>
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

// The cost of one monotonicNow() on this core, in ns: the least of a few
// averages over back-to-back reads (the least disturbed one). Outside timed loops.
inline double clockReadCost() noexcept {
  constexpr int reads = 2000;
  double best = 1e9;
  for (int round = 0; round < 5; ++round) {
    const Nanoseconds start = monotonicNow();
    Nanoseconds last = start;
    for (int i = 0; i < reads; ++i) last = monotonicNow();
    best = std::min(best, static_cast<double>(last - start) / reads);
  }
  return best;
}

}  // namespace fabscope::runtime
