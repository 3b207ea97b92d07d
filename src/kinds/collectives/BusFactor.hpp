#pragma once
// Bus bandwidth = algbw x a bus factor, nccl-tests' definitions, one rule for
// every number of ranks: an all-reduce's 2(n-1)/n and an all-to-all's (n-1)/n.
// For one rank both are 0: nothing crosses a link, so its bus bandwidth is 0
// (nccl-tests prints busbw 0 on one GPU). A factor of 1 there would report the
// memory copy inside one device as fabric bandwidth.
// analysis/fabscope_analysis/serving/impact.py (ring_bus_factor) follows the same rule.
#include <stdexcept>
#include <string>

namespace fabscope::suite {

inline double allReduceBusFactor(int ranks) {
  if (ranks < 1) throw std::invalid_argument("all-reduce bus factor of " + std::to_string(ranks) + " ranks");
  return 2.0 * (ranks - 1) / ranks;
}

inline double allToAllBusFactor(int ranks) {
  if (ranks < 1) throw std::invalid_argument("all-to-all bus factor of " + std::to_string(ranks) + " ranks");
  return static_cast<double>(ranks - 1) / ranks;
}

}  // namespace fabscope::suite
