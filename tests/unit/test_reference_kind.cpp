// kind: reference: its scenario keys, the ucx_perftest
// command lines it builds, program lookup and the bounded child process.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "driver/Runner.hpp"
#include "kinds/Registry.hpp"
#include "kinds/reference/ReferenceConfig.hpp"
#include "kinds/reference/ReferenceTool.hpp"
#include "runtime/ChildProcess.hpp"
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
  EXPECT_NE(errorOf(head + "    tool: osu_bibw\n").find("t.yaml:6:11"), std::string::npos);
  EXPECT_NE(errorOf(head + "    tool: osu_bibw\n").find("osu_latency, osu_bw, ib_write_bw"), std::string::npos)
      << errorOf(head + "    tool: osu_bibw\n");
  // A key of another tool is refused, not ignored.
  EXPECT_NE(errorOf(head + "    tool: osu_latency\n    tls: tcp\n")
                .find("t.yaml:7:10: 'tls' in test 'ref' applies to ucx_perftest (UCX_TLS), not to osu_latency"),
            std::string::npos)
      << errorOf(head + "    tool: osu_latency\n    tls: tcp\n");
  EXPECT_NE(errorOf(head + "    tool: osu_bw\n    test: tag_bw\n").find("'test' in test 'ref' applies to ucx_perftest"),
            std::string::npos);
  // (`launcher` is a command key: given with --set here)
  EXPECT_NE(errorOf(head + "    tool: ib_write_bw\n", {"ref.launcher=mpirun"}).find("applies to the MPI tools"),
            std::string::npos)
      << errorOf(head + "    tool: ib_write_bw\n", {"ref.launcher=mpirun"});
  EXPECT_NE(errorOf(head + "    device: mlx5_0\n").find("applies to perftest's ib_* tools (-d), not to ucx_perftest"),
            std::string::npos);
  EXPECT_NE(errorOf(head + "    tool: all_reduce_perf\n    port: 4000\n").find("applies to the client-server tools"),
            std::string::npos);
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
  runtime::ChildProcess child;
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
  runtime::ChildProcess quick;
  quick.start({"/bin/sh", "-c", "exit 3"}, {});
  EXPECT_TRUE(quick.wait(runtime::Deadline::afterSeconds(10)));
  EXPECT_EQ(quick.exitStatus(), 3);
  EXPECT_EQ(runtime::runToEnd({"/bin/echo", "hi"}, 5), "hi\n");
  EXPECT_EQ(runtime::runToEnd({"/nonexistent/x"}, 5), "");
  // perftest's --version exits 1: its output still counts when asked.
  EXPECT_EQ(runtime::runToEnd({"/bin/sh", "-c", "echo Version: 6.29; exit 1"}, 5), "");
  EXPECT_EQ(runtime::runToEnd({"/bin/sh", "-c", "echo Version: 6.29; exit 1"}, 5, true), "Version: 6.29\n");
  // `unset`: the launcher's variables a nested mpirun must not see.
  ::setenv("FABSCOPE_TEST_LAUNCHER_VAR", "1", 1);
  runtime::ChildProcess env;
  env.start({"/bin/sh", "-c", "echo ${FABSCOPE_TEST_LAUNCHER_VAR:-unset} $KEEP"}, {"KEEP=kept"},
            {"FABSCOPE_TEST_LAUNCHER_VAR"});
  ASSERT_TRUE(env.wait(runtime::Deadline::afterSeconds(10)));
  EXPECT_EQ(env.output(), "unset kept\n");
  ::unsetenv("FABSCOPE_TEST_LAUNCHER_VAR");
  // runBounded says how the run ended and never throws.
  const auto ran = runtime::runBounded({"/bin/sh", "-c", "echo $MARK; exit 1"}, 5, {"MARK=out"});
  EXPECT_EQ(ran.exitStatus, 1);
  EXPECT_EQ(ran.output, "out\n");
  EXPECT_FALSE(ran.timedOut);
  EXPECT_EQ(ran.error, "");
  const auto slow = runtime::runBounded({"/bin/sleep", "30"}, 0.2);
  EXPECT_TRUE(slow.timedOut);
  EXPECT_EQ(slow.exitStatus, 128 + 9);
  const auto missing = runtime::runBounded({"/nonexistent/x"}, 5);
  EXPECT_NE(missing.error, "");
  EXPECT_EQ(missing.exitStatus, -1);
}

TEST(ReferenceKind, OsuIsLaunchedByItsOwnMpirunOnThePair) {
  const std::string head =
      "name: t\ntests:\n  - name: ref\n    kind: reference\n    sizes: [1MiB]\n"
      "    iterations: 100\n    warmup: 10\n";
  const auto s = load(head + "    tool: osu_bw\n");
  const auto& c = configOf(s);
  EXPECT_EQ(c.launcher, "mpirun");
  EXPECT_FALSE(c.latency());
  EXPECT_EQ(c.test, "");
  const auto& tool = suite::reference::referenceTool("osu_bw");
  EXPECT_EQ(suite::reference::commandText(tool.programArgs(c, "/opt/omb/osu_bw", 1 << 20), ""),
            "/opt/omb/osu_bw -m 1048576:1048576 -i 100 -x 10");
  const suite::Registry registry;
  const auto plan = registry.kind("reference").plan(scenario::expandMatrix(s).at(0), 4);
  EXPECT_EQ(plan.pattern, "mpirun");
  EXPECT_NE(plan.description.find("mpirun -np 2 osu_bw (1048576 B, 100 iterations) on the hosts of group ranks 0..1"),
            std::string::npos)
      << plan.description;
  // `launcher` runs what it names: only with --allow-commands or --set, like `program`.
  EXPECT_NE(errorOf(head + "    tool: osu_bw\n    launcher: /opt/ompi/bin/mpirun\n"), "no error");
  EXPECT_EQ(configOf(load(head + "    tool: osu_bw\n", {"ref.launcher=/opt/ompi/bin/mpirun"})).launcher,
            "/opt/ompi/bin/mpirun");
  EXPECT_TRUE(configOf(load(head + "    tool: osu_latency\n")).latency());
}

TEST(ReferenceKind, PerftestSidesShareTheirParameters) {
  const auto s = load(
      "name: t\ntests:\n  - name: ref\n    kind: reference\n    tool: ib_write_bw\n"
      "    sizes: [64KiB]\n    iterations: 5000\n    device: mlx5_0\n    gid_index: 3\n");
  const auto& c = configOf(s);
  const auto& tool = suite::reference::referenceTool("ib_write_bw");
  EXPECT_FALSE(c.latency());
  EXPECT_EQ(suite::reference::commandText(tool.serverArgs(c, "/usr/bin/ib_write_bw", 18515, 65536), ""),
            "/usr/bin/ib_write_bw -p 18515 -s 65536 -n 5000 -F -d mlx5_0 -x 3");
  EXPECT_EQ(suite::reference::commandText(tool.clientArgs(c, "/usr/bin/ib_write_bw", "10.0.0.2", 18515, 65536), ""),
            "/usr/bin/ib_write_bw -p 18515 -s 65536 -n 5000 -F -d mlx5_0 -x 3 10.0.0.2");
  EXPECT_EQ(tool.versionArgs("/usr/bin/ib_write_bw"), (std::vector<std::string>{"/usr/bin/ib_write_bw", "--version"}));
  EXPECT_TRUE(configOf(load("name: t\ntests:\n  - name: ref\n    kind: reference\n    tool: ib_read_lat\n"
                            "    sizes: [8]\n"))
                  .latency());
  EXPECT_EQ(configOf(load("name: t\ntests:\n  - name: ref\n    kind: reference\n    tool: ib_send_lat\n"
                          "    sizes: [8]\n"))
                .gidIndex,
            -1);
}

TEST(ReferenceKind, NcclTestsRunOneSizeOnEveryRankOfTheGroup) {
  const auto s = load(
      "name: t\ntests:\n  - name: ref\n    kind: reference\n    tool: all_reduce_perf\n"
      "    sizes: [64MiB]\n    iterations: 20\n    warmup: 5\n");
  const auto& c = configOf(s);
  EXPECT_EQ(suite::reference::commandText(
                suite::reference::referenceTool("all_reduce_perf").programArgs(c, "all_reduce_perf", 64 << 20), ""),
            "all_reduce_perf -b 67108864 -e 67108864 -n 20 -w 5 -g 1");
  const suite::Registry registry;
  const auto plan = registry.kind("reference").plan(scenario::expandMatrix(s).at(0), 2);
  EXPECT_NE(plan.description.find("mpirun -np 2 all_reduce_perf"), std::string::npos) << plan.description;
}
