#include <algorithm>
#include <cstdio>

#include "cli/Commands.hpp"
#include "driver/Runner.hpp"
#include "output/Records.hpp"
#include "runtime/Mpi.hpp"
#include "scenario/Units.hpp"

namespace fabscope::cli {

int runListCommand(const ListCommand& command, int& argc, char**& argv) {
  runtime::MpiEnvironment mpi(argc, argv);
  const auto world = runtime::Communicator::world();
  if (world.rank() != 0) return exit_code::ok;
  const int ranks = command.ranks > 0 ? command.ranks : world.size();
  const suite::Registry registry;
  try {
    const auto scenario = scenario::loadScenarioFile(command.scenarioPath, command.overrides, registry.scenarioRules(ranks));
    const auto planned = driver::planMatrix(scenario, registry, ranks);
    std::printf("scenario '%s' (%s) for %d ranks: %zu test instances\n", scenario.name.c_str(),
                scenario.file.c_str(), ranks, planned.size());
    if (!scenario.description.empty()) std::printf("  %s\n", scenario.description.c_str());
    std::printf("\n%-4s %-22s %-9s %-8s %-8s %-6s %-5s %6s %6s %9s %10s  %s\n", "#", "test", "kind", "size", "cond",
                "transp", "mem", "iters", "warmup", "timeout", "mem/rank", "plan");
    std::int64_t peak = 0;
    int index = 0;
    for (const auto& p : planned) {
      const auto& spec = *p.instance.spec;
      const std::int64_t memory = driver::memoryPerRank(p.plan);
      peak = std::max(peak, memory);
      char timeout[16];
      std::snprintf(timeout, sizeof timeout, "%.0fs", spec.timeoutSeconds);
      std::printf("%-4d %-22.22s %-9s %-8s %-8.8s %-6s %-5s %6d %6d %9s %10s  %s\n", index++, spec.name.c_str(),
                  spec.kind.c_str(), scenario::formatSize(p.instance.bytes).c_str(), p.instance.condition.c_str(),
                  spec.transport.c_str(), spec.memory.c_str(), spec.iterations, spec.warmup, timeout,
                  scenario::formatSize(memory).c_str(), p.plan.description.c_str());
      if (!p.instance.sizeFormula.empty()) std::printf("     size = %s\n", p.instance.sizeFormula.c_str());
    }
    std::printf("\npeak memory per rank for samples and buffers: about %.1f MiB (limit max_memory_per_rank %.0f MiB)\n",
                static_cast<double>(peak) / (1 << 20), static_cast<double>(scenario.maxMemoryPerRank) / (1 << 20));
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
    const auto scenario =
        scenario::loadScenarioFile(command.run.scenarioPath, command.run.overrides, registry.scenarioRules(ranks));
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
