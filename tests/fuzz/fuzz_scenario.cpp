// libFuzzer target: the scenario loader and the matrix planner, as `fabscope
// run` and `fabscope list` call them on a 4-rank run.
//
// Contract checked: any input either loads and plans, or is refused with an
// exception derived from fabscope::UsageError (exit 2 with a message). Any
// other exception, a crash, a sanitizer report or a hang is a bug.
//
// Leading lines "#!set key=value" are passed as --set overrides (they are YAML
// comments, so the scenario text itself is unchanged); this reaches the
// override code with the same input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "driver/Runner.hpp"
#include "kinds/Registry.hpp"
#include "scenario/Scenario.hpp"
#include "scenario/Units.hpp"

namespace {

constexpr int fuzzWorldSize = 4;
constexpr std::string_view overridePrefix = "#!set ";

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "fuzz_scenario: BUG: %s\n", what.c_str());
  std::abort();
}

std::vector<std::string> overridesOf(std::string_view text) {
  std::vector<std::string> overrides;
  while (text.substr(0, overridePrefix.size()) == overridePrefix && overrides.size() < 8) {
    const auto end = text.find('\n');
    overrides.emplace_back(text.substr(
        overridePrefix.size(), end == std::string_view::npos ? std::string_view::npos : end - overridePrefix.size()));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return overrides;
}

// What a loaded scenario must satisfy whatever the input was.
void checkLoaded(const fabscope::scenario::Scenario& s) {
  using fabscope::scenario::maxMessageBytes;
  if (s.tests.empty()) bug("a scenario without tests was accepted");
  for (const auto& t : s.tests) {
    if (t.sizes.empty()) bug("test '" + t.name + "' has no sizes");
    for (const auto b : t.sizes)
      if (b < 1 || b > maxMessageBytes) bug("test '" + t.name + "' has size " + std::to_string(b));
    if (t.iterations < 1 || t.warmup < 0) bug("test '" + t.name + "' has iterations/warmup out of range");
    if (!(t.timeoutSeconds > 0)) bug("test '" + t.name + "' has a timeout <= 0");
    if (t.conditions.empty()) bug("test '" + t.name + "' has no conditions");
    if (t.ranks < 0 || t.ranks > fuzzWorldSize) bug("test '" + t.name + "' has ranks " + std::to_string(t.ranks));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fabscope::suite::Registry registry;
  static const auto rules = registry.scenarioRules(fuzzWorldSize);
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto scenario = fabscope::scenario::loadScenarioText(text, "fuzz.yaml", overridesOf(text), rules);
    checkLoaded(scenario);
    const auto planned = fabscope::driver::planMatrix(scenario, registry, fuzzWorldSize);
    for (const auto& p : planned)
      if (p.plan.maxSamplesPerRank < 0 || p.plan.bufferBytesPerRank < 0) bug("negative sample or buffer plan");
  } catch (const fabscope::UsageError&) {
    // The accepted way to refuse an input.
  } catch (const std::exception& e) {
    bug(std::string("exception that is not a UsageError: ") + typeid(e).name() + ": " + e.what());
  }
  return 0;
}
