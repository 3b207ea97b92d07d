#pragma once
// Whole-schedule generators, each holding every pair of the pattern (the
// straightforward form, kept here unchanged but for the calls qualified with
// reference::, which ADL would make ambiguous): the reference the per-rank form (PairRounds, streamPattern) must
// match pair for pair, round for round, for the same seed.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "topology/PairSchedule.hpp"
#include "topology/TopologySchedule.hpp"

namespace fabscope::suite::reference {

inline Schedule allPairsParallelSchedule(int ranks, bool bothDirections) {
  // Circle method on an even number of seats; seat `ranks` is a bye when odd.
  const int seats = ranks % 2 == 0 ? ranks : ranks + 1;
  Schedule schedule;
  for (int r = 0; r < seats - 1; ++r) {
    Round round;
    for (int i = 0; i < seats / 2; ++i) {
      const int a = i == 0 ? 0 : (r + i - 1) % (seats - 1) + 1;
      const int b = (r + seats - 1 - i - 1) % (seats - 1) + 1;
      if (a >= ranks || b >= ranks) continue;
      // Alternate who initiates so each rank measures about half its pairs.
      round.push_back((r + i) % 2 == 0 ? RankPair{a, b} : RankPair{b, a});
    }
    schedule.push_back(round);
    if (bothDirections) {
      Round mirror;
      for (const auto& p : round) mirror.push_back({p.responder, p.initiator});
      schedule.push_back(mirror);
    }
  }
  return schedule;
}

inline Schedule serialSchedule(const Schedule& parallel) {
  Schedule out;
  for (const auto& round : parallel)
    for (const auto& p : round) out.push_back({p});
  return out;
}

namespace detail {

// A uniform draw below `bound` (bound > 0).
inline std::size_t below(std::uint64_t& state, std::size_t bound) {
  return static_cast<std::size_t>(nextRandom(state) % bound);
}

inline std::vector<int> shuffled(int n, std::uint64_t& state) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[below(state, i)]);
  return order;
}

// Circle-method rounds among `members` (group indices), mapped back.
inline Schedule allPairsAmong(const std::vector<int>& members, bool bothDirections) {
  Schedule out;
  for (const auto& round : allPairsParallelSchedule(static_cast<int>(members.size()), bothDirections)) {
    Round mapped;
    for (const auto& p : round)
      mapped.push_back(
          {members[static_cast<std::size_t>(p.initiator)], members[static_cast<std::size_t>(p.responder)]});
    out.push_back(std::move(mapped));
  }
  return out;
}

// Groups' schedules side by side: round r of every group together (the
// groups are disjoint, so every rank is still in one pair per round at most).
inline void mergeSideBySide(Schedule& into, const std::vector<Schedule>& groups) {
  std::size_t rounds = 0;
  for (const auto& g : groups) rounds = std::max(rounds, g.size());
  for (std::size_t r = 0; r < rounds; ++r) {
    Round round;
    for (const auto& g : groups)
      if (r < g.size()) round.insert(round.end(), g[r].begin(), g[r].end());
    if (!round.empty()) into.push_back(std::move(round));
  }
}

// One random matching among the pairs `fits` accepts: ranks in a shuffled
// order each take the first free partner after them that fits. Direction by coin.
template <typename Fits>
Round randomMatching(int n, std::uint64_t& state, Fits fits) {
  const auto order = shuffled(n, state);
  std::vector<bool> taken(static_cast<std::size_t>(n), false);
  Round round;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const int a = order[i];
    if (taken[static_cast<std::size_t>(a)]) continue;
    for (std::size_t j = i + 1; j < order.size(); ++j) {
      const int b = order[j];
      if (taken[static_cast<std::size_t>(b)] || !fits(a, b)) continue;
      taken[static_cast<std::size_t>(a)] = taken[static_cast<std::size_t>(b)] = true;
      round.push_back(nextRandom(state) & 1 ? RankPair{a, b} : RankPair{b, a});
      break;
    }
  }
  return round;
}

inline std::map<int, std::vector<int>> groupBy(const RankLayout& layout, bool byLeaf, bool byRail) {
  // Leaves are named within pods; number the (pod, leaf) pairs.
  std::map<std::pair<std::string, std::string>, int> leafIds;
  std::map<int, std::vector<int>> groups;
  for (int i = 0; i < layout.size(); ++i) {
    const auto& r = layout.ranks[static_cast<std::size_t>(i)];
    int key = byRail ? r.localRank : r.node;
    if (byLeaf) key = leafIds.emplace(std::make_pair(r.pod, r.leaf), static_cast<int>(leafIds.size())).first->second;
    groups[key].push_back(i);
  }
  return groups;
}

}  // namespace detail

using namespace detail;

inline Schedule railsSchedule(const RankLayout& layout, bool bothDirections) {
  std::vector<Schedule> rails;
  for (const auto& [rail, members] : groupBy(layout, false, true))
    rails.push_back(allPairsAmong(members, bothDirections));
  // Ranks of one rail on one node (more ranks than GPUs) would pair on a node: leave those pairs out.
  for (auto& rail : rails)
    for (auto& round : rail)
      std::erase_if(round,
                    [&](const RankPair& p) { return levelOf(layout, p.initiator, p.responder) == Level::sameNode; });
  Schedule out;
  mergeSideBySide(out, rails);
  return out;
}

inline Schedule crossRailSchedule(const RankLayout& layout, int draws, std::uint64_t seed) {
  Schedule out;
  std::uint64_t state = seed;
  for (int d = 0; d < draws; ++d) {
    auto round = randomMatching(layout.size(), state, [&](int a, int b) {
      const auto& x = layout.ranks[static_cast<std::size_t>(a)];
      const auto& y = layout.ranks[static_cast<std::size_t>(b)];
      return x.node != y.node && x.localRank != y.localRank;
    });
    if (!round.empty()) out.push_back(std::move(round));
  }
  return out;
}

inline Schedule ringSchedule(int ranks, int draws, std::uint64_t seed) {
  Schedule out;
  std::uint64_t state = seed;
  for (int d = 0; d < draws && ranks >= 3; ++d) {
    const auto ring = shuffled(ranks, state);
    const auto edge = [&](int k) {
      return RankPair{ring[static_cast<std::size_t>(k)], ring[static_cast<std::size_t>((k + 1) % ranks)]};
    };
    // Edge k uses ranks k and k+1: even edges are disjoint, odd edges too; with
    // an odd count the closing edge shares a rank with both and goes alone.
    const int paired = ranks % 2 == 0 ? ranks : ranks - 1;
    Round even, odd;
    for (int k = 0; k < paired; ++k) (k % 2 == 0 ? even : odd).push_back(edge(k));
    out.push_back(std::move(even));
    out.push_back(std::move(odd));
    if (paired != ranks) out.push_back({edge(ranks - 1)});
  }
  return out;
}

inline Schedule bisectionSchedule(int ranks, int draws, std::uint64_t seed) {
  Schedule out;
  std::uint64_t state = seed;
  const int half = ranks / 2;
  for (int d = 0; d < draws && half > 0; ++d) {
    const auto order = shuffled(ranks, state);
    Round round;
    for (int i = 0; i < half; ++i) {
      const int a = order[static_cast<std::size_t>(i)], b = order[static_cast<std::size_t>(half + i)];
      // Both halves stream: half the pairs are driven from each side.
      round.push_back(i % 2 == 0 ? RankPair{a, b} : RankPair{b, a});
    }
    out.push_back(std::move(round));
  }
  return out;
}

inline Schedule hierarchicalSchedule(const RankLayout& layout, const PatternOptions& options) {
  std::vector<Schedule> groups;
  std::vector<int> groupOf(static_cast<std::size_t>(layout.size()), 0);
  for (const auto& [key, members] : groupBy(layout, options.groupByLeaf, false)) {
    for (int m : members) groupOf[static_cast<std::size_t>(m)] = key;
    groups.push_back(allPairsAmong(members, options.bothDirections));
  }
  Schedule out;
  mergeSideBySide(out, groups);
  if (groups.size() < 2) return out;
  std::set<std::string> pods;
  for (const auto& r : layout.ranks) pods.insert(r.pod);
  bool podsWithSeveralGroups = false;
  {
    std::map<std::string, std::set<int>> groupsOfPod;
    for (int i = 0; i < layout.size(); ++i)
      groupsOfPod[layout.ranks[static_cast<std::size_t>(i)].pod].insert(groupOf[static_cast<std::size_t>(i)]);
    for (const auto& [pod, g] : groupsOfPod) podsWithSeveralGroups |= g.size() > 1;
  }
  const bool alternate = pods.size() > 1 && !pods.count("") && podsWithSeveralGroups;
  std::uint64_t state = options.seed;
  for (int d = 0; d < options.draws; ++d) {
    const bool withinPod = alternate && d % 2 == 0;
    auto round = randomMatching(layout.size(), state, [&](int a, int b) {
      if (groupOf[static_cast<std::size_t>(a)] == groupOf[static_cast<std::size_t>(b)]) return false;
      if (!alternate) return true;
      const bool samePod =
          layout.ranks[static_cast<std::size_t>(a)].pod == layout.ranks[static_cast<std::size_t>(b)].pod;
      return samePod == withinPod;
    });
    if (!round.empty()) out.push_back(std::move(round));
  }
  return out;
}

inline Schedule topologySchedule(Pattern pattern, const RankLayout& layout, const PatternOptions& options) {
  switch (pattern) {
    case Pattern::pairs:
      return pairsSchedule(layout.size());
    case Pattern::allPairs:
      return reference::allPairsParallelSchedule(layout.size(), options.bothDirections);
    case Pattern::rails:
      return reference::railsSchedule(layout, options.bothDirections);
    case Pattern::crossRail:
      return reference::crossRailSchedule(layout, options.draws, options.seed);
    case Pattern::ring:
      return reference::ringSchedule(layout.size(), options.draws, options.seed);
    case Pattern::bisection:
      return reference::bisectionSchedule(layout.size(), options.draws, options.seed);
    case Pattern::hierarchical:
      return reference::hierarchicalSchedule(layout, options);
  }
  return {};
}

inline Schedule keepRounds(const Schedule& schedule, std::size_t keep, std::uint64_t seed) {
  if (keep >= schedule.size()) return schedule;
  std::vector<std::size_t> index(schedule.size());
  std::iota(index.begin(), index.end(), 0);
  std::uint64_t state = seed;
  for (std::size_t i = 0; i < keep; ++i) std::swap(index[i], index[i + below(state, index.size() - i)]);
  index.resize(keep);
  std::sort(index.begin(), index.end());
  Schedule out;
  for (std::size_t i : index) out.push_back(schedule[i]);
  return out;
}

// The pairs `rank` takes part in, in round order (PairSchedule's roundsOf at 56c83ca).
inline std::vector<std::pair<int, RankPair>> roundsOf(const Schedule& schedule, int rank) {
  std::vector<std::pair<int, RankPair>> out;
  for (int r = 0; r < static_cast<int>(schedule.size()); ++r)
    for (const auto& p : schedule[static_cast<std::size_t>(r)])
      if (p.initiator == rank || p.responder == rank) out.emplace_back(r, p);
  return out;
}

}  // namespace fabscope::suite::reference
