#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "driver/Runner.hpp"
#include "fabscope/BuildConfig.hpp"
#include "kinds/Registry.hpp"
#include "scenario/Matrix.hpp"
#include "scenario/Scenario.hpp"
#include "transport/TransportFactory.hpp"

using namespace fabscope;
namespace fs = std::filesystem;

namespace {

scenario::Scenario load(const std::string& text, std::vector<std::string> overrides = {}, int ranks = 4) {
  static const suite::Registry registry;
  auto s = scenario::loadScenarioText(text, "t.yaml", overrides, registry.scenarioRules(ranks));
  driver::planMatrix(s, registry, ranks);
  return s;
}

// One key of a transport's settings as the loader read it (its value and where it came from).
scenario::TransportSettingValue settingOf(const scenario::Scenario& s, const std::string& transport,
                                          const std::string& key) {
  const auto it = s.transports.find(transport);
  if (it == s.transports.end()) return {key, "no settings for " + transport, ""};
  for (const auto& v : it->second->values())
    if (v.key == key) return v;
  return {key, "no key " + key, ""};
}

std::string errorOf(const std::string& text, std::vector<std::string> overrides = {}, int ranks = 4) {
  try {
    load(text, overrides, ranks);
  } catch (const scenario::ScenarioError& e) {
    return e.what();
  }
  return "no error";
}

const char* const twoTests = R"(
name: t
defaults: {iterations: 7, timeout: 5s}
tests:
  - name: lat
    kind: latency
    sizes: [8, "1KiB..4KiB x2"]
  - name: bw
    kind: bandwidth
    sizes: 1MiB
    window: 4
    iterations: 3
)";

}  // namespace

TEST(Scenario, DefaultsApplyUnlessTheTestSetsItsOwn) {
  const auto s = load(twoTests);
  ASSERT_EQ(s.tests.size(), 2u);
  EXPECT_EQ(s.tests[0].iterations, 7);
  EXPECT_EQ(s.tests[1].iterations, 3);
  EXPECT_DOUBLE_EQ(s.tests[0].timeoutSeconds, 5);
  EXPECT_EQ(s.tests[0].sizes, (std::vector<std::int64_t>{8, 1024, 2048, 4096}));
  EXPECT_EQ(s.tests[0].transport, "mpi");
  EXPECT_EQ(s.tests[0].conditions, std::vector<std::string>{"quiet"});
}

TEST(Scenario, MatrixExpandsTestsTimesSizesTimesConditions) {
  const auto s = load(twoTests);
  const auto m = scenario::expandMatrix(s);
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0].caseId, "lat/8B");
  EXPECT_EQ(m[4].caseId, "bw/1MiB");
  EXPECT_EQ(m[4].bytes, 1 << 20);
}

TEST(Scenario, RepeatsRunInRoundsOverTheWholeMatrix) {
  // bw repeats 3 times, lat (default from `defaults`) twice: rounds over the matrix,
  // a test with fewer repeats simply drops out of the later rounds.
  const auto s = load(std::string(twoTests) + "    repeats: 3\n", {"lat.repeats=2"});
  const auto m = scenario::expandMatrix(s);
  ASSERT_EQ(m.size(), 4u * 2 + 1 * 3);
  std::vector<std::string> order;
  for (const auto& i : m) order.push_back(i.caseId + "#" + std::to_string(i.replicate));
  EXPECT_EQ(order,
            (std::vector<std::string>{"lat/8B#0", "lat/1KiB#0", "lat/2KiB#0", "lat/4KiB#0", "bw/1MiB#0", "lat/8B#1",
                                      "lat/1KiB#1", "lat/2KiB#1", "lat/4KiB#1", "bw/1MiB#1", "bw/1MiB#2"}));
  EXPECT_EQ(scenario::expandMatrix(load(twoTests)).size(), 5u);  // default: once
  EXPECT_NE(errorOf(std::string(twoTests) + "    repeats: 0\n").find("t.yaml:13:"), std::string::npos)
      << errorOf(std::string(twoTests) + "    repeats: 0\n");
}

// roles.groups: one instance per group of `canaries` ranks, each group its own case with
// its conditions adjacent; `all` counts the whole groups the run's ranks hold.
TEST(Scenario, GroupRotationExpandsOneCasePerGroup) {
  const char* const rotated = R"(
name: t
tests:
  - name: tp
    kind: allreduce
    sizes: [8KiB, 64KiB]
    conditions: [quiet, incast]
    roles: {canaries: 2, placement: packed, groups: all}
)";
  const auto s = load(rotated, {}, 8);
  EXPECT_EQ(s.tests[0].groups, 4);
  const auto m = scenario::expandMatrix(s);
  ASSERT_EQ(m.size(), 2u * 4 * 2);
  std::vector<std::string> order;
  for (const auto& i : m) order.push_back(i.caseId + "[" + i.condition + "]g" + std::to_string(i.group));
  EXPECT_EQ(order[0], "tp/8KiB/group0[quiet]g0");
  EXPECT_EQ(order[1], "tp/8KiB/group0[incast]g0");
  EXPECT_EQ(order[2], "tp/8KiB/group1[quiet]g1");
  EXPECT_EQ(order[7], "tp/8KiB/group3[incast]g3");
  EXPECT_EQ(order[8], "tp/64KiB/group0[quiet]g0");
  EXPECT_EQ(load(std::string(rotated), {}, 7).tests[0].groups, 3);  // whole groups only
  const std::string two = std::regex_replace(std::string(rotated), std::regex("groups: all"), "groups: 2");
  EXPECT_EQ(scenario::expandMatrix(load(two, {}, 8)).size(), 2u * 2 * 2);
  // Without groups: one case per size, no group in its name.
  const std::string plain = std::regex_replace(std::string(rotated), std::regex(", groups: all"), "");
  EXPECT_EQ(scenario::expandMatrix(load(plain, {}, 8))[0].caseId, "tp/8KiB");
  EXPECT_NE(errorOf(std::regex_replace(std::string(rotated), std::regex("groups: all"), "groups: 5"), {}, 8)
                .find("t.yaml:8:"),
            std::string::npos);
  EXPECT_NE(errorOf(std::regex_replace(std::string(rotated), std::regex("groups: all"), "groups: some"), {}, 8)
                .find("'groups' must be 'all' or a count"),
            std::string::npos);
  EXPECT_NE(errorOf(std::regex_replace(std::string(rotated), std::regex("canaries: 2"), "canaries: 50%"), {}, 8)
                .find("give canaries as a count"),
            std::string::npos);
  // A kind that places its ranks at plan time (latency pairs) does not rotate.
  EXPECT_NE(errorOf(std::regex_replace(std::string(rotated), std::regex("kind: allreduce"), "kind: latency"), {}, 8)
                .find("rotates the measuring ranks of the collective kinds only (allreduce, alltoall)"),
            std::string::npos);
}

TEST(Scenario, OverridesForAllTestsAndForOneTest) {
  const auto s = load(twoTests, {"iterations=11", "bw.window=2", "seed=9"});
  EXPECT_EQ(s.tests[0].iterations, 11);
  EXPECT_EQ(s.tests[1].iterations, 11);
  EXPECT_TRUE(s.seedGiven);
  EXPECT_EQ(s.seed, 9u);
  const auto planned = driver::planMatrix(s, suite::Registry(), 4);
  EXPECT_EQ(planned.back().plan.window, 2);
}

TEST(Scenario, OverrideErrorsNameTheOverride) {
  EXPECT_NE(errorOf(twoTests, {"iterations"}).find("expected key=value"), std::string::npos);
  EXPECT_NE(errorOf(twoTests, {"iterations=zero"}).find("--set iterations=zero: 'iterations' must be a whole number"),
            std::string::npos);
  EXPECT_NE(errorOf(twoTests, {"bogus=1"}).find("--set bogus=1: no test in the scenario has a key 'bogus'"),
            std::string::npos);
  EXPECT_NE(errorOf(twoTests, {"nosuch.iterations=1"}).find("no test is named 'nosuch'"), std::string::npos);
  EXPECT_NE(errorOf(twoTests, {"bw.window=0"}).find("--set bw.window=0"), std::string::npos);
  EXPECT_NE(errorOf(twoTests, {"hdf5=fast"}).find("auto, parallel or serial"), std::string::npos);
}

// A bad value given with --set is the option's fault, not the file's: the error
// names the option, never a position such as t.yaml:1:1 (the value was parsed
// on its own, so its marks are positions in the option's text).
TEST(Scenario, OverrideValueErrorsNameTheOptionNotAFilePosition) {
  const std::vector<std::vector<std::string>> cases = {
      {"iterations=zero"},      // the loader's own checks
      {"lat.sizes=[8, huge]"},  // an item inside a list
      {"lat.timeout=soon"},
      {"conditions=[quiet, loud]"},
      {"ranks=99"},                                                              // a check after parsing
      {"bw.window=[1, 2]"},                                                      // a kind's key (ParamReader)
      {"lat.pattern=all-pairs", "lat.all_pairs={retest_worst: many}"},           // nested in a kind's mapping
      {"lat.pattern=all-pairs", "lat.all_pairs={retest: 2}"},                    // an unknown key there
      {"lat.sizes={derive: kv-block, model: no-such-model, block_tokens: 16}"},  // a model error
  };
  for (const auto& overrides : cases) {
    const std::string error = errorOf(twoTests, overrides);
    const std::string option = "--set " + overrides.back() + ": ";
    EXPECT_EQ(error.rfind(option, 0), 0u) << "expected '" << option << "...', got: " << error;
    EXPECT_EQ(error.find("t.yaml"), std::string::npos) << error;
  }
  // The file's own mistakes keep their file:line:column.
  EXPECT_NE(errorOf(std::string(twoTests) + "    repeats: lots\n").find("t.yaml:13:"), std::string::npos);
}

TEST(Scenario, TooFewRanksForPointToPoint) {
  EXPECT_NE(errorOf(twoTests, {}, 1).find("needs at least 2 ranks"), std::string::npos);
}

// Every file in tests/data/bad-scenarios starts with "# expect: LINE:COL: text".
TEST(Scenario, BadInputCorpusNamesFileLineColumnAndProblem) {
  const fs::path dir = fs::path(FABSCOPE_TEST_DATA_DIR) / "bad-scenarios";
  int checked = 0;
  static const suite::Registry registry;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    std::ifstream in(entry.path());
    std::string first;
    std::getline(in, first);
    // "# expect: LINE:COL: text" (parsed by hand: std::regex draws GCC 12's
    // -Wmaybe-uninitialized false positives in the sanitizer build).
    const std::string prefix = "# expect: ";
    ASSERT_EQ(first.rfind(prefix, 0), 0u) << entry.path();
    const auto colon = first.find(':', prefix.size());
    const auto end = colon == std::string::npos ? colon : first.find(": ", colon + 1);
    ASSERT_NE(end, std::string::npos) << entry.path();
    const std::string line = first.substr(prefix.size(), colon - prefix.size());
    const std::string column = first.substr(colon + 1, end - colon - 1);
    const auto digits = [](const std::string& s) {
      return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
    };
    ASSERT_TRUE(digits(line) && digits(column)) << entry.path();
    const std::string where = entry.path().string() + ":" + line + ":" + column + ": ";
    const std::string text = first.substr(end + 2);
    std::string message = "no error";
    try {
      auto s = scenario::loadScenarioFile(entry.path().string(), {}, registry.scenarioRules(4));
      driver::planMatrix(s, registry, 4);
    } catch (const scenario::ScenarioError& e) {
      message = e.what();
    }
    EXPECT_EQ(message.rfind(where, 0), 0u) << entry.path().filename() << ": got: " << message;
    EXPECT_NE(message.find(text), std::string::npos) << entry.path().filename() << ": got: " << message;
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

TEST(Scenario, ShippedScenariosAreValid) {
  static const suite::Registry registry;
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(FABSCOPE_SOURCE_DIR) / "scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    // GPU scenarios name transport nccl / memory cuda, which builds without
    // CUDA/NCCL must refuse with a clear error at the offending line.
    if (!FABSCOPE_HAVE_NCCL && entry.path().filename().string().rfind("gpu-", 0) == 0) {
      try {
        auto s = scenario::loadScenarioFile(entry.path().string(), {}, registry.scenarioRules(4));
        driver::planMatrix(s, registry, 4);
        ADD_FAILURE() << entry.path() << " loaded in a build without NCCL";
      } catch (const scenario::ScenarioError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(entry.path().filename().string() + ":"), std::string::npos) << what;
        EXPECT_NE(what.find("CUDA"), std::string::npos)
            << what;  // "built without CUDA/NCCL" or "needs a build with CUDA"
      }
      ++checked;
      continue;
    }
    // The serving mixes lay out 8 ranks (their headers say so); on fewer the
    // loader names the layout at its position.
    const bool mix = entry.path().filename().string().rfind("serving-mix-", 0) == 0;
    const int ranks = mix ? 8 : 4;
    EXPECT_NO_THROW({
      auto s = scenario::loadScenarioFile(entry.path().string(), {}, registry.scenarioRules(ranks));
      driver::planMatrix(s, registry, ranks);
    }) << entry.path();
    if (mix) {
      try {
        auto s = scenario::loadScenarioFile(entry.path().string(), {}, registry.scenarioRules(4));
        ADD_FAILURE() << entry.path() << " loaded on 4 ranks";
      } catch (const scenario::ScenarioError& e) {
        EXPECT_NE(std::string(e.what()).find(entry.path().filename().string() + ":"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("= 8 ranks, but the test has 4"), std::string::npos) << e.what();
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

TEST(Scenario, AFolderIsRefusedByName) {
  static const suite::Registry registry;
  try {
    scenario::loadScenarioFile(FABSCOPE_SOURCE_DIR "/scenarios", {}, registry.scenarioRules(4));
    ADD_FAILURE() << "a folder loaded as a scenario";
  } catch (const scenario::ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("is a folder; expected a scenario file"), std::string::npos) << e.what();
  }
}

TEST(Scenario, MissingFileIsAUsageError) {
  static const suite::Registry registry;
  EXPECT_THROW(scenario::loadScenarioFile("/nonexistent/x.yaml", {}, registry.scenarioRules(4)),
               scenario::ScenarioError);
}

TEST(Scenario, SizesDerivedFromTheModelCarryTheirFormula) {
  const auto s = load(R"(
model: llama3-70b
parallel: {tp: 8}
tests:
  - name: ar
    kind: latency
    sizes: {derive: tp-allreduce, decode_batch: [1, 32, 256], prefill_chunk: 2048}
  - name: kv
    kind: bandwidth
    sizes: {derive: kv-block-layer, block_tokens: 16}
  - name: req
    kind: bandwidth
    sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [8192]}
)");
  EXPECT_EQ(s.tests[0].sizes, (std::vector<std::int64_t>{16 << 10, 512 << 10, 4 << 20, 32 << 20}));
  EXPECT_NE(s.tests[0].sizeFormulas[1].find("32 tokens x 8192 hidden"), std::string::npos);
  EXPECT_EQ(s.tests[1].sizes, (std::vector<std::int64_t>{8 << 10}));
  EXPECT_EQ(s.tests[2].sizes, (std::vector<std::int64_t>{320 << 20}));
  const auto m = scenario::expandMatrix(s);
  EXPECT_FALSE(m[0].sizeFormula.empty());
}

TEST(Scenario, DerivedSizeErrorsPointAtTheFile) {
  EXPECT_NE(
      errorOf("tests:\n  - kind: latency\n    sizes: {derive: tp-allreduce, decode_batch: [1]}\n").find("need a model"),
      std::string::npos);
  EXPECT_NE(errorOf("model: llama9-1t\ntests:\n  - kind: latency\n    sizes: [8]\n").find("t.yaml:1:"),
            std::string::npos);
  EXPECT_NE(
      errorOf("model: llama3-8b\ntests:\n  - kind: latency\n    sizes: {derive: kv-block}\n").find("block_tokens"),
      std::string::npos);
}

TEST(Scenario, RolesAndConditions) {
  const auto s = load(R"(
tests:
  - kind: latency
    sizes: [8]
    conditions: [quiet, incast]
    roles: {canaries: "50%", placement: packed}
    load_bytes: 1MiB
)");
  EXPECT_DOUBLE_EQ(s.tests[0].canaryFraction, 0.5);
  EXPECT_EQ(s.tests[0].placement, "packed");
  EXPECT_EQ(s.tests[0].loadBytes, 1 << 20);
  EXPECT_EQ(scenario::expandMatrix(s).size(), 2u);
  EXPECT_NE(errorOf("tests:\n  - kind: latency\n    sizes: [8]\n    roles: {canaries: 0}\n").find("t.yaml:4:"),
            std::string::npos);
}

TEST(Scenario, MemoryLimitIsCheckedBeforeRunning) {
  const char* const big = "tests:\n  - {kind: latency, sizes: [8], iterations: 100000000}\n";
  EXPECT_NE(errorOf(big).find("more than max_memory_per_rank"), std::string::npos);
  EXPECT_EQ(errorOf(big, {"max_memory_per_rank=128GiB"}), "no error");
  EXPECT_NE(errorOf(big, {"max_memory_per_rank=lots"}).find("--set max_memory_per_rank=lots"), std::string::npos);
}

TEST(Scenario, TransportSettingsLowerTheVerbsReadsInFlight) {
  const auto s = load("transports:\n  verbs: {max_rd_atomic: 4}\ntests:\n  - {kind: latency, sizes: [8]}\n");
  EXPECT_EQ(settingOf(s, "verbs", "max_rd_atomic").value, "4");
  EXPECT_EQ(settingOf(s, "verbs", "max_rd_atomic").from, "t.yaml:2:26");
  EXPECT_EQ(settingOf(load("tests:\n  - {kind: latency, sizes: [8]}\n"), "verbs", "max_rd_atomic").value, "0");
  const std::string tail = "tests:\n  - {kind: latency, sizes: [8]}\n";
  EXPECT_NE(errorOf("transports:\n  verbs: {max_rd_atomic: 0}\n" + tail)
                .find("t.yaml:2:26: 'max_rd_atomic' is 0; expected 1..255"),
            std::string::npos);
  EXPECT_NE(errorOf("transports:\n  verbs: {depth: 2}\n" + tail).find("t.yaml:2:11: unknown key 'depth'"),
            std::string::npos);
  EXPECT_NE(errorOf("transports:\n  ucx: {max_rd_atomic: 2}\n" + tail).find("t.yaml:2:3: unknown transport 'ucx'"),
            std::string::npos);
  EXPECT_NE(errorOf("transports:\n  mpi: {max_rd_atomic: 2}\n" + tail)
                .find("t.yaml:2:9: unknown key 'max_rd_atomic' under 'transports.mpi'; expected: wait"),
            std::string::npos);
  EXPECT_NE(errorOf("transports: 4\n" + tail).find("t.yaml:1:13: 'transports' must be a mapping"), std::string::npos);
}

TEST(Scenario, MpiWaitsArePolledUnlessTheScenarioAsksForBlocking) {
  const std::string tail = "tests:\n  - {kind: latency, sizes: [8]}\n";
  EXPECT_EQ(settingOf(load(tail), "mpi", "wait").value, "polled");
  EXPECT_EQ(settingOf(load("transports:\n  mpi: {wait: polled}\n" + tail), "mpi", "wait").value, "polled");
  const auto s = load("transports:\n  mpi: {wait: blocking}\n  verbs: {max_rd_atomic: 2}\n" + tail);
  EXPECT_EQ(settingOf(s, "mpi", "wait").value, "blocking");
  EXPECT_EQ(settingOf(s, "mpi", "wait").from, "t.yaml:2:15");
  EXPECT_EQ(settingOf(s, "verbs", "max_rd_atomic").value, "2");
  EXPECT_NE(errorOf("transports:\n  mpi: {wait: sleepy}\n" + tail)
                .find("t.yaml:2:15: 'wait' is 'sleepy'; expected polled or blocking"),
            std::string::npos);
  EXPECT_NE(
      errorOf("transports:\n  mpi: {wait: [blocking]}\n" + tail).find("t.yaml:2:15: 'wait' is 'a list or mapping'"),
      std::string::npos);
  EXPECT_NE(errorOf("transports:\n  mpi: blocking\n" + tail)
                .find("t.yaml:2:8: 'transports.mpi' must be a mapping such as {wait: blocking}"),
            std::string::npos);
}

TEST(Scenario, MoeDispatchSizesComeFromTheModel) {
  const auto s = load(
      "model: deepseek-v3\ntests:\n  - kind: latency\n    sizes: {derive: moe-dispatch-token, tokens: [1, 128]}\n");
  // DeepEP low-latency dispatch, fp8: 7408 B per token copy.
  EXPECT_EQ(s.tests[0].sizes, (std::vector<std::int64_t>{7408, 128 * 7408}));
  EXPECT_NE(s.tests[0].sizeFormulas[1].find("128 tokens"), std::string::npos);
}

TEST(Scenario, GpuMemoryNeedsATransportThatCanAddressIt) {
  const std::string overMpi = R"(
tests:
  - kind: latency
    sizes: [8]
    memory: cuda
)";
  const auto e = errorOf(overMpi);
  EXPECT_NE(e.find("t.yaml:5:13:"), std::string::npos) << e;
#if FABSCOPE_HAVE_NCCL
  EXPECT_NE(e.find("use transport: nccl"), std::string::npos) << e;
  const std::string ncclHost = R"(
tests:
  - kind: incast
    sizes: [8]
    transport: nccl
    memory: host
)";
  const auto h = errorOf(ncclHost);
  EXPECT_NE(h.find("t.yaml:6:13:"), std::string::npos) << h;
  EXPECT_NE(h.find("moves GPU-addressable memory only"), std::string::npos) << h;
  for (const char* kind : {"latency", "bandwidth", "bibw", "incast"}) {
    const auto ok =
        std::string("tests:\n  - kind: ") + kind + "\n    sizes: [1MiB]\n    transport: nccl\n    memory: cuda\n";
    EXPECT_EQ(errorOf(ok), "no error") << kind;
  }
#endif
}

TEST(Scenario, ControlPlaneDeadlinesAreReadAndChecked) {
  const auto defaults = load("tests:\n  - {kind: latency, sizes: [8]}\n");
  EXPECT_DOUBLE_EQ(defaults.controlGraceSeconds, 30);
  EXPECT_DOUBLE_EQ(defaults.controlTimeoutSeconds, 0);  // the built-in 120 s / 60 s
  const auto s = load("control_timeout: 5s\ncontrol_grace: 1500ms\ntests:\n  - {kind: latency, sizes: [8]}\n");
  EXPECT_DOUBLE_EQ(s.controlTimeoutSeconds, 5);
  EXPECT_DOUBLE_EQ(s.controlGraceSeconds, 1.5);
  EXPECT_NE(errorOf("control_grace: soon\ntests:\n  - {kind: latency, sizes: [8]}\n").find("t.yaml:1:16:"),
            std::string::npos);
  EXPECT_NE(errorOf("control_timeout: 0s\ntests:\n  - {kind: latency, sizes: [8]}\n")
                .find("t.yaml:1:18: duration '0s' must be greater than 0"),
            std::string::npos);
  EXPECT_NE(errorOf("control_grace: [1]\ntests:\n  - {kind: latency, sizes: [8]}\n").find("must be a duration"),
            std::string::npos);
}
