// Planning: the matrix expanded, each instance planned by its kind, serial
// retest slots placed, the time budgets fitted, and the memory bound checked,
// all before anything runs; also the retest stage's instance once its pairs are chosen.
#include "driver/Planning.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

#include "conditions/NeighbourLoad.hpp"
#include "output/Records.hpp"
#include "topology/PairSchedule.hpp"
#include "scenario/Units.hpp"

namespace fabscope::driver {

// The retest stage's instance: the worst pairs of `measured` and as many
// control pairs, alternated, one at a time (control samples: flag bit 10).
PlannedInstance retestOf(const PlannedInstance& measured, const RetestChoice& choice, int index) {
  PlannedInstance retest = measured;
  retest.plan.rounds =
      suite::PairRounds::explicitRounds(suite::retestSchedule(choice.worst, choice.controls), measured.plan.rounds.sharedLayout());
  retest.plan.controlPairs = choice.controls;
  retest.plan.pass = "serial-retest";
  retest.plan.retestOf = index;
  retest.plan.retestWorst = 0;
  retest.plan.maxSamplesPerRank = static_cast<std::int64_t>(choice.worst.size() + choice.controls.size()) *
                                  measured.instance.spec->iterations;
  return retest;
}

std::string retestsAmong(const std::vector<PlannedInstance>& planned) {
  const auto retests = std::count_if(planned.begin(), planned.end(),
                                     [](const PlannedInstance& p) { return p.plan.pass == "serial-retest"; });
  return retests == 0 ? "" : " (" + std::to_string(retests) + " of them serial retests)";
}

std::int64_t memoryPerRank(const suite::InstancePlan& plan) {
  return plan.maxSamplesPerRank * static_cast<std::int64_t>(sizeof(output::SampleRecord)) + plan.bufferBytesPerRank;
}

namespace {

// A congested condition's neighbour traffic needs congestors besides the
// measuring ranks; too few is the scenario's fault (exit 2 before anything
// runs), not a runtime failure in the middle of the run.
void checkCongestors(const scenario::TestInstance& instance, const suite::Kind& kind, int worldSize) {
  const int needed = conditions::minCongestors(instance.condition);
  if (needed == 0) return;
  const auto& spec = *instance.spec;
  const int used = spec.ranks > 0 ? std::min(spec.ranks, worldSize) : worldSize;
  const int canaries =
      suite::canaryCount(suite::roleSpecOf(spec), worldSize, kind.rules().minRanks, suite::hasCongestedCondition(spec));
  if (used - canaries >= needed) return;
  throw scenario::ScenarioError(
      spec.where("conditions") + ": test '" +
      spec.name + "' under condition '" + instance.condition + "' needs at least " + std::to_string(needed) +
      " congestor ranks besides its " + std::to_string(canaries) + " measuring ranks; the run gives it " +
      std::to_string(used) + " rank(s) in all (start more ranks with mpirun -np, or measure with fewer: roles: "
      "{canaries: N})");
}

// The place of `measured`'s serial retest in the plan (pass serial-retest, no
// schedule yet): the pairs to retest are known only once `measured` has run.
PlannedInstance retestSlotOf(const PlannedInstance& measured, int index) {
  PlannedInstance slot = measured;
  const std::int64_t retested = std::min<std::int64_t>(measured.plan.retestWorst, measured.plan.rounds.pairs());
  slot.plan.rounds = suite::PairRounds::explicitRounds({}, measured.plan.rounds.sharedLayout());
  slot.plan.pass = "serial-retest";
  slot.plan.retestOf = index;
  slot.plan.retestWorst = 0;
  // At most suite::controlCount control pairs (retestOf sets the exact count).
  // No more controls than the pairs left once the retested ones are taken out.
  const std::int64_t controls = std::min<std::int64_t>(suite::controlCount(static_cast<std::size_t>(retested)),
                                                       measured.plan.rounds.pairs() - retested);
  slot.plan.maxSamplesPerRank = (retested + controls) * measured.instance.spec->iterations;
  slot.plan.description = "serial retest of #" + std::to_string(index) + ": its " + std::to_string(retested) +
                          " worst pairs and up to " + std::to_string(controls) +
                          " control pairs, one pair at a time";
  return slot;
}

// The estimate of `planned` if it had `rounds` rounds.
double estimateSecondsWith(const PlannedInstance& planned, double rounds) {
  const auto& spec = *planned.instance.spec;
  const auto& plan = planned.plan;
  if (plan.pass == "serial-retest" && spec.iterations > 0)  // pairs chosen later: its sample bound says how many
    rounds = static_cast<double>(plan.maxSamplesPerRank / spec.iterations);
  rounds = std::max(rounds, 1.0);
  const double perOperation = estimate::assumedLatencySeconds +
                              static_cast<double>(planned.instance.bytes) * std::max(plan.window, 1) /
                                  estimate::assumedBytesPerSecond;
  return rounds * (spec.warmup + spec.iterations) * perOperation + rounds * estimate::assumedRoundCostSeconds;
}

}  // namespace

double estimateSeconds(const PlannedInstance& planned) {
  return estimateSecondsWith(planned, static_cast<double>(planned.plan.rounds.rounds()));
}

std::string formatEstimate(double seconds) {
  char text[32];
  if (seconds >= 3600)
    std::snprintf(text, sizeof text, "%dh%02dm", static_cast<int>(seconds / 3600), static_cast<int>(seconds / 60) % 60);
  else if (seconds >= 60)
    std::snprintf(text, sizeof text, "%dm%02ds", static_cast<int>(seconds / 60), static_cast<int>(seconds) % 60);
  else
    std::snprintf(text, sizeof text, "%.3gs", seconds);
  return text;
}

namespace {

// An instance the budget may thin: a parallel pass with more than one round.
bool thinnable(const PlannedInstance& p) { return p.plan.pass == "parallel" && p.plan.rounds.rounds() > 1; }

// The cheapest the instances in `members` can be: one round for the thinnable.
double leastSeconds(const PlannedInstance& p) {
  return thinnable(p) ? estimateSecondsWith(p, 1) : estimateSeconds(p);
}

// A budget that covers `seconds`, in a unit the scenario reader takes.
std::string budgetSuggestion(double seconds) {
  if (seconds < 60) return std::to_string(static_cast<long long>(std::ceil(seconds * 1e3))) + "ms";
  if (seconds < 3600) return std::to_string(static_cast<long long>(std::ceil(seconds / 60))) + "m";
  return std::to_string(static_cast<long long>(std::ceil(seconds / 3600))) + "h";
}

// Keeps the same share of the thinnable instances' extra rounds (beyond their
// first) so that `members` fit in `budget` seconds; ScenarioError at `where`
// when even one round each does not fit.
void fitBudget(std::vector<PlannedInstance>& planned, const std::vector<std::size_t>& members, double budget,
               const std::string& where, const std::string& what) {
  double full = 0, least = 0;
  for (auto i : members) {
    full += estimateSeconds(planned[i]);
    least += leastSeconds(planned[i]);
  }
  if (full <= budget) return;
  if (least > budget)
    throw scenario::ScenarioError(
        where + ": " + what + " needs about " + formatEstimate(full) + " (estimate), and still " +
        formatEstimate(least) + " with one round per instance: more than its budget of " + formatEstimate(budget) +
        "; what would fit: budget: " + budgetSuggestion(least * 1.1) + " or more, or fewer sizes, "
        "iterations or tests (fabscope list --ranks N shows each instance's estimate)");
  const double share = (budget - least) / (full - least);
  for (auto i : members) {
    auto& p = planned[i];
    if (!thinnable(p)) continue;
    const auto rounds = static_cast<std::size_t>(p.plan.rounds.rounds());
    const auto keep = 1 + static_cast<std::size_t>(std::floor(static_cast<double>(rounds - 1) * share));
    if (keep >= rounds) continue;
    const auto pairsBefore = p.plan.rounds.pairs();
    // A sample of round positions drawn from (rounds, keep, seed) alone: every
    // rank draws the same and generates only the kept rounds' pairs.
    p.plan.rounds.keepSample(keep, i + 1);
    const auto pairsKept = p.plan.rounds.pairs();
    p.plan.roundsLeftOut += static_cast<std::int64_t>(rounds - keep);
    p.plan.pairsLeftOut += pairsBefore - pairsKept;
    p.plan.leftOut = "budget (" + what + ", " + formatEstimate(budget) + "): kept " + std::to_string(keep) + " of " +
                     std::to_string(rounds) + " rounds, a seeded sample; left out " +
                     std::to_string(rounds - keep) + " rounds, " + std::to_string(pairsBefore - pairsKept) + " pairs";
    p.plan.description += "; " + p.plan.leftOut;
    if (p.plan.rounds.layout()) p.plan.maxSamplesPerRank = p.plan.rounds.busiestRankRounds() * p.instance.spec->iterations;
  }
}

}  // namespace

std::vector<PlannedInstance> planMatrix(const scenario::Scenario& scenario, const suite::Registry& registry,
                                        int worldSize) {
  return planMatrix(scenario, registry, suite::WorldLayout::uniform(worldSize, 1, 0, 0));
}

std::vector<PlannedInstance> planMatrix(const scenario::Scenario& scenario, const suite::Registry& registry,
                                        const suite::WorldLayout& world) {
  const int worldSize = world.size();
  std::vector<PlannedInstance> out;
  // The distinct layouts of the measuring ranks (O(N) each): instances with the
  // same measuring ranks (every size and condition of a test) share one.
  std::vector<std::shared_ptr<const suite::RankLayout>> layouts;
  for (auto& instance : scenario::expandMatrix(scenario)) {
    const auto& kind = registry.kind(instance.spec->kind);
    checkCongestors(instance, kind, worldSize);
    auto plan = kind.planOn(instance, world);
    if (const auto* layout = plan.rounds.layout()) {
      const auto same = std::find_if(layouts.begin(), layouts.end(), [&](const auto& l) { return *l == *layout; });
      if (same != layouts.end()) plan.rounds.shareLayout(*same);
      else layouts.push_back(plan.rounds.sharedLayout());
    }
    const bool retests = plan.retestWorst > 0;
    out.push_back({std::move(instance), std::move(plan)});
    // Its serial retest comes right after it, planned now so that the count
    // announced at the start is the count in the table at the end.
    if (retests) out.push_back(retestSlotOf(out.back(), static_cast<int>(out.size()) - 1));
  }
  // The tests' own budgets first, then the scenario's over what they left.
  std::map<const scenario::TestSpec*, std::vector<std::size_t>> ofTest;
  for (std::size_t i = 0; i < out.size(); ++i) ofTest[out[i].instance.spec].push_back(i);
  for (const auto& [spec, members] : ofTest)
    if (spec->budgetSeconds > 0) fitBudget(out, members, spec->budgetSeconds, spec->where("budget"), "test '" + spec->name + "'");
  if (scenario.budgetSeconds > 0) {
    std::vector<std::size_t> all(out.size());
    std::iota(all.begin(), all.end(), 0);
    fitBudget(out, all, scenario.budgetSeconds, scenario.budgetAt, "scenario '" + scenario.name + "'");
  }
  for (const auto& planned : out) {
    const auto& instance = planned.instance;
    const std::int64_t memory = memoryPerRank(planned.plan);
    if (memory > scenario.maxMemoryPerRank)
      throw scenario::ScenarioError(
          instance.spec->at + ": test '" + instance.spec->name + "' at " +
          scenario::formatSize(instance.bytes) + " needs about " + std::to_string(memory >> 20) +
          " MiB per rank for samples and buffers, more than max_memory_per_rank (" +
          std::to_string(scenario.maxMemoryPerRank >> 20) + " MiB); lower iterations, window or sizes, or raise the "
          "limit with --set max_memory_per_rank=16GiB");
  }
  return out;
}

}  // namespace fabscope::driver
