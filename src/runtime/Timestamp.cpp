#include "runtime/Timestamp.hpp"

#include <cstdio>
#include <ctime>

namespace fabscope::runtime {

std::string utcTimestamp(Nanoseconds realtime) {
  const std::time_t seconds = static_cast<std::time_t>(realtime / 1'000'000'000);
  const int millis = static_cast<int>((realtime / 1'000'000) % 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[96];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return text;
}

}  // namespace fabscope::runtime
