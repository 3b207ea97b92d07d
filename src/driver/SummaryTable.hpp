#pragma once
#include <cstdio>
#include <vector>

#include "driver/InstanceResult.hpp"

namespace fabscope::driver {

// The table rank 0 prints at the end: latency in microseconds, bandwidth in
// GB/s (10^9 B/s) at the p50/p99/p99.9 sample time and the slowest sample.
void printSummaryTable(std::FILE* out, const std::vector<InstanceResult>& results);

}  // namespace fabscope::driver
