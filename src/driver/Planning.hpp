#pragma once
// Planning a run before anything runs: the matrix with every instance's plan,
// serial retest slots, time budgets, the memory bound, and the planning
// estimates `fabscope list` shows.
#include <cstdint>
#include <string>
#include <vector>

#include "kinds/Registry.hpp"
#include "scenario/Matrix.hpp"

namespace fabscope::driver {

struct PlannedInstance {
  scenario::TestInstance instance;
  suite::InstancePlan plan;
};

// " (K of them serial retests)" for a plan with K retest slots, else "".
std::string retestsAmong(const std::vector<PlannedInstance>& planned);

// Samples and buffers one rank needs for an instance (known before it runs).
std::int64_t memoryPerRank(const suite::InstancePlan& plan);

// The matrix with every instance's plan, each instance with a follow-up
// (PlanPart::followedUp: an all-pairs serial retest) followed by its slot
// (filled when it runs); throws ScenarioError on bad kind keys and on an instance above the
// scenario's max_memory_per_rank.
std::vector<PlannedInstance> planMatrix(const scenario::Scenario& scenario, const suite::Registry& registry,
                                        int worldSize);
// The same, knowing where every rank sits (patterns that follow the topology
// need it; the plan above takes every rank for a node of its own). Applies the
// time budget: a scenario's or a test's `budget` keeps a seeded sample of the
// rounds of the patterns that have many (PlanPart::thin says what went), and
// refuses (ScenarioError) a budget the instances cannot fit even with one
// round each.
std::vector<PlannedInstance> planMatrix(const scenario::Scenario& scenario, const suite::Registry& registry,
                                        const suite::WorldLayout& world);

// A planning figure for an instance's time (not a prediction): rounds x
// (warmup + iterations) x (assumedLatency + bytes x window / assumedBandwidth)
// + rounds x assumedRoundCost. Kinds without rounds count one.
namespace estimate {
inline constexpr double assumedLatencySeconds = 20e-6;
inline constexpr double assumedBytesPerSecond = 10e9;
inline constexpr double assumedRoundCostSeconds = 1e-3;  // the barrier and the pair's setup
}  // namespace estimate
double estimateSeconds(const PlannedInstance& planned);
// "1h02m", "3m20s", "12.5s"
std::string formatEstimate(double seconds);

// What rank 0 chose for a follow-up (PlanPart::chooseFollowUp), received by
// every rank; empty: nothing to follow up.
using FollowUpChoice = std::vector<std::int32_t>;

// The follow-up instance of `measured` (the instance of `index`), made by its
// kind family's part from the choice.
PlannedInstance followUpOf(const PlannedInstance& measured, const FollowUpChoice& choice, int index);

}  // namespace fabscope::driver
