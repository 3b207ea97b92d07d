#pragma once
#include <string>

#include "runtime/Clock.hpp"

namespace fabscope::runtime {

// ISO 8601 UTC with milliseconds, e.g. 2026-11-29T14:38:27.123Z.
std::string utcTimestamp(Nanoseconds realtime);

}  // namespace fabscope::runtime
