#include "topology/TopologySchedule.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

namespace fabscope::suite {

int RankLayout::nodes() const {
  std::set<int> seen;
  for (const auto& r : ranks) seen.insert(r.node);
  return static_cast<int>(seen.size());
}

bool RankLayout::labelled() const {
  return !ranks.empty() && std::all_of(ranks.begin(), ranks.end(), [](const RankPlace& r) { return !r.leaf.empty(); });
}

RankLayout RankLayout::uniform(int ranks, int perNode, int nodesPerLeaf, int leavesPerPod) {
  RankLayout layout;
  perNode = std::max(perNode, 1);
  for (int r = 0; r < ranks; ++r) {
    RankPlace place;
    place.node = r / perNode;
    place.localRank = r % perNode;
    if (nodesPerLeaf > 0) {
      const int leaf = place.node / nodesPerLeaf;
      place.leaf = "leaf" + std::to_string(leaf);
      if (leavesPerPod > 0) place.pod = "pod" + std::to_string(leaf / leavesPerPod);
    }
    layout.ranks.push_back(std::move(place));
  }
  return layout;
}

WorldLayout WorldLayout::uniform(int ranks, int perNode, int nodesPerLeaf, int leavesPerPod) {
  WorldLayout world;
  for (const auto& place : RankLayout::uniform(ranks, perNode, nodesPerLeaf, leavesPerPod).ranks) {
    world.hostOfRank.push_back("node" + std::to_string(place.node));
    world.leafOfRank.push_back(place.leaf);
    world.podOfRank.push_back(place.pod);
  }
  return world;
}

RankLayout groupLayout(const WorldLayout& world, const std::vector<int>& worldRanks) {
  std::map<std::string, int> nodeOf, ranksOnNode;
  for (const auto& host : world.hostOfRank) nodeOf.emplace(host, static_cast<int>(nodeOf.size()));
  // Local rank: position among the host's ranks of the whole run (the GPU a
  // rank drives), not among the measuring ones.
  std::vector<int> localOf(world.hostOfRank.size());
  for (std::size_t r = 0; r < world.hostOfRank.size(); ++r) localOf[r] = ranksOnNode[world.hostOfRank[r]]++;
  RankLayout layout;
  for (int r : worldRanks) {
    const auto i = static_cast<std::size_t>(r);
    RankPlace place;
    place.node = nodeOf.at(world.hostOfRank[i]);
    place.localRank = localOf[i];
    if (i < world.leafOfRank.size()) place.leaf = world.leafOfRank[i];
    if (i < world.podOfRank.size()) place.pod = world.podOfRank[i];
    layout.ranks.push_back(std::move(place));
  }
  return layout;
}

Level levelOf(const RankLayout& layout, int a, int b) {
  if (a < 0 || b < 0 || a >= layout.size() || b >= layout.size()) return Level::unknown;
  const auto& x = layout.ranks[static_cast<std::size_t>(a)];
  const auto& y = layout.ranks[static_cast<std::size_t>(b)];
  if (x.node == y.node) return Level::sameNode;
  // A leaf name is taken within its pod: leaf01 of two pods are two switches.
  if (!x.leaf.empty() && x.leaf == y.leaf && x.pod == y.pod) return Level::sameLeaf;
  if (!x.pod.empty() && !y.pod.empty()) return x.pod == y.pod ? Level::samePod : Level::crossPod;
  return Level::crossNode;
}

const char* levelName(Level level) {
  switch (level) {
    case Level::sameNode:
      return "same-node";
    case Level::sameLeaf:
      return "same-leaf";
    case Level::samePod:
      return "same-pod";
    case Level::crossPod:
      return "cross-pod";
    case Level::crossNode:
      return "cross-node";
    case Level::unknown:
      break;
  }
  return "unknown";
}

namespace {

struct PatternEntry {
  Pattern pattern;
  const char* name;
};
constexpr PatternEntry patternTable[] = {
    {Pattern::pairs, "pairs"},
    {Pattern::allPairs, "all-pairs"},
    {Pattern::rails, "rails"},
    {Pattern::crossRail, "cross-rail"},
    {Pattern::ring, "ring"},
    {Pattern::bisection, "bisection"},
    {Pattern::hierarchical, "hierarchical"},
};

// A uniform draw below `bound` (bound > 0).
std::size_t below(std::uint64_t& state, std::size_t bound) {
  return static_cast<std::size_t>(nextRandom(state) % bound);
}

std::vector<int> shuffled(int n, std::uint64_t& state) {
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[below(state, i)]);
  return order;
}

// Round r of the circle method among `members` (group indices), mapped back, appended to `out`.
void appendCircleRoundAmong(const std::vector<int>& members, int r, bool bothDirections, Round& out, Round& scratch) {
  scratch.clear();
  circleRound(static_cast<int>(members.size()), r, bothDirections, scratch);
  for (const auto& p : scratch)
    out.push_back({members[static_cast<std::size_t>(p.initiator)], members[static_cast<std::size_t>(p.responder)]});
}

// Groups' circle-method rounds side by side: round r of every group together
// (the groups are disjoint, so every rank is still in one pair per round at
// most), without the pairs `drop` refuses; a round left empty is skipped.
// False when `visit` asked to stop.
template <typename Drop>
bool streamSideBySide(const std::vector<std::vector<int>>& groups, bool bothDirections, Drop drop,
                      const RoundVisitor& visit) {
  int rounds = 0;
  for (const auto& g : groups) rounds = std::max(rounds, circleRounds(static_cast<int>(g.size()), bothDirections));
  Round round, scratch;
  for (int r = 0; r < rounds; ++r) {
    round.clear();
    for (const auto& g : groups)
      if (r < circleRounds(static_cast<int>(g.size()), bothDirections))
        appendCircleRoundAmong(g, r, bothDirections, round, scratch);
    std::erase_if(round, drop);
    if (!round.empty() && !visit(round)) return false;
  }
  return true;
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

std::map<int, std::vector<int>> groupBy(const RankLayout& layout, bool byLeaf, bool byRail) {
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

}  // namespace

const char* patternName(Pattern pattern) {
  for (const auto& e : patternTable)
    if (e.pattern == pattern) return e.name;
  return "?";
}

const std::vector<std::string>& patternNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& e : patternTable) out.emplace_back(e.name);
    return out;
  }();
  return names;
}

Pattern patternFromName(const std::string& name) {
  for (const auto& e : patternTable)
    if (name == e.name) return e.pattern;
  throw std::invalid_argument("unknown pattern '" + name + "'");
}

std::string patternUnfit(Pattern pattern, const RankLayout& layout, const PatternOptions& options) {
  const int n = layout.size();
  const std::string name = patternName(pattern);
  if (n < 2) return "pattern '" + name + "' needs at least 2 measuring ranks, the test has " + std::to_string(n);
  switch (pattern) {
    case Pattern::rails:
    case Pattern::crossRail: {
      const int nodes = layout.nodes();
      if (nodes < 2)
        return "pattern '" + name + "' pairs ranks on different nodes, but all " + std::to_string(n) +
               " measuring ranks are on one node (use pattern: all-pairs or hierarchical with group: node)";
      if (pattern == Pattern::crossRail) {
        std::set<int> rails;
        for (const auto& r : layout.ranks) rails.insert(r.localRank);
        if (rails.size() < 2)
          return "pattern 'cross-rail' needs at least 2 ranks per node (2 rails); the layout has 1 (use pattern: "
                 "rails)";
      }
      return "";
    }
    case Pattern::bisection:
      if (n < 4)
        return "pattern 'bisection' needs at least 4 measuring ranks (2 per half), the test has " + std::to_string(n);
      return "";
    case Pattern::ring:
      if (n < 3)
        return "pattern 'ring' needs at least 3 measuring ranks, the test has " + std::to_string(n) +
               " (use pattern: pairs)";
      return "";
    case Pattern::hierarchical:
      if (options.groupByLeaf && !layout.labelled())
        return "pattern 'hierarchical' groups by leaf, but the ranks have no leaf labels (give --topology FILE or run "
               "under Slurm with SLURM_TOPOLOGY_ADDR; or group by node: hierarchical: {group: node})";
      return "";
    case Pattern::pairs:
    case Pattern::allPairs:
      return "";
  }
  return "";
}

namespace {

void streamRails(const RankLayout& layout, bool bothDirections, const RoundVisitor& visit) {
  std::vector<std::vector<int>> rails;
  for (auto& [rail, members] : groupBy(layout, false, true)) rails.push_back(std::move(members));
  // Ranks of one rail on one node (more ranks than GPUs) would pair on a node: leave those pairs out.
  streamSideBySide(
      rails, bothDirections,
      [&](const RankPair& p) { return levelOf(layout, p.initiator, p.responder) == Level::sameNode; }, visit);
}

void streamCrossRail(const RankLayout& layout, int draws, std::uint64_t seed, const RoundVisitor& visit) {
  std::uint64_t state = seed;
  for (int d = 0; d < draws; ++d) {
    const auto round = randomMatching(layout.size(), state, [&](int a, int b) {
      const auto& x = layout.ranks[static_cast<std::size_t>(a)];
      const auto& y = layout.ranks[static_cast<std::size_t>(b)];
      return x.node != y.node && x.localRank != y.localRank;
    });
    if (!round.empty() && !visit(round)) return;
  }
}

void streamRing(int ranks, int draws, std::uint64_t seed, const RoundVisitor& visit) {
  std::uint64_t state = seed;
  Round even, odd;
  for (int d = 0; d < draws && ranks >= 3; ++d) {
    const auto ring = shuffled(ranks, state);
    const auto edge = [&](int k) {
      return RankPair{ring[static_cast<std::size_t>(k)], ring[static_cast<std::size_t>((k + 1) % ranks)]};
    };
    // Edge k uses ranks k and k+1: even edges are disjoint, odd edges too; with
    // an odd count the closing edge shares a rank with both and goes alone.
    const int paired = ranks % 2 == 0 ? ranks : ranks - 1;
    even.clear();
    odd.clear();
    for (int k = 0; k < paired; ++k) (k % 2 == 0 ? even : odd).push_back(edge(k));
    if (!visit(even) || !visit(odd)) return;
    if (paired != ranks && !visit(Round{edge(ranks - 1)})) return;
  }
}

void streamBisection(int ranks, int draws, std::uint64_t seed, const RoundVisitor& visit) {
  std::uint64_t state = seed;
  const int half = ranks / 2;
  Round round;
  for (int d = 0; d < draws && half > 0; ++d) {
    const auto order = shuffled(ranks, state);
    round.clear();
    for (int i = 0; i < half; ++i) {
      const int a = order[static_cast<std::size_t>(i)], b = order[static_cast<std::size_t>(half + i)];
      // Both halves stream: half the pairs are driven from each side.
      round.push_back(i % 2 == 0 ? RankPair{a, b} : RankPair{b, a});
    }
    if (!visit(round)) return;
  }
}

void streamHierarchical(const RankLayout& layout, const PatternOptions& options, const RoundVisitor& visit) {
  std::vector<std::vector<int>> groups;
  std::vector<int> groupOf(static_cast<std::size_t>(layout.size()), 0);
  for (auto& [key, members] : groupBy(layout, options.groupByLeaf, false)) {
    for (int m : members) groupOf[static_cast<std::size_t>(m)] = key;
    groups.push_back(std::move(members));
  }
  if (!streamSideBySide(
          groups, options.bothDirections, [](const RankPair&) { return false; }, visit))
    return;
  if (groups.size() < 2) return;
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
    const auto round = randomMatching(layout.size(), state, [&](int a, int b) {
      if (groupOf[static_cast<std::size_t>(a)] == groupOf[static_cast<std::size_t>(b)]) return false;
      if (!alternate) return true;
      const bool samePod =
          layout.ranks[static_cast<std::size_t>(a)].pod == layout.ranks[static_cast<std::size_t>(b)].pod;
      return samePod == withinPod;
    });
    if (!round.empty() && !visit(round)) return;
  }
}

}  // namespace

void streamPattern(Pattern pattern, const RankLayout& layout, const PatternOptions& options,
                   const RoundVisitor& visit) {
  switch (pattern) {
    case Pattern::pairs:
      visit(pairsSchedule(layout.size()).front());
      return;
    case Pattern::allPairs: {
      Round round;
      for (int r = 0; r < circleRounds(layout.size(), options.bothDirections); ++r) {
        round.clear();
        circleRound(layout.size(), r, options.bothDirections, round);
        if (!visit(round)) return;
      }
      return;
    }
    case Pattern::rails:
      streamRails(layout, options.bothDirections, visit);
      return;
    case Pattern::crossRail:
      streamCrossRail(layout, options.draws, options.seed, visit);
      return;
    case Pattern::ring:
      streamRing(layout.size(), options.draws, options.seed, visit);
      return;
    case Pattern::bisection:
      streamBisection(layout.size(), options.draws, options.seed, visit);
      return;
    case Pattern::hierarchical:
      streamHierarchical(layout, options, visit);
      return;
  }
}

namespace {

Schedule collect(const std::function<void(const RoundVisitor&)>& stream) {
  Schedule out;
  stream([&](const Round& round) {
    out.push_back(round);
    return true;
  });
  return out;
}

}  // namespace

Schedule railsSchedule(const RankLayout& layout, bool bothDirections) {
  return collect([&](const RoundVisitor& v) { streamRails(layout, bothDirections, v); });
}
Schedule crossRailSchedule(const RankLayout& layout, int draws, std::uint64_t seed) {
  return collect([&](const RoundVisitor& v) { streamCrossRail(layout, draws, seed, v); });
}
Schedule ringSchedule(int ranks, int draws, std::uint64_t seed) {
  return collect([&](const RoundVisitor& v) { streamRing(ranks, draws, seed, v); });
}
Schedule bisectionSchedule(int ranks, int draws, std::uint64_t seed) {
  return collect([&](const RoundVisitor& v) { streamBisection(ranks, draws, seed, v); });
}
Schedule hierarchicalSchedule(const RankLayout& layout, const PatternOptions& options) {
  return collect([&](const RoundVisitor& v) { streamHierarchical(layout, options, v); });
}
Schedule topologySchedule(Pattern pattern, const RankLayout& layout, const PatternOptions& options) {
  return collect([&](const RoundVisitor& v) { streamPattern(pattern, layout, options, v); });
}

std::vector<std::size_t> sampleRounds(std::size_t rounds, std::size_t keep, std::uint64_t seed) {
  std::vector<std::size_t> index(rounds);
  std::iota(index.begin(), index.end(), 0);
  if (keep >= rounds) return index;
  std::uint64_t state = seed;
  for (std::size_t i = 0; i < keep; ++i) std::swap(index[i], index[i + below(state, index.size() - i)]);
  index.resize(keep);
  std::sort(index.begin(), index.end());
  return index;
}

Schedule keepRounds(const Schedule& schedule, std::size_t keep, std::uint64_t seed) {
  Schedule out;
  for (std::size_t i : sampleRounds(schedule.size(), keep, seed)) out.push_back(schedule[i]);
  return out;
}

}  // namespace fabscope::suite
