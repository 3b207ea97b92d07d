// Planning: the matrix expanded, each instance planned by its kind, follow-up
// slots (serial retests) placed, the time budgets fitted, and the memory bound
// checked, all before anything runs; also a follow-up once its choice is made.
#include "driver/Planning.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

#include "conditions/NeighbourLoad.hpp"
#include "output/Records.hpp"
#include "scenario/Units.hpp"

namespace fabscope::driver {

PlannedInstance followUpOf(const PlannedInstance& measured, const FollowUpChoice& choice, int index) {
  PlannedInstance next = measured;
  measured.plan.part->followUp(next.plan, choice, index, measured.instance.spec->iterations);
  return next;
}

std::string retestsAmong(const std::vector<PlannedInstance>& planned) {
  const auto retests =
      std::count_if(planned.begin(), planned.end(), [](const PlannedInstance& p) { return p.plan.followUpOf >= 0; });
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
  throw scenario::ScenarioError(spec.where("conditions") + ": test '" + spec.name + "' under condition '" +
                                instance.condition + "' needs at least " + std::to_string(needed) +
                                " congestor ranks besides its " + std::to_string(canaries) +
                                " measuring ranks; the run gives it " + std::to_string(used) +
                                " rank(s) in all (start more ranks with mpirun -np, or measure with fewer: roles: "
                                "{canaries: N})");
}

// The place of `measured`'s follow-up in the plan: what it measures is known
// only once `measured` has run.
PlannedInstance followUpSlotOf(const PlannedInstance& measured, int index) {
  PlannedInstance slot = measured;
  measured.plan.part->followUpSlot(slot.plan, index, measured.instance.spec->iterations);
  return slot;
}

// The estimate of `planned` if it had `rounds` rounds.
double estimateSecondsWith(const PlannedInstance& planned, double rounds) {
  const auto& spec = *planned.instance.spec;
  const auto& plan = planned.plan;
  rounds = std::max(plan.part->estimatedRounds(plan, rounds, spec.iterations), 1.0);
  const double perOperation = estimate::assumedLatencySeconds + static_cast<double>(planned.instance.bytes) *
                                                                    std::max(plan.window, 1) /
                                                                    estimate::assumedBytesPerSecond;
  return rounds * (spec.warmup + spec.iterations) * perOperation + rounds * estimate::assumedRoundCostSeconds;
}

}  // namespace

double estimateSeconds(const PlannedInstance& planned) {
  return estimateSecondsWith(planned, static_cast<double>(planned.plan.part->roundCount()));
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

// An instance the budget may thin (PlanPart::thinnable: a pair pattern's parallel pass with more than one round).
bool thinnable(const PlannedInstance& p) { return p.plan.part->thinnable(p.plan); }

// The cheapest the instances in `members` can be: one round for the thinnable.
double leastSeconds(const PlannedInstance& p) { return thinnable(p) ? estimateSecondsWith(p, 1) : estimateSeconds(p); }

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
    throw scenario::ScenarioError(where + ": " + what + " needs about " + formatEstimate(full) +
                                  " (estimate), and still " + formatEstimate(least) +
                                  " with one round per instance: more than its budget of " + formatEstimate(budget) +
                                  "; what would fit: budget: " + budgetSuggestion(least * 1.1) +
                                  " or more, or fewer sizes, "
                                  "iterations or tests (fabscope list --ranks N shows each instance's estimate)");
  const double share = (budget - least) / (full - least);
  for (auto i : members) {
    auto& p = planned[i];
    if (!thinnable(p)) continue;
    const auto rounds = p.plan.part->roundCount();
    const auto keep = 1 + static_cast<std::int64_t>(std::floor(static_cast<double>(rounds - 1) * share));
    if (keep >= rounds) continue;
    p.plan.part->thin(p.plan, keep, i + 1, "budget (" + what + ", " + formatEstimate(budget) + ")",
                      p.instance.spec->iterations);
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
  // Parts that hold something alike once (the measuring ranks' layout, O(N)
  // each: every size and condition of a test has the same).
  std::vector<const suite::PlanPart*> distinct;
  for (auto& instance : scenario::expandMatrix(scenario)) {
    const auto& kind = registry.kind(instance.spec->kind);
    checkCongestors(instance, kind, worldSize);
    auto plan = kind.planOn(instance, world);
    if (plan.part->sharable() &&
        std::none_of(distinct.begin(), distinct.end(), [&](const auto* d) { return plan.part->shareWith(*d); }))
      distinct.push_back(&*plan.part);
    const bool followedUp = plan.part->followedUp();
    out.push_back({std::move(instance), std::move(plan)});
    // Its follow-up comes right after it, planned now so that the count
    // announced at the start is the count in the table at the end.
    if (followedUp) out.push_back(followUpSlotOf(out.back(), static_cast<int>(out.size()) - 1));
  }
  // The tests' own budgets first, then the scenario's over what they left.
  std::map<const scenario::TestSpec*, std::vector<std::size_t>> ofTest;
  for (std::size_t i = 0; i < out.size(); ++i) ofTest[out[i].instance.spec].push_back(i);
  for (const auto& [spec, members] : ofTest)
    if (spec->budgetSeconds > 0)
      fitBudget(out, members, spec->budgetSeconds, spec->where("budget"), "test '" + spec->name + "'");
  if (scenario.budgetSeconds > 0) {
    std::vector<std::size_t> all(out.size());
    std::iota(all.begin(), all.end(), 0);
    fitBudget(out, all, scenario.budgetSeconds, scenario.budgetAt, "scenario '" + scenario.name + "'");
  }
  for (const auto& planned : out) {
    const auto& instance = planned.instance;
    const std::int64_t memory = memoryPerRank(planned.plan);
    if (memory > scenario.maxMemoryPerRank)
      throw scenario::ScenarioError(instance.spec->at + ": test '" + instance.spec->name + "' at " +
                                    scenario::formatSize(instance.bytes) + " needs about " +
                                    std::to_string(memory >> 20) +
                                    " MiB per rank for samples and buffers, more than max_memory_per_rank (" +
                                    std::to_string(scenario.maxMemoryPerRank >> 20) +
                                    " MiB); lower iterations, window or sizes, or raise the "
                                    "limit with --set max_memory_per_rank=16GiB");
  }
  return out;
}

}  // namespace fabscope::driver
