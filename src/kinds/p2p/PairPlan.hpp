#pragma once
// The pair patterns' part of an instance's plan (PlanPart): the rounds, the
// time budget's cut of them, and the serial retest that follows an all-pairs
// parallel pass. Planning and the runner reach it through PlanPart's hooks;
// the point-to-point kinds read it with pairPlanOf().
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kinds/Kind.hpp"
#include "topology/PairRounds.hpp"

namespace fabscope::suite {

// A retested pair's second visit starts at least this long after its first
// ended (its two ranks wait out the rest, on their own clocks). Bursts that
// make a healthy pair read slow alone are shorter: a PFC pause frame holds a
// port at most 65,535 quanta of 512 bit times (0.34 ms at 100 Gb/s), the
// validation world's other-tenant bursts last 0.2-1.5 ms. The wait costs at
// most this once per retest (the visits' gaps overlap), beside the rest of the
// pass; a slowdown that lasts longer than this is the parallel pass's and the
// tail tests' to see, not the retest's.
inline constexpr std::int64_t kRevisitGapNs = 100'000'000;

class PairPlan final : public PlanPart {
 public:
  // The pairs round by round: the pattern's parameters, not its pairs; each
  // rank generates its own rounds at run time. It also holds where the
  // measuring ranks sit (group indices), for the level each pair crosses.
  PairRounds rounds;
  // All-pairs: its samples make the pair matrix.
  bool allPairs = false;
  int retestWorst = 0;  // all-pairs: serially re-measure this many worst pairs
  // A serial retest's control pairs (group indices; also in `rounds`): their
  // samples carry sample_flags::controlPair.
  std::vector<RankPair> controlPairs;
  // A serial retest's retested pairs (group indices): each measured twice
  // (retestSchedule), the second visit's samples carrying
  // sample_flags::retestSecondVisit.
  std::vector<RankPair> revisitedPairs;
  // The time budget's cut: rounds and pairs of the full pattern left out so
  // the test fits, and what was left (empty: nothing left out).
  std::int64_t roundsLeftOut = 0;
  std::int64_t pairsLeftOut = 0;
  std::string leftOut;

  std::unique_ptr<PlanPart> clone() const override { return std::make_unique<PairPlan>(*this); }
  std::int64_t roundCount() const override { return rounds.empty() ? -1 : rounds.rounds(); }
  double estimatedRounds(const InstancePlan& plan, double planned, int iterations) const override;
  bool thinnable(const InstancePlan& plan) const override;
  void thin(InstancePlan& plan, std::int64_t keep, std::uint64_t seed, const std::string& budget,
            int iterations) override;
  bool sharable() const override { return rounds.layout() != nullptr; }
  bool shareWith(const PlanPart& earlier) override;
  void addAttributes(output::Attributes& attributes) const override;
  bool pairMatrix() const override { return allPairs; }
  bool followedUp() const override { return retestWorst > 0; }
  void followUpSlot(InstancePlan& slot, int measuredIndex, int iterations) const override;
  std::vector<std::int32_t> chooseFollowUp(const std::vector<std::pair<std::int32_t, std::int32_t>>& worstFirst,
                                           std::uint64_t seed) const override;
  void followUp(InstancePlan& next, const std::vector<std::int32_t>& choice, int measuredIndex,
                int iterations) const override;
  std::string followUpNotRun(int measuredIndex) const override;
};

// The plan's pair part; a logic_error when its kind planned none.
const PairPlan& pairPlanOf(const InstancePlan& plan);
PairPlan& pairPlanOf(InstancePlan& plan);

}  // namespace fabscope::suite
