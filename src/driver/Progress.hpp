#pragma once
// Progress on stderr for runs that last more than a few seconds: test i of N,
// elapsed, and an estimate of what is left. Printed between tests only.
#include <cstdio>
#include <string>

#include "runtime/Clock.hpp"

namespace fabscope::driver {

class Progress {
 public:
  Progress(int total, bool enabled) : total_(total), enabled_(enabled), start_(runtime::monotonicNow()) {}
  void setTotal(int total) { total_ = total; }

  void starting(int done, const std::string& what) const {
    if (!enabled_) return;
    const double elapsed = static_cast<double>(runtime::monotonicNow() - start_) / 1e9;
    if (elapsed < quietSeconds) return;
    const double left = done > 0 ? elapsed / done * (total_ - done) : 0;
    std::fprintf(stderr, "[%d/%d] %s  (elapsed %.0fs, ~%.0fs left)\n", done + 1, total_, what.c_str(), elapsed,
                 left);
    std::fflush(stderr);
  }

 private:
  static constexpr double quietSeconds = 3.0;
  int total_;
  bool enabled_;
  runtime::Nanoseconds start_;
};

}  // namespace fabscope::driver
