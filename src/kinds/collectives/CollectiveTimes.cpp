#include "kinds/collectives/CollectiveTimes.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <span>

namespace fabscope::suite {

CollectiveTimes collectiveTimes(const std::vector<std::vector<std::int64_t>>& stamps, std::size_t iterations,
                                std::size_t width, std::size_t in, std::size_t out) {
  CollectiveTimes t;
  const auto n = stamps.size();
  t.duration.resize(iterations);
  t.lateness.resize(iterations);
  t.lastCount.assign(n, 0);
  for (std::size_t it = 0; it < iterations; ++it) {
    std::int64_t firstIn = INT64_MAX, lastIn = INT64_MIN, lastOut = INT64_MIN;
    std::size_t late = 0;
    for (std::size_t r = 0; r < n; ++r) {
      const std::int64_t a = stamps[r][it * width + in], b = stamps[r][it * width + out];
      firstIn = std::min(firstIn, a);
      if (a > lastIn) lastIn = a, late = r;
      lastOut = std::max(lastOut, b);
    }
    t.duration[it] = static_cast<double>(lastOut - firstIn);
    t.lateness[it] = static_cast<double>(lastIn - firstIn);
    if (n > 0) ++t.lastCount[late];
  }
  if (n > 0) {
    t.straggler = static_cast<int>(std::max_element(t.lastCount.begin(), t.lastCount.end()) - t.lastCount.begin());
    t.stragglerFraction = static_cast<double>(t.lastCount[static_cast<std::size_t>(t.straggler)]) /
                          std::max<double>(1, static_cast<double>(iterations));
  }
  return t;
}

std::vector<std::vector<std::int64_t>> gatherStamps(const runtime::Communicator& group,
                                                    const std::vector<std::int64_t>& mine,
                                                    const runtime::Deadline& deadline) {
  std::vector<int> counts;
  const auto all = group.gatherBytes(std::as_bytes(std::span(mine)), 0, counts, deadline);
  std::vector<std::vector<std::int64_t>> out;
  if (group.rank() != 0) return out;
  std::size_t offset = 0;
  for (const int bytes : counts) {
    std::vector<std::int64_t> rank(static_cast<std::size_t>(bytes) / sizeof(std::int64_t));
    std::memcpy(rank.data(), all.data() + offset, rank.size() * sizeof(std::int64_t));
    offset += static_cast<std::size_t>(bytes);
    out.push_back(std::move(rank));
  }
  return out;
}

}  // namespace fabscope::suite
