#pragma once
// Patterns that follow the topology: rails, cross-rail, random
// rings, bisection and hierarchical all-pairs, over a layout that says where
// each measuring rank sits (node, local rank, leaf, pod). Every pair knows the
// topology level it crosses, so the analysis can split statistics by level.
// All in group indices (the measuring ranks in role order); seeded with the
// splitmix64 generator, so the same seed gives the same schedule on any build.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "topology/PairSchedule.hpp"

namespace fabscope::suite {

// Where one measuring rank sits. `node` numbers hosts; leaf and pod are the
// /ranks labels (empty when neither --topology nor Slurm gave them).
struct RankPlace {
  int node = 0;
  int localRank = 0;
  std::string leaf;
  std::string pod;
  bool operator==(const RankPlace&) const = default;
};

struct RankLayout {
  std::vector<RankPlace> ranks;  // by group index
  bool operator==(const RankLayout&) const = default;
  int size() const { return static_cast<int>(ranks.size()); }
  int nodes() const;
  // Every rank has a leaf label.
  bool labelled() const;
  // `ranks` ranks, `perNode` to a node in rank order, `nodesPerLeaf` nodes to a
  // leaf (0: no labels) and `leavesPerPod` leaves to a pod (0: no pod labels).
  static RankLayout uniform(int ranks, int perNode, int nodesPerLeaf = 0, int leavesPerPod = 0);
};

// Every world rank's host and topology labels, known before planning (the
// run exchanges them; `fabscope list` makes them up from its options).
struct WorldLayout {
  std::vector<std::string> hostOfRank;
  std::vector<std::string> leafOfRank;  // "" when unlabelled
  std::vector<std::string> podOfRank;
  int size() const { return static_cast<int>(hostOfRank.size()); }
  // `ranks` ranks, `perNode` to a host, `nodesPerLeaf` hosts to a leaf (0: no
  // labels), `leavesPerPod` leaves to a pod (0: no pod labels).
  static WorldLayout uniform(int ranks, int perNode, int nodesPerLeaf, int leavesPerPod);
};

// The layout of the given world ranks (group index i = worldRanks[i]); nodes
// numbered by host in order of first appearance.
RankLayout groupLayout(const WorldLayout& world, const std::vector<int>& worldRanks);

// The level a pair crosses; its number is the samples' `level` column.
enum class Level : std::uint8_t {
  unknown = 0,  // not a pair between two measuring ranks, or no layout
  sameNode = 1,
  sameLeaf = 2,
  samePod = 3,  // different leaves of one pod
  crossPod = 4,
  crossNode = 5,  // different nodes, no labels to say more
};
inline constexpr int levelCount = 6;
Level levelOf(const RankLayout& layout, int a, int b);
const char* levelName(Level level);

enum class Pattern { pairs, allPairs, rails, crossRail, ring, bisection, hierarchical };
const char* patternName(Pattern pattern);
const std::vector<std::string>& patternNames();
Pattern patternFromName(const std::string& name);  // a name from patternNames()

struct PatternOptions {
  int draws = 4;  // rings, bisection splits, cross-rail or between-group matchings
  std::uint64_t seed = 1;
  bool groupByLeaf = true;      // hierarchical: groups are leaves (else nodes)
  bool bothDirections = false;  // one-way kinds: every intra-group round and its mirror
};

// Why `pattern` cannot run on `layout` ("" when it can): too few ranks, one node
// only where the pattern needs several, no leaf labels where it needs them.
std::string patternUnfit(Pattern pattern, const RankLayout& layout, const PatternOptions& options);

// Visits the rounds of `pattern` one at a time, in order: the rounds
// topologySchedule returns, without holding them (no rank holds a
// whole schedule). Holds one round, the groups and a shuffled order at a time,
// O(N); time O(pairs of the whole schedule). `visit` returns false to stop.
using RoundVisitor = std::function<bool(const Round&)>;
void streamPattern(Pattern pattern, const RankLayout& layout, const PatternOptions& options, const RoundVisitor& visit);

// The same rounds collected (tests and small cases; a run uses PairRounds).
Schedule topologySchedule(Pattern pattern, const RankLayout& layout, const PatternOptions& options);
// Rank (node n, local l) with every other rank of local rank l, all-pairs by
// the circle method within each rail; rails run side by side.
Schedule railsSchedule(const RankLayout& layout, bool bothDirections);
// `draws` random matchings of pairs on different nodes and different rails.
Schedule crossRailSchedule(const RankLayout& layout, int draws, std::uint64_t seed);
// `draws` random rings over all ranks; a ring's edges in 2 rounds (3 when odd).
Schedule ringSchedule(int ranks, int draws, std::uint64_t seed);
// `draws` random splits into two halves, the halves paired one to one: one round each.
Schedule bisectionSchedule(int ranks, int draws, std::uint64_t seed);
// Every pair inside a group (leaf, or node) by the circle method, groups side by
// side; then `draws` random matchings between groups, alternating between
// pairs of one pod (different leaves) and pairs across pods when both exist.
Schedule hierarchicalSchedule(const RankLayout& layout, const PatternOptions& options);

// The positions of a seeded sample of `keep` of `rounds` rounds, in order (the
// time budget's choice; whole rounds, so every rank stays as busy as before). A
// function of (rounds, keep, seed) only, so every rank draws it alone: O(rounds).
std::vector<std::size_t> sampleRounds(std::size_t rounds, std::size_t keep, std::uint64_t seed);
// Those rounds of a whole schedule.
Schedule keepRounds(const Schedule& schedule, std::size_t keep, std::uint64_t seed);

}  // namespace fabscope::suite
