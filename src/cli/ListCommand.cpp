#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

#include "cli/Commands.hpp"
#include "driver/Runner.hpp"
#include "kinds/Registry.hpp"
#include "model/ModelSpec.hpp"
#include "model/TrafficSizes.hpp"
#include "output/Records.hpp"
#include "runtime/Mpi.hpp"
#include "scenario/Units.hpp"

namespace fabscope::cli {
namespace {

// One size the serving-impact view (fabscope_analysis impact) reads: the kind that
// measures it, the scenario spelling that derives it, the bytes and the formula.
struct ServingNeed {
  std::string kind;
  std::string derive;
  std::uint64_t bytes = 0;
  std::string formula;
};

std::vector<ServingNeed> servingNeeds(const ListCommand& c, const model::ModelSpec& spec) {
  const model::ParallelLayout layout{static_cast<std::uint32_t>(c.tp)};
  std::vector<ServingNeed> needs;
  if (c.tp > 1)
    for (const int batch : c.decodeBatches) {
      const auto size = model::allReduceBytesForDecode(spec, static_cast<std::uint64_t>(batch));
      needs.push_back({"allreduce", "tp-allreduce, decode_batch: " + std::to_string(batch), size.bytes, size.formula});
    }
  for (const int prompt : c.promptTokens) {
    const auto size = model::kvBytesPerRequest(spec, layout, static_cast<std::uint32_t>(c.blockTokens),
                                               static_cast<std::uint64_t>(prompt));
    needs.push_back(
        {"kvpush",
         "kv-request, block_tokens: " + std::to_string(c.blockTokens) + ", prompt_tokens: " + std::to_string(prompt),
         size.bytes, size.formula});
  }
  return needs;
}

}  // namespace

int printServingNeeds(const ListCommand& c) {
  try {
    if (c.tp < 1 || c.blockTokens < 1) throw std::invalid_argument("--tp and --block-tokens must be at least 1");
    for (const int v : c.decodeBatches)
      if (v < 1) throw std::invalid_argument("--decode-batch values must be at least 1");
    for (const int v : c.promptTokens)
      if (v < 1) throw std::invalid_argument("--prompt values must be at least 1");
    const auto& spec = model::findPreset(c.model);
    const model::ParallelLayout layout{static_cast<std::uint32_t>(c.tp)};
    std::printf("model %s: hidden_size %u, layers %u, attention_heads %u, kv_heads %u, head_dim %u, dtype %s",
                spec.name.c_str(), spec.hiddenSize, spec.layers, spec.attentionHeads, spec.kvHeads, spec.headDim,
                std::string(model::dtypeName(spec.dtype)).c_str());
    if (spec.mla) std::printf(", mla %u+%u", spec.mla->kvLoraRank, spec.mla->ropeHeadDim);
    if (spec.moe)
      std::printf(", moe %u+%u experts top-%u ffn %u", spec.moe->routedExperts, spec.moe->sharedExperts,
                  spec.moe->expertsPerToken, spec.moe->expertIntermediate);
    const auto steps = model::allReducesPerForwardStep(spec, layout);
    std::printf("\ndeployment: tp %d; all-reduces per decode step: %llu (%s)\n", c.tp,
                static_cast<unsigned long long>(steps.count), steps.formula.c_str());
    if (spec.moe) {
      const auto rounds = model::moeRoundsPerForwardStep(spec);
      std::printf("MoE rounds per decode step: %llu (%s)\n", static_cast<unsigned long long>(rounds.count),
                  rounds.formula.c_str());
    }
    std::printf("sizes a serving-impact view needs (python3 -m fabscope_analysis impact):\n");
    for (const auto& need : servingNeeds(c, spec))
      std::printf("  %-9s %10s  derive: %s\n            = %s\n", need.kind.c_str(),
                  scenario::formatSize(static_cast<std::int64_t>(need.bytes)).c_str(), need.derive.c_str(),
                  need.formula.c_str());
    if (spec.moe) {
      const auto token = model::moeDispatchBytesPerToken(spec, model::Dtype::fp8);
      const auto combine = model::moeCombineBytesPerToken(spec);
      std::printf(
          "  MoE dispatch: %s per token copy (%s)\n  MoE combine: %s per expert result (%s)\n"
          "            measured by kind alltoall, sizes: {derive: moe-dispatch, tokens: [...]}\n",
          scenario::formatSize(static_cast<std::int64_t>(token.bytes)).c_str(), token.formula.c_str(),
          scenario::formatSize(static_cast<std::int64_t>(combine.bytes)).c_str(), combine.formula.c_str());
    }
    std::printf("  front-end API share: measured by kind api (requests, streamed chunks; its sizes are the chunks')\n");
    return exit_code::ok;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "fabscope: error: %s\n", e.what());
    return exit_code::usage;
  }
}

namespace {

void printListHeading(const ListCommand& command, const scenario::Scenario& scenario,
                      const std::vector<driver::PlannedInstance>& planned, int ranks) {
  std::printf("scenario '%s' (%s) for %d ranks: %zu test instances%s\n", scenario.name.c_str(), scenario.file.c_str(),
              ranks, planned.size(), driver::retestsAmong(planned).c_str());
  std::printf("  layout assumed: %d ranks per node%s\n", command.ranksPerNode,
              command.nodesPerLeaf > 0
                  ? (", " + std::to_string(command.nodesPerLeaf) + " nodes per leaf" +
                     (command.leavesPerPod > 0 ? ", " + std::to_string(command.leavesPerPod) + " leaves per pod"
                                               : std::string()))
                        .c_str()
                  : ", no leaf labels");
  if (!scenario.description.empty()) std::printf("  %s\n", scenario.description.c_str());
  // The transport keys the scenario gives, with where each was given (the rest keep their defaults).
  std::string given;
  for (const auto& [transport, settings] : scenario.transports)
    for (const auto& v : settings->values())
      if (!v.from.empty())
        given += (given.empty() ? "" : "; ") + transport + " " + v.key + "=" + v.value + " (" + v.from + ")";
  if (!given.empty()) std::printf("  transport settings: %s\n", given.c_str());
}

// What the whole matrix needs: the most memory one instance takes per rank, and the time estimate.
struct MatrixNeeds {
  std::int64_t peakMemory = 0;
  double seconds = 0;
};

// One line per planned instance, with its size formula and the commands it runs.
MatrixNeeds printInstances(const std::vector<driver::PlannedInstance>& planned, const suite::Registry& registry) {
  std::printf("\n%-4s %-22s %-9s %-8s %-8s %-6s %-5s %6s %6s %9s %10s %7s %9s  %s\n", "#", "test", "kind", "size",
              "cond", "transp", "mem", "iters", "warmup", "timeout", "mem/rank", "rounds", "estimate", "plan");
  MatrixNeeds needs;
  int index = 0;
  for (const auto& p : planned) {
    const auto& spec = *p.instance.spec;
    const std::int64_t memory = driver::memoryPerRank(p.plan);
    needs.peakMemory = std::max(needs.peakMemory, memory);
    char timeout[16];
    std::snprintf(timeout, sizeof timeout, "%.0fs", spec.timeoutSeconds);
    const double estimate = driver::estimateSeconds(p);
    needs.seconds += estimate;
    const auto roundCount = p.plan.part->roundCount();
    const std::string rounds = roundCount < 0 ? "-" : std::to_string(roundCount);
    std::printf("%-4d %-22.22s %-9s %-8s %-8.8s %-6s %-5s %6d %6d %9s %10s %7s %9s  %s\n", index++, spec.name.c_str(),
                spec.kind.c_str(), scenario::formatSize(p.instance.bytes).c_str(), p.instance.condition.c_str(),
                spec.transport.c_str(), spec.memory.c_str(), spec.iterations, spec.warmup, timeout,
                scenario::formatSize(memory).c_str(), rounds.c_str(), driver::formatEstimate(estimate).c_str(),
                p.plan.description.c_str());
    if (!p.instance.sizeFormula.empty()) std::printf("     size = %s\n", p.instance.sizeFormula.c_str());
    for (const auto& line : registry.kind(spec.kind).shellCommands(spec)) std::printf("     runs: %s\n", line.c_str());
  }
  return needs;
}

// "test [quiet, incast]; ..." for the instances that measure `need`, "" when none does.
std::string measuredBy(const ServingNeed& need, const std::vector<driver::PlannedInstance>& planned) {
  std::map<std::string, std::set<std::string>> conditionsByTest;
  for (const auto& p : planned)
    if (p.instance.spec->kind == need.kind && p.instance.bytes == static_cast<std::int64_t>(need.bytes))
      conditionsByTest[p.instance.spec->name].insert(p.instance.condition);
  std::string where;
  for (const auto& [test, conditions] : conditionsByTest) {
    where += (where.empty() ? "" : "; ") + test + " [";
    std::string list;
    for (const auto& condition : conditions) list += (list.empty() ? "" : ", ") + condition;
    where += list + "]";
  }
  return where;
}

// --model with a scenario: the model's serving-impact sizes and which instances measure each.
int printModelCoverage(const ListCommand& command, const std::vector<driver::PlannedInstance>& planned) {
  std::printf("\n");
  const int status = printServingNeeds(command);
  if (status != exit_code::ok) return status;
  const auto needs = servingNeeds(command, model::findPreset(command.model));
  int missing = 0;
  for (const auto& need : needs) {
    const std::string where = measuredBy(need, planned);
    if (where.empty()) ++missing;
    std::printf("  %s %s: %s\n", need.kind.c_str(), scenario::formatSize(static_cast<std::int64_t>(need.bytes)).c_str(),
                where.empty() ? "NOT measured by this scenario" : ("measured by " + where).c_str());
  }
  std::printf("serving-impact sizes measured by this scenario: %zu of %zu\n", needs.size() - missing, needs.size());
  return exit_code::ok;
}

void printMatrixNeeds(const MatrixNeeds& needs, const scenario::Scenario& scenario) {
  std::printf("\npeak memory per rank for samples and buffers: about %.1f MiB (limit max_memory_per_rank %.0f MiB)\n",
              static_cast<double>(needs.peakMemory) / (1 << 20),
              static_cast<double>(scenario.maxMemoryPerRank) / (1 << 20));
  std::printf(
      "estimated time: %s in all%s (assuming %.0f us and %.0f GB/s per pair and %.0f ms per round: a "
      "planning figure, not a prediction)\n",
      driver::formatEstimate(needs.seconds).c_str(),
      scenario.budgetSeconds > 0 ? (", budget " + driver::formatEstimate(scenario.budgetSeconds)).c_str() : "",
      driver::estimate::assumedLatencySeconds * 1e6, driver::estimate::assumedBytesPerSecond / 1e9,
      driver::estimate::assumedRoundCostSeconds * 1e3);
}

}  // namespace

int runListCommand(const ListCommand& command, int& argc, char**& argv) {
  runtime::MpiEnvironment mpi(argc, argv);
  const auto world = runtime::Communicator::world();
  if (world.rank() != 0) return exit_code::ok;
  const int ranks = command.ranks > 0 ? command.ranks : world.size();
  const suite::Registry registry;
  try {
    auto rules = registry.scenarioRules(ranks);
    rules.allowCommands = true;  // list runs nothing: it shows the commands a run would
    const auto scenario = scenario::loadScenarioFile(command.scenarioPath, command.overrides, rules);
    const auto planned = driver::planMatrix(
        scenario, registry,
        suite::WorldLayout::uniform(ranks, command.ranksPerNode, command.nodesPerLeaf, command.leavesPerPod));
    printListHeading(command, scenario, planned, ranks);
    const auto needs = printInstances(planned, registry);
    if (!command.model.empty())
      if (const int status = printModelCoverage(command, planned); status != exit_code::ok) return status;
    printMatrixNeeds(needs, scenario);
    return exit_code::ok;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "fabscope: error: %s\n", e.what());
    return exit_code::usage;
  }
}

int runLaunchFactsCommand(const LaunchFactsCommand& command) {
  // Without a rank count the per-test "needs N ranks" checks must not refuse
  // here: the run itself checks them against the ranks it really has.
  constexpr int ranksNotKnown = 1 << 20;
  const int ranks = command.ranks > 0 ? command.ranks : ranksNotKnown;
  const suite::Registry registry;
  try {
    const auto scenario = scenario::loadScenarioFile(command.run.scenarioPath, command.run.overrides, [&] {
      auto rules = registry.scenarioRules(ranks);
      rules.allowCommands = command.run.allowCommands;
      return rules;
    }());
    const bool faultDrill = std::any_of(scenario.tests.begin(), scenario.tests.end(),
                                        [](const scenario::TestSpec& test) { return test.kind == "fault"; });
    std::printf("launch-facts: output=%s\n", command.run.outputPath.c_str());
    std::printf("launch-facts: fault_drill=%d\n", faultDrill ? 1 : 0);
    return exit_code::ok;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "fabscope: error: %s\n", e.what());
    return exit_code::usage;
  }
}

}  // namespace fabscope::cli
