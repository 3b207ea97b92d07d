#pragma once
// An instance's pair schedule without any rank holding it whole, so
// memory per rank does not grow with the job. A pattern's rounds are a function of the measuring ranks' layout,
// the pattern's options and the budget's kept rounds, all known on every rank;
// so every rank keeps those parameters and generates the rounds when it needs
// them (one round at a time), and keeps only its own: O(own pairs) per rank,
// plus O(rounds) for the budget's kept-round positions. The counts the plan and
// `fabscope list` need (rounds, pairs, the busiest rank's rounds) are counted
// once by the same generation, not stored pair by pair.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "topology/PairSchedule.hpp"
#include "topology/TopologySchedule.hpp"

namespace fabscope::suite {

class PairRounds {
 public:
  // No pairs (a kind without a pair schedule, or a retest not chosen yet).
  PairRounds() = default;
  // The rounds of `pattern` over `layout` (group indices); `serial`: every pair
  // of them in a round of its own (all-pairs' serial pass).
  static PairRounds ofPattern(Pattern pattern, std::shared_ptr<const RankLayout> layout, const PatternOptions& options,
                              bool serial = false);
  // Rounds given pair by pair: a serial retest's handful of pairs, chosen at run time.
  static PairRounds explicitRounds(Schedule rounds, std::shared_ptr<const RankLayout> layout);

  std::int64_t rounds() const noexcept { return rounds_; }
  bool empty() const noexcept { return rounds_ == 0; }
  std::int64_t pairs() const noexcept { return pairs_; }
  // The most rounds one rank takes part in (its samples are this x iterations at most).
  std::int64_t busiestRankRounds() const noexcept { return busiest_; }
  // Where the measuring ranks sit, for each pair's level; null without one.
  const RankLayout* layout() const noexcept { return layout_.get(); }
  const std::shared_ptr<const RankLayout>& sharedLayout() const noexcept { return layout_; }
  // Uses an equal layout held elsewhere (instances of one test share one).
  void shareLayout(std::shared_ptr<const RankLayout> equal) { layout_ = std::move(equal); }

  // Keeps a seeded sample of `keep` of the current rounds, in their order (the
  // time budget: sampleRounds of the round count, so no schedule is needed);
  // a second call samples among the rounds the first kept.
  void keepSample(std::size_t keep, std::uint64_t seed);

  // Visits every round in order with its index (0 .. rounds()-1, counting kept
  // rounds only), one round alive at a time; `visit` returns false to stop.
  void forEachRound(const std::function<bool(std::int64_t, const Round&)>& visit) const;
  // The rounds `rank` (group index) is in, in order: (round index, pair). O(own
  // pairs) kept; generating them takes time O(pairs of the whole schedule).
  std::vector<std::pair<int, RankPair>> roundsOf(int rank) const;
  // Every round (tests and small cases).
  Schedule whole() const;

 private:
  void count();
  // The rounds before the budget's cut, one at a time.
  void forEachSourceRound(const RoundVisitor& visit) const;

  bool generated_ = false;
  Pattern pattern_ = Pattern::pairs;
  PatternOptions options_;
  bool serial_ = false;
  Schedule explicit_;
  std::shared_ptr<const RankLayout> layout_;
  bool thinned_ = false;
  std::vector<std::size_t> kept_;  // when thinned_: positions among the source rounds, ascending
  std::int64_t rounds_ = 0;
  std::int64_t pairs_ = 0;
  std::int64_t busiest_ = 0;
};

}  // namespace fabscope::suite
