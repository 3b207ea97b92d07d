#include "topology/PairSchedule.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>

namespace fabscope::suite {

Schedule pairsSchedule(int ranks) {
  Round round;
  const int half = ranks / 2;
  for (int i = 0; i < half; ++i) round.push_back({i, i + half});
  return {round};
}

int circleRounds(int ranks, bool bothDirections) {
  // Circle method on an even number of seats; seat `ranks` is a bye when odd.
  const int seats = ranks % 2 == 0 ? ranks : ranks + 1;
  return std::max(seats - 1, 0) * (bothDirections ? 2 : 1);
}

void circleRound(int ranks, int r, bool bothDirections, Round& out) {
  const int seats = ranks % 2 == 0 ? ranks : ranks + 1;
  // With both directions, round 2k is round k of the tournament and 2k+1 its mirror.
  const int k = bothDirections ? r / 2 : r;
  const bool mirror = bothDirections && r % 2 == 1;
  for (int i = 0; i < seats / 2; ++i) {
    const int a = i == 0 ? 0 : (k + i - 1) % (seats - 1) + 1;
    const int b = (k + seats - 1 - i - 1) % (seats - 1) + 1;
    if (a >= ranks || b >= ranks) continue;
    // Alternate who initiates so each rank measures about half its pairs.
    const RankPair pair = (k + i) % 2 == 0 ? RankPair{a, b} : RankPair{b, a};
    out.push_back(mirror ? RankPair{pair.responder, pair.initiator} : pair);
  }
}

bool circlePairOf(int ranks, int r, bool bothDirections, int rank, RankPair& pair) {
  const int seats = ranks % 2 == 0 ? ranks : ranks + 1;
  const int k = bothDirections ? r / 2 : r;
  const bool mirror = bothDirections && r % 2 == 1;
  const int ring = seats - 1;  // seats 1 .. seats-1 turn; seat 0 stays
  const auto wrap = [&](int v) { return ((v % ring) + ring) % ring; };
  // circleRound's pair i is (a_i, b_i): a_0 = 0, a_i = (k+i-1) mod ring + 1,
  // b_i = (k+seats-2-i) mod ring + 1; find the i that seats `rank`.
  int i = 0;
  if (rank != 0) {
    const int y = rank - 1;
    const int asA = wrap(y - k + 1);
    i = asA >= 1 && asA < seats / 2 ? asA : wrap(k - 1 - y);
  }
  const int a = i == 0 ? 0 : (k + i - 1) % ring + 1;
  const int b = (k + seats - 1 - i - 1) % ring + 1;
  if (a >= ranks || b >= ranks) return false;
  pair = (k + i) % 2 == 0 ? RankPair{a, b} : RankPair{b, a};
  if (mirror) pair = {pair.responder, pair.initiator};
  return true;
}

Schedule allPairsParallelSchedule(int ranks, bool bothDirections) {
  Schedule schedule(static_cast<std::size_t>(circleRounds(ranks, bothDirections)));
  for (std::size_t r = 0; r < schedule.size(); ++r)
    circleRound(ranks, static_cast<int>(r), bothDirections, schedule[r]);
  return schedule;
}

Schedule serialSchedule(const Schedule& parallel) {
  Schedule out;
  for (const auto& round : parallel)
    for (const auto& p : round) out.push_back({p});
  return out;
}

Schedule serialScheduleOf(const std::vector<RankPair>& pairs) {
  Schedule out;
  for (const auto& p : pairs) out.push_back({p});
  return out;
}

std::vector<std::pair<int, RankPair>> roundsOf(const Schedule& schedule, int rank) {
  std::vector<std::pair<int, RankPair>> out;
  for (int r = 0; r < static_cast<int>(schedule.size()); ++r)
    for (const auto& p : schedule[static_cast<std::size_t>(r)])
      if (p.initiator == rank || p.responder == rank) out.emplace_back(r, p);
  return out;
}

std::uint64_t nextRandom(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<RankPair> controlPairs(const std::vector<RankPair>& rankedWorstFirst, std::size_t retested, int count,
                                   std::uint64_t seed) {
  const std::size_t n = rankedWorstFirst.size();
  if (count <= 0 || retested >= n) return {};
  // Positions outside the retested ones, nearest the median position first; pairs
  // that share a rank with a retested pair only when too few others remain (a
  // control through a suspect host is as slow as the suspect and clears it).
  std::set<int> suspects;
  for (std::size_t i = 0; i < retested; ++i) {
    suspects.insert(rankedWorstFirst[i].initiator);
    suspects.insert(rankedWorstFirst[i].responder);
  }
  std::vector<std::size_t> positions, touching;
  for (std::size_t i = retested; i < n; ++i)
    (suspects.count(rankedWorstFirst[i].initiator) || suspects.count(rankedWorstFirst[i].responder) ? touching
                                                                                                    : positions)
        .push_back(i);
  if (positions.size() < static_cast<std::size_t>(count))
    positions.insert(positions.end(), touching.begin(), touching.end());
  const double median = (static_cast<double>(n) - 1) / 2;
  std::stable_sort(positions.begin(), positions.end(), [&](std::size_t a, std::size_t b) {
    return std::abs(static_cast<double>(a) - median) < std::abs(static_cast<double>(b) - median);
  });
  std::size_t pool = 0;  // the middle half: ranks n/4 .. 3n/4
  for (std::size_t p : positions)
    if (4 * p >= n && 4 * p < 3 * n) ++pool;
  pool = std::min(positions.size(), std::max(pool, static_cast<std::size_t>(count)));
  positions.resize(pool);
  std::sort(positions.begin(), positions.end());  // the draw depends on the seed only
  std::uint64_t state = seed;
  const std::size_t take = std::min(pool, static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < take; ++i)  // partial Fisher-Yates
    std::swap(positions[i], positions[i + nextRandom(state) % (pool - i)]);
  std::vector<RankPair> out;
  for (std::size_t i = 0; i < take; ++i) out.push_back(rankedWorstFirst[positions[i]]);
  return out;
}

int controlCount(std::size_t retested) { return std::max(static_cast<int>(retested), kMinControlPairs); }

Schedule retestSchedule(const std::vector<RankPair>& retested, const std::vector<RankPair>& controls) {
  Schedule schedule;
  for (std::size_t i = 0; i < std::max(retested.size(), controls.size()); ++i) {
    if (i < retested.size()) schedule.push_back({retested[i]});
    if (i < controls.size()) schedule.push_back({controls[i]});
  }
  for (const auto& pair : retested) schedule.push_back({pair});
  return schedule;
}

std::vector<bool> secondVisits(const std::vector<std::pair<int, RankPair>>& mine,
                               const std::vector<RankPair>& revisited) {
  std::vector<bool> out(mine.size(), false);
  std::vector<RankPair> seen;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const RankPair& pair = mine[i].second;
    if (std::find(revisited.begin(), revisited.end(), pair) == revisited.end()) continue;
    if (std::find(seen.begin(), seen.end(), pair) != seen.end())
      out[i] = true;
    else
      seen.push_back(pair);
  }
  return out;
}

}  // namespace fabscope::suite
