#pragma once
// Statistics from raw samples, never from averages of averages. Percentiles
// are linear-interpolated exactly like numpy.percentile's default, so the
// Python analysis reproduces every number fabscope prints.
#include <cstdint>
#include <span>
#include <vector>

namespace fabscope::stats {

struct LatencyStats {
  std::size_t count = 0;
  double min = 0, mean = 0, p50 = 0, p99 = 0, p999 = 0, max = 0;
};

// `values` is sorted in place.
LatencyStats summarize(std::span<double> values);

// Percentile (0..100) of sorted values.
double percentileOfSorted(std::span<const double> sorted, double percent);

// Jain's fairness index: (sum x)^2 / (n * sum x^2); 1 = perfectly fair.
double jainFairness(std::span<const double> values);

}  // namespace fabscope::stats
