#include "kinds/Roles.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "runtime/Errors.hpp"

namespace fabscope::suite {

bool RoleAssignment::isCanary(int rank) const {
  return std::find(canaries.begin(), canaries.end(), rank) != canaries.end();
}
bool RoleAssignment::isCongestor(int rank) const {
  return std::find(congestors.begin(), congestors.end(), rank) != congestors.end();
}

std::string joinRanks(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

int canaryCount(const RoleSpec& spec, int worldSize, int minCanaries, bool hasCongestedCondition) {
  const int used = spec.ranks > 0 ? std::min(spec.ranks, worldSize) : worldSize;
  int canaries = spec.canaries;
  if (spec.canaryFraction > 0) canaries = static_cast<int>(std::floor(spec.canaryFraction * used + 1e-9));
  if (canaries <= 0) canaries = hasCongestedCondition ? std::max(minCanaries, used / 2 / 2 * 2) : used;
  canaries = std::min(canaries, used);
  if (canaries < minCanaries)
    throw UsageError("only " + std::to_string(canaries) + " measuring ranks, the test needs at least " +
                     std::to_string(minCanaries));
  return canaries;
}

RoleAssignment assignRoles(const RoleSpec& spec, const std::vector<std::string>& hostOfRank, int minCanaries,
                           bool hasCongestedCondition, std::uint64_t seed) {
  const int world = static_cast<int>(hostOfRank.size());
  const int used = spec.ranks > 0 ? std::min(spec.ranks, world) : world;

  // Order the ranks by placement; canaries are taken from the front.
  std::vector<int> order(static_cast<std::size_t>(used));
  for (int r = 0; r < used; ++r) order[static_cast<std::size_t>(r)] = r;
  if (spec.placement == "spread") {
    std::map<std::string, int> hostIndex, localIndex;
    std::vector<std::pair<std::pair<int, int>, int>> keyed;  // ((local index, host index), rank)
    for (int r = 0; r < used; ++r) {
      const auto& h = hostOfRank[static_cast<std::size_t>(r)];
      hostIndex.emplace(h, static_cast<int>(hostIndex.size()));
      keyed.push_back({{localIndex[h]++, hostIndex[h]}, r});
    }
    std::sort(keyed.begin(), keyed.end());
    for (std::size_t i = 0; i < keyed.size(); ++i) order[i] = keyed[i].second;
  } else if (spec.placement == "random") {
    std::mt19937_64 generator(seed);
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[generator() % i]);
  } else if (spec.placement != "packed") {
    throw UsageError("unknown placement '" + spec.placement + "'; expected spread, packed or random");
  }

  const int canaries = canaryCount(spec, world, minCanaries, hasCongestedCondition);

  const int groups = used / canaries;
  if (spec.group < 0 || spec.group >= groups)
    throw UsageError("measuring group " + std::to_string(spec.group) + " of " + std::to_string(canaries) +
                     " ranks does not fit in " + std::to_string(used) + " ranks (" + std::to_string(groups) +
                     " group(s))");
  const auto first = order.begin() + spec.group * canaries;
  RoleAssignment out;
  out.placement = spec.placement;
  out.canaries.assign(first, first + canaries);
  out.congestors.assign(order.begin(), first);
  out.congestors.insert(out.congestors.end(), first + canaries, order.end());
  return out;
}

}  // namespace fabscope::suite
