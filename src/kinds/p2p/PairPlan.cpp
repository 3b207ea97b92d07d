// The pair patterns' plan part: estimates, the budget's cut, layout sharing,
// and the serial retest slot an all-pairs parallel pass leaves after it.
#include "kinds/p2p/PairPlan.hpp"

#include <algorithm>
#include <stdexcept>

#include "topology/PairSchedule.hpp"

namespace fabscope::suite {

namespace {
constexpr const char* serialRetest = "serial-retest";
}

double PairPlan::estimatedRounds(const InstancePlan& plan, double planned, int iterations) const {
  // A retest's pairs are chosen later: its sample bound says how many.
  if (plan.pass == serialRetest && iterations > 0) return static_cast<double>(plan.maxSamplesPerRank / iterations);
  return planned;
}

// A parallel pass with more than one round.
bool PairPlan::thinnable(const InstancePlan& plan) const { return plan.pass == "parallel" && rounds.rounds() > 1; }

void PairPlan::thin(InstancePlan& plan, std::int64_t keep, std::uint64_t seed, const std::string& budget,
                    int iterations) {
  const auto before = rounds.rounds();
  const auto pairsBefore = rounds.pairs();
  // A sample of round positions drawn from (rounds, keep, seed) alone: every
  // rank draws the same and generates only the kept rounds' pairs.
  rounds.keepSample(static_cast<std::size_t>(keep), seed);
  const auto pairsKept = rounds.pairs();
  roundsLeftOut += before - keep;
  pairsLeftOut += pairsBefore - pairsKept;
  leftOut = budget + ": kept " + std::to_string(keep) + " of " + std::to_string(before) +
            " rounds, a seeded sample; left out " + std::to_string(before - keep) + " rounds, " +
            std::to_string(pairsBefore - pairsKept) + " pairs";
  plan.description += "; " + leftOut;
  if (rounds.layout()) plan.maxSamplesPerRank = rounds.busiestRankRounds() * iterations;
}

bool PairPlan::shareWith(const PlanPart& earlier) {
  const auto* other = dynamic_cast<const PairPlan*>(&earlier);
  if (!other || !rounds.layout() || !other->rounds.layout() || !(*other->rounds.layout() == *rounds.layout()))
    return false;
  rounds.shareLayout(other->rounds.sharedLayout());
  return true;
}

void PairPlan::addAttributes(output::Attributes& attributes) const {
  if (leftOut.empty()) return;  // the time budget thinned the pattern
  attributes.emplace_back("budget_left_out", leftOut);
  attributes.emplace_back("rounds_left_out", roundsLeftOut);
  attributes.emplace_back("pairs_left_out", pairsLeftOut);
}

// The place of the measured instance's serial retest (pass serial-retest, no
// schedule yet): the pairs to retest are known only once it has run.
void PairPlan::followUpSlot(InstancePlan& slot, int measuredIndex, int iterations) const {
  auto& part = pairPlanOf(slot);
  const std::int64_t retested = std::min<std::int64_t>(retestWorst, rounds.pairs());
  part.rounds = PairRounds::explicitRounds({}, rounds.sharedLayout());
  part.retestWorst = 0;
  slot.pass = serialRetest;
  slot.followUpOf = measuredIndex;
  // At most controlCount control pairs (followUp sets the exact count). No
  // more controls than the pairs left once the retested ones are taken out.
  const std::int64_t controls =
      std::min<std::int64_t>(controlCount(static_cast<std::size_t>(retested)), rounds.pairs() - retested);
  slot.maxSamplesPerRank = (2 * retested + controls) * iterations;
  slot.description = "serial retest of #" + std::to_string(measuredIndex) + ": its " + std::to_string(retested) +
                     " worst pairs, each twice, and up to " + std::to_string(controls) +
                     " control pairs, one pair at a time";
}

// The worst retestWorst pairs, then control pairs from the middle of the
// ranking (seeded; controlCount: as many, at least 10), which the retest
// measures alone the same way: [count of worst, worst pairs..., controls...]
// flattened; empty when there is no pair to retest.
std::vector<std::int32_t> PairPlan::chooseFollowUp(const std::vector<std::pair<std::int32_t, std::int32_t>>& worstFirst,
                                                   std::uint64_t seed) const {
  std::vector<RankPair> ranked;
  for (const auto& [a, b] : worstFirst) ranked.push_back({a, b});
  const std::size_t retested = std::min(ranked.size(), static_cast<std::size_t>(std::max(retestWorst, 0)));
  if (retested == 0) return {};
  std::vector<std::int32_t> choice{static_cast<std::int32_t>(retested)};
  for (std::size_t i = 0; i < retested; ++i) choice.insert(choice.end(), {ranked[i].initiator, ranked[i].responder});
  for (const auto& c : suite::controlPairs(ranked, retested, controlCount(retested), seed))
    choice.insert(choice.end(), {c.initiator, c.responder});
  return choice;
}

// The retest: the chosen worst pairs and as many control pairs, alternated,
// one at a time (control samples: flag bit 10), then each worst pair again
// (flag bit 15; retestSchedule).
void PairPlan::followUp(InstancePlan& next, const std::vector<std::int32_t>& choice, int measuredIndex,
                        int iterations) const {
  std::vector<RankPair> worst, controls;
  const auto count = choice.empty() ? 0 : static_cast<std::size_t>(choice[0]);
  for (std::size_t i = 1; i + 1 < choice.size(); i += 2)
    (i / 2 < count ? worst : controls).push_back({choice[i], choice[i + 1]});
  auto& part = pairPlanOf(next);
  part.rounds = PairRounds::explicitRounds(retestSchedule(worst, controls), rounds.sharedLayout());
  part.controlPairs = controls;
  part.revisitedPairs = worst;
  part.retestWorst = 0;
  next.pass = serialRetest;
  next.followUpOf = measuredIndex;
  next.maxSamplesPerRank = static_cast<std::int64_t>(2 * worst.size() + controls.size()) * iterations;
}

std::string PairPlan::followUpNotRun(int measuredIndex) const {
  return "not run: the parallel pass (test " + std::to_string(measuredIndex) +
         ") did not pass, so it named no pairs to retest";
}

const PairPlan& pairPlanOf(const InstancePlan& plan) {
  if (const auto* part = plan.part.as<PairPlan>()) return *part;
  throw std::logic_error("instance plan without the pair patterns' part");
}

PairPlan& pairPlanOf(InstancePlan& plan) {
  if (auto* part = plan.part.as<PairPlan>()) return *part;
  throw std::logic_error("instance plan without the pair patterns' part");
}

}  // namespace fabscope::suite
