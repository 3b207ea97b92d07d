#include "stats/Statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace fabscope::stats {

double percentileOfSorted(std::span<const double> sorted, double percent) {
  if (sorted.empty()) return std::nan("");
  const double position = percent / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(position));
  const auto upper = std::min(lower + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(lower);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction;
}

LatencyStats summarize(std::span<double> values) {
  LatencyStats s;
  s.count = values.size();
  if (values.empty()) {
    s.min = s.mean = s.p50 = s.p99 = s.p999 = s.max = std::nan("");
    return s;
  }
  std::sort(values.begin(), values.end());
  s.min = values.front();
  s.max = values.back();
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  s.p50 = percentileOfSorted(values, 50);
  s.p99 = percentileOfSorted(values, 99);
  s.p999 = percentileOfSorted(values, 99.9);
  return s;
}

double jainFairness(std::span<const double> values) {
  if (values.empty()) return std::nan("");
  double sum = 0, squares = 0;
  for (double v : values) {
    sum += v;
    squares += v * v;
  }
  if (squares == 0) return std::nan("");
  return sum * sum / (static_cast<double>(values.size()) * squares);
}

}  // namespace fabscope::stats
