#pragma once
// Who measures with whom, round by round. Within a round every pair runs at
// the same time; rounds are separated by barriers.
#include <string>
#include <utility>
#include <vector>

namespace fabscope::suite {

struct RankPair {
  int initiator;  // the rank that records the sample
  int responder;
  bool operator==(const RankPair&) const = default;
};

using Round = std::vector<RankPair>;
using Schedule = std::vector<Round>;

// Rank i with i + n/2, all at once (one round). Odd n leaves the last rank idle.
Schedule pairsSchedule(int ranks);

// Round-robin tournament (circle method): n-1 rounds (n even) in which every
// rank is in exactly one pair, and every pair meets once. With `bothDirections`
// each round is followed by its mirror, for one-way tests.
Schedule allPairsParallelSchedule(int ranks, bool bothDirections);

// The same pairs, one pair per round, so no pair disturbs another.
Schedule serialSchedule(const Schedule& parallel);

// Only the given pairs, one per round.
Schedule serialScheduleOf(const std::vector<RankPair>& pairs);

// The pairs `rank` takes part in, in round order: (round index, pair).
std::vector<std::pair<int, RankPair>> roundsOf(const Schedule& schedule, int rank);

}  // namespace fabscope::suite
