// kind: reference (issue 21 item 5): its scenario keys, the ucx_perftest
// command lines it builds, program lookup and the bounded child process.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "driver/Runner.hpp"
#include "kinds/Registry.hpp"
#include "kinds/reference/ChildProcess.hpp"
#include "kinds/reference/ReferenceConfig.hpp"
#include "scenario/Matrix.hpp"
#include "scenario/Scenario.hpp"

using namespace fabscope;
using suite::reference::ReferenceConfig;

namespace {

scenario::Scenario load(const std::string& text, std::vector<std::string> overrides = {}) {
  static const suite::Registry registry;
  auto s = scenario::loadScenarioText(text, "t.yaml", overrides, registry.scenarioRules(2));
  driver::planMatrix(s, registry, 2);
  return s;
}

std::string errorOf(const std::string& text, std::vector<std::string> overrides = {}) {
  try {
    load(text, overrides);
  } catch (const scenario::ScenarioError& e) {
    return e.what();
  }
  return "no error";
}

const ReferenceConfig& configOf(const scenario::Scenario& s) {
  return scenario::configOf<ReferenceConfig>(s.tests.at(0));
}

const char* const tagBw = R"(
name: t
tests:
  - name: ref
    kind: reference
    test: tag_bw
    tls: shm,self
    sizes: [1MiB]
    iterations: 200
    warmup: 20
    timeout: 20s
)";

}  // namespace

TEST(ReferenceKind, ReadsItsKeysWithDefaults) {
  const auto s = load("name: t\ntests:\n  - name: ref\n    kind: reference\n    sizes: [8]\n    iterations: 1000\n");
  const auto& c = configOf(s);
  EXPECT_EQ(c.tool, "ucx_perftest");
  EXPECT_EQ(c.program, "ucx_perftest");
  EXPECT_EQ(c.test, "tag_lat");
  EXPECT_TRUE(c.latency());
  EXPECT_EQ(c.tls, "");
  EXPECT_EQ(c.port, 0);
  EXPECT_EQ(c.iterations, 1000);
  const auto b = load(tagBw);
  EXPECT_EQ(configOf(b).test, "tag_bw");
  EXPECT_FALSE(configOf(b).latency());
  EXPECT_EQ(configOf(b).tls, "shm,self");
  EXPECT_EQ(configOf(b).warmup, 20);
}

TEST(ReferenceKind, PlansLatencyOrBandwidthByTheToolsTest) {
  const suite::Registry registry;
  const auto lat = load("name: t\ntests:\n  - name: ref\n    kind: reference\n    sizes: [8]\n");
  const auto bw = load(tagBw);
  const auto& kind = registry.kind("reference");
  EXPECT_FALSE(kind.usesTransport());
  const auto latInstances = scenario::expandMatrix(lat);
  const auto bwInstances = scenario::expandMatrix(bw);
  EXPECT_EQ(kind.plan(latInstances.at(0), 2).metric, suite::Metric::latency);
  const auto plan = kind.plan(bwInstances.at(0), 2);
  EXPECT_EQ(plan.metric, suite::Metric::bandwidth);
  EXPECT_EQ(plan.maxSamplesPerRank, 0);
  EXPECT_NE(plan.description.find("ucx_perftest -t tag_bw -s 1048576 -n 200 over UCX_TLS=shm,self"), std::string::npos)
      << plan.description;
}

TEST(ReferenceKind, BadKeysNameTheirPlace) {
  const std::string head = "name: t\ntests:\n  - name: ref\n    kind: reference\n    sizes: [8]\n";
  EXPECT_NE(errorOf(head + "    tls: shm; rm -rf /\n").find("t.yaml:6:10: 'tls' in test 'ref' is 'shm; rm -rf /'"),
            std::string::npos)
      << errorOf(head + "    tls: shm; rm -rf /\n");
  EXPECT_NE(errorOf(head + "    test: tag_lot\n").find("t.yaml:6:11"), std::string::npos);
  EXPECT_NE(errorOf(head + "    test: tag_lot\n").find("expected one of: tag_lat, tag_bw"), std::string::npos);
  EXPECT_NE(errorOf(head + "    tool: osu_latency\n").find("t.yaml:6:11"), std::string::npos);
  EXPECT_NE(errorOf(head + "    port: 70000\n").find("t.yaml:6:11"), std::string::npos);
  EXPECT_NE(errorOf(head + "    transport: ucx\n").find("runs ucx_perftest over its own data path"), std::string::npos)
      << errorOf(head + "    transport: ucx\n");
  // `program` runs what it names: not from a scenario file without --allow-commands; --set may.
  EXPECT_NE(errorOf(head + "    program: /tmp/x\n"), "no error");
  EXPECT_EQ(configOf(load(head, {"ref.program=/opt/ucx/bin/ucx_perftest"})).program, "/opt/ucx/bin/ucx_perftest");
}

TEST(ReferenceKind, BuildsTheUcxPerftestCommandLines) {
  const auto s = load(tagBw);
  const auto& c = configOf(s);
  const auto server = suite::reference::ucxPerftestServerArgs(c, "/usr/bin/ucx_perftest", 40123);
  EXPECT_EQ(server, (std::vector<std::string>{"/usr/bin/ucx_perftest", "-p", "40123"}));
  const auto client = suite::reference::ucxPerftestClientArgs(c, "/usr/bin/ucx_perftest", "127.0.0.1", 40123, 1 << 20);
  EXPECT_EQ(suite::reference::commandText(client, c.tls),
            "UCX_TLS=shm,self /usr/bin/ucx_perftest 127.0.0.1 -p 40123 -t tag_bw -s 1048576 -n 200 -w 20");
  ReferenceConfig inherited = c;
  inherited.tls = "";
  inherited.warmup = 0;
  EXPECT_EQ(suite::reference::commandText(
                suite::reference::ucxPerftestClientArgs(inherited, "ucx_perftest", "10.0.0.2", 5, 8), inherited.tls),
            "ucx_perftest 10.0.0.2 -p 5 -t tag_bw -s 8 -n 200");
}

TEST(ReferenceKind, ResolvesProgramsOnPath) {
  EXPECT_EQ(suite::reference::resolveProgram("/bin/sh"), "/bin/sh");
  EXPECT_NE(suite::reference::resolveProgram("sh"), "");
  EXPECT_EQ(suite::reference::resolveProgram("fabscope-no-such-tool"), "");
  EXPECT_EQ(suite::reference::resolveProgram("/nonexistent/ucx_perftest"), "");
}

TEST(ReferenceKind, ChildIsKilledWithItsGroupAtTheDeadline) {
  using clock = std::chrono::steady_clock;
  suite::reference::ChildProcess child;
  child.start({"/bin/sh", "-c", "sleep 30 & echo $MARK $!; wait"}, {"MARK=yes"});
  const auto begun = clock::now();
  EXPECT_FALSE(child.wait(runtime::Deadline::afterSeconds(0.3)));
  const double took = std::chrono::duration<double>(clock::now() - begun).count();
  EXPECT_LT(took, 5.0);
  EXPECT_EQ(child.exitStatus(), 128 + 9);
  const std::string said = child.output();
  ASSERT_EQ(said.rfind("yes ", 0), 0u) << said;
  // The shell's own child (its process group) is killed too: gone or a zombie within 2 s.
  const std::string stat = "/proc/" + std::to_string(std::stoi(said.substr(4))) + "/stat";
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    std::ifstream in(stat);
    std::string pid, name, state;
    gone = !(in >> pid >> name >> state) || state == "Z";
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "the background sleep outlived the kill at the deadline";
  suite::reference::ChildProcess quick;
  quick.start({"/bin/sh", "-c", "exit 3"}, {});
  EXPECT_TRUE(quick.wait(runtime::Deadline::afterSeconds(10)));
  EXPECT_EQ(quick.exitStatus(), 3);
  EXPECT_EQ(suite::reference::runToEnd({"/bin/echo", "hi"}, 5), "hi\n");
  EXPECT_EQ(suite::reference::runToEnd({"/nonexistent/x"}, 5), "");
}
