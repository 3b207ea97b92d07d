#pragma once
// Who measures with whom, round by round. Within a round every pair runs at
// the same time; rounds are separated by barriers.
#include <cstdint>
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

// The circle method's rounds among n ranks, and round r of them appended to
// `out` (0 <= r < circleRounds): what allPairsParallelSchedule holds, one round
// at a time.
int circleRounds(int ranks, bool bothDirections);
void circleRound(int ranks, int r, bool bothDirections, Round& out);
// The pair `rank` is in within that round, computed alone (O(1)); false when
// the rank sits out (the bye of an odd count).
bool circlePairOf(int ranks, int r, bool bothDirections, int rank, RankPair& pair);

// Round-robin tournament (circle method): n-1 rounds (n even) in which every
// rank is in exactly one pair, and every pair meets once. With `bothDirections`
// each round is followed by its mirror, for one-way tests.
Schedule allPairsParallelSchedule(int ranks, bool bothDirections);

// The same pairs, one pair per round, so no pair disturbs another.
Schedule serialSchedule(const Schedule& parallel);

// Only the given pairs, one per round.
Schedule serialScheduleOf(const std::vector<RankPair>& pairs);

// Control pairs for a serial retest: a pair re-measured alone means
// something only next to pairs measured the same way. `rankedWorstFirst` is every
// pair of the parallel pass, worst first; its first `retested` are the retested
// pairs. Draws `count` pairs (seeded, the same for the same seed on any build)
// from the middle half of the ranking, so neither the suspects nor the best
// pairs set the reference; when the middle half has too few, the pairs nearest
// the median outside it fill in. Pairs sharing a rank with a retested pair are
// used only when fewer than `count` others remain. Fewer when there are not enough pairs.
std::vector<RankPair> controlPairs(const std::vector<RankPair>& rankedWorstFirst, std::size_t retested, int count,
                                   std::uint64_t seed);

// How many control pairs a retest of `retested` pairs measures: as many, and at
// least kMinControlPairs. The analysis takes one pair's noise alone from the
// controls' spread and sets its bar far in the tail (the worst of N^2 pairs is slow
// by selection): a spread of fewer pairs is itself too uncertain for that.
inline constexpr int kMinControlPairs = 10;
int controlCount(std::size_t retested);

// A serial retest: retested and control pairs alternated, one pair per round,
// so a drift during the retest touches both alike; then every retested pair a
// second time, in the same order. A burst (another tenant, a pause) on a link a
// suspect crosses can outlast one visit and reads as a fault; a fault persists
// over both. Each retested pair's two visits have every other pair of the first
// pass between them, controls included: at least controlCount (10) pairs'
// measurements, and the runner adds a wait to reach kRevisitGap (PairPlan.hpp).
// The second visits add one pair's iterations per retested pair: 3 worst and 10
// controls take 16 slots instead of 13.
Schedule retestSchedule(const std::vector<RankPair>& retested, const std::vector<RankPair>& controls);

// For one rank's pairs in round order (roundsOf), which entries are a second
// visit: a later occurrence of a pair in `revisited` (the retested pairs).
std::vector<bool> secondVisits(const std::vector<std::pair<int, RankPair>>& mine,
                               const std::vector<RankPair>& revisited);

// splitmix64: a fixed generator, unlike std::uniform_int_distribution whose
// output differs between standard libraries (seeded schedules must match on
// every rank and every build).
std::uint64_t nextRandom(std::uint64_t& state);

// The pairs `rank` takes part in, in round order: (round index, pair).
std::vector<std::pair<int, RankPair>> roundsOf(const Schedule& schedule, int rank);

}  // namespace fabscope::suite
