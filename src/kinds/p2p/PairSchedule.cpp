#include "kinds/p2p/PairSchedule.hpp"

namespace fabscope::suite {

Schedule pairsSchedule(int ranks) {
  Round round;
  const int half = ranks / 2;
  for (int i = 0; i < half; ++i) round.push_back({i, i + half});
  return {round};
}

Schedule allPairsParallelSchedule(int ranks, bool bothDirections) {
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

}  // namespace fabscope::suite
