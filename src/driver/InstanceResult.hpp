#pragma once
#include <string>

#include "stats/Statistics.hpp"
#include "suite/TestKind.hpp"

namespace fabscope::driver {

// What rank 0 keeps of a finished instance for the closing table.
struct InstanceResult {
  int index = 0;
  std::string name, kind, caseId, condition, pattern, pass, status, error;
  std::int64_t bytes = 0;
  suite::Metric metric = suite::Metric::latency;
  stats::LatencyStats latency;  // per sample, after sample_divisor (ns)
  double bytesPerSample = 0;    // bandwidth: mean bytes in one sample
  double gbpsMean = 0;
  double impactMean = 0, impactP99 = 0;  // 0 = not computed
  std::string spansSites;  // the sites of a measuring group that spans more than one
};

}  // namespace fabscope::driver
