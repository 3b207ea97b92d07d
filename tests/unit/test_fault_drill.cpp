// Fault drill: the scenario keys (through the real loader and planner) and
// the recovery computation.
#include <gtest/gtest.h>

#include "driver/Runner.hpp"
#include "fabscope/BuildConfig.hpp"
#include "scenario/Matrix.hpp"
#include "kinds/fault/FaultCommand.hpp"
#include "kinds/fault/FaultDrillConfig.hpp"
#include "kinds/Registry.hpp"

namespace fabscope {
namespace {

const suite::Registry& registry() {
  static const suite::Registry r;
  return r;
}

std::string text(const std::string& keys) {
  return "name: t\nseed: 1\ntests:\n  - name: drill\n    kind: fault\n    sizes: [64]\n    timeout: 60s\n" + keys;
}

// The error of loading and planning on `ranks` ranks, "" if none (commands allowed
// unless said: most tests here are about the drill's own checks).
std::string planError(const std::string& keys, int ranks = 4, bool allowCommands = true,
                      const std::vector<std::string>& overrides = {}) {
  try {
    auto rules = registry().scenarioRules(ranks);
    rules.allowCommands = allowCommands;
    const auto s = scenario::loadScenarioText(text(keys), "t.yaml", overrides, rules);
    (void)driver::planMatrix(s, registry(), ranks);
  } catch (const scenario::ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(FaultDrillConfig, RefusesTheMpiDataPath) {
  const auto e = planError("    transport: mpi\n");
  EXPECT_NE(e.find("needs transport: ucx"), std::string::npos) << e;
  EXPECT_NE(e.find("cannot survive"), std::string::npos) << e;
}

TEST(FaultDrillConfig, VictimMustBeAWorker) {
  if (!FABSCOPE_HAVE_UCX) GTEST_SKIP() << "built without UCX";
  EXPECT_NE(planError("    transport: ucx\n    victim: 0\n").find("victim"), std::string::npos);
  // On 4 ranks index 3 is the spare.
  const auto e = planError("    transport: ucx\n    victim: 3\n", 4);
  EXPECT_NE(e.find("victim must be a worker, 1 .. 2"), std::string::npos) << e;
  EXPECT_EQ(planError("    transport: ucx\n    victim: 2\n", 4), "");
  EXPECT_NE(planError("    transport: ucx\n", 3).find("at least 4"), std::string::npos);
}

TEST(FaultDrillConfig, FaultMustComeWhileTrafficFlows) {
  if (!FABSCOPE_HAVE_UCX) GTEST_SKIP() << "built without UCX";
  const auto e = planError("    transport: ucx\n    requests: 100\n    rate: 100\n    at: 2s\n");
  EXPECT_NE(e.find("after the last request"), std::string::npos) << e;
  EXPECT_NE(planError("    transport: ucx\n    at: soon\n").find("expected a duration"), std::string::npos);
  EXPECT_NE(planError("    transport: ucx\n    requests: 100000\n    rate: 1000\n").find("timeout must be"),
            std::string::npos);
}

TEST(FaultDrillConfig, ReadsTheKeys) {
  if (!FABSCOPE_HAVE_UCX) GTEST_SKIP() << "built without UCX";
  const auto s = scenario::loadScenarioText(
      text("    transport: ucx\n    victim: 2\n    at: 500ms\n    detect_within: 1s\n    heartbeat: 50ms\n"
           "    requests: 2000\n    rate: 500\n"),
      "t.yaml", {}, registry().scenarioRules(5));
  const auto& c = scenario::configOf<suite::FaultDrillConfig>(s.tests.at(0));
  EXPECT_EQ(c.victim, 2);
  EXPECT_DOUBLE_EQ(c.atSeconds, 0.5);
  EXPECT_DOUBLE_EQ(c.detectWithinSeconds, 1.0);
  EXPECT_DOUBLE_EQ(c.heartbeatDeadlineSeconds, 0.15);  // 3 heartbeats unless given
  EXPECT_DOUBLE_EQ(c.requestTimeoutSeconds, 0.3);      // 2 heartbeat deadlines unless given
  EXPECT_EQ(c.requests, 2000);
  EXPECT_EQ(c.replyBytes, 64);
  const auto planned = driver::planMatrix(s, registry(), 5);
  EXPECT_TRUE(planned.at(0).plan.mayLoseRanks);
}

TEST(FaultDrillConfig, HangNeedsHeartbeatsFasterThanTheDetectionDeadline) {
  if (!FABSCOPE_HAVE_UCX) GTEST_SKIP() << "built without UCX";
  EXPECT_EQ(planError("    transport: ucx\n    fault: hang\n"), "");
  auto e = planError("    transport: ucx\n    fault: hang\n    detect_within: 500ms\n    heartbeat: 200ms\n");
  EXPECT_NE(e.find("must be shorter than detect_within"), std::string::npos) << e;
  e = planError("    transport: ucx\n    heartbeat: 100ms\n    heartbeat_deadline: 150ms\n");
  EXPECT_NE(e.find("at least 2 heartbeats"), std::string::npos) << e;
}

TEST(FaultDrillConfig, LinkFaultsNeedAnAdminCommand) {
  if (!FABSCOPE_HAVE_UCX) GTEST_SKIP() << "built without UCX";
  auto e = planError("    transport: ucx\n    fault: link-down\n");
  EXPECT_NE(e.find("needs fault_command"), std::string::npos) << e;
  EXPECT_NE(planError("    transport: ucx\n    fault: loss\n").find("needs fault_command"), std::string::npos);
  EXPECT_EQ(planError("    transport: ucx\n    fault: link-down\n    fault_command: ip link set {victim_host} down\n"
                      "    restore_command: echo up {victim_rank}\n"),
            "");
  e = planError("    transport: ucx\n    fault: link-down\n    fault_command: cut {victim}\n");
  EXPECT_NE(e.find("unknown placeholder {victim}"), std::string::npos) << e;
  e = planError("    transport: ucx\n    fault: kill\n    fault_command: true\n");
  EXPECT_NE(e.find("for fault: link-down and loss"), std::string::npos) << e;
  e = planError("    transport: ucx\n    fault: kill\n    loss_percent: 5\n");
  EXPECT_NE(e.find("loss_percent is for fault: loss"), std::string::npos) << e;
  // The commands' deadlines count against the test's timeout.
  e = planError("    transport: ucx\n    fault: loss\n    fault_command: x\n    command_timeout: 30s\n");
  EXPECT_NE(e.find("timeout must be at least"), std::string::npos) << e;
}

TEST(FaultCommandText, Placeholders) {
  const std::map<std::string, std::string> v{{"victim_host", "n7"}, {"victim_rank", "3"}, {"percent", "20"}};
  EXPECT_EQ(suite::expandFaultCommand("loss {victim_host} {percent} # {victim_rank}", v), "loss 'n7' '20' # '3'");
  EXPECT_THROW(suite::expandFaultCommand("x {victim_host", v), std::invalid_argument);
}

TEST(FaultCommandText, HostileValuesStayOneWord) {
  // A value is substituted as one single-quoted shell word: no ;, $(), backquote,
  // newline or quote in a host name can add a command (issue 27).
  const std::map<std::string, std::string> v{
      {"victim_host", "n1; rm -rf / #"}, {"victim_rank", "$(reboot)"}, {"percent", "a'b\nc`id`"}};
  EXPECT_EQ(suite::expandFaultCommand("cut {victim_host} {victim_rank} {percent}", v),
            "cut 'n1; rm -rf / #' '$(reboot)' 'a'\\''b\nc`id`'");
  // and the shell agrees: echo prints the three values back unchanged, runs nothing
  const auto r = suite::runFaultCommand(suite::expandFaultCommand("printf '%s|' {victim_host} {victim_rank} {percent}", v), 5);
  EXPECT_EQ(r.exitStatus, 0) << r.output;
  EXPECT_EQ(r.output, "n1; rm -rf / #|$(reboot)|a'b\nc`id`|");
}

TEST(FaultDrillConfig, CommandsInTheScenarioNeedAllowCommands) {
  if (!FABSCOPE_HAVE_UCX) GTEST_SKIP() << "built without UCX";
  const std::string drill = "    transport: ucx\n    fault: link-down\n    fault_command: cut {victim_host}\n";
  auto e = planError(drill, 4, false);
  EXPECT_NE(e.find("t.yaml:10:"), std::string::npos) << e;  // the command's own line
  EXPECT_NE(e.find("would run the command fault_command: 'cut {victim_host}'"), std::string::npos) << e;
  EXPECT_NE(e.find("--allow-commands"), std::string::npos) << e;
  EXPECT_EQ(planError(drill, 4, true), "");
  // The admin's own command line is trusted: a command given with --set runs.
  EXPECT_EQ(planError("    transport: ucx\n    fault: link-down\n", 4, false, {"drill.fault_command=cut {victim_host}"}),
            "");
}

TEST(FaultCommandRun, ExitStatusOutputAndDeadline) {
  auto r = suite::runFaultCommand("echo cut; echo oops >&2; exit 3", 5);
  EXPECT_EQ(r.exitStatus, 3);
  EXPECT_FALSE(r.timedOut);
  EXPECT_EQ(r.output, "cut\noops");
  EXPECT_FALSE(r.ok());
  r = suite::runFaultCommand("true", 5);
  EXPECT_TRUE(r.ok()) << r.describe();
  // A command past its deadline is killed with everything it started.
  const auto before = runtime::monotonicNow();
  r = suite::runFaultCommand("sleep 30 & sleep 30", 0.3);
  EXPECT_TRUE(r.timedOut);
  EXPECT_FALSE(r.ok());
  EXPECT_LT(runtime::monotonicNow() - before, 5'000'000'000);
}

TEST(FaultDrillJudgement, LateOrMissingDetectionFailsTheDrill) {
  const std::int64_t fault = 10'000'000'000;
  std::vector<suite::SurvivorDetection> s{{0, fault + 120'000'000, "heartbeat: none for 600 ms"},
                                          {2, fault + 2'500'000'000, "transport error callback: UCX ..."},
                                          {3, -1, ""}};
  auto j = suite::judgeDetections(s, fault, 2000, true);
  EXPECT_EQ(j.detected, 2);
  EXPECT_DOUBLE_EQ(j.slowestMs, 2500);
  EXPECT_EQ(j.perSurvivor,
            "rank 0: 120.0 ms via heartbeat; rank 2: 2500.0 ms via transport error callback; rank 3: not detected");
  EXPECT_EQ(j.late, "rank 2 after 2500.0 ms, rank 3 never detected it");
  // A lossy link need not be noticed at all: when and whether is only reported.
  EXPECT_EQ(suite::judgeDetections(s, fault, 2000, false).late, "");
  EXPECT_EQ(suite::judgeDetections(s, fault, 2000, false).detected, 2);
  // Everyone in time: nothing late.
  s[1].detectedNs = fault + 1'999'000'000;
  s[2].detectedNs = fault + 5'000'000;
  EXPECT_EQ(suite::judgeDetections(s, fault, 2000, true).late, "");
}

constexpr runtime::Nanoseconds ms = 1000000;

TEST(FaultDrillRecovery, BackAtNinetyPercentAfterAGap) {
  // 1 completion per ms for 1 s, nothing for 200 ms after the fault, then 1/ms again.
  std::vector<runtime::Nanoseconds> done;
  for (runtime::Nanoseconds t = 1; t < 1000; ++t) done.push_back(t * ms);
  for (runtime::Nanoseconds t = 1200; t < 2000; ++t) done.push_back(t * ms);
  const auto r = suite::findRecovery(done, 0, 1000 * ms, 1100 * ms, 20 * ms);
  ASSERT_TRUE(r.recoveredAt);
  EXPECT_NEAR(r.preFaultPerSecond, 999, 1);
  // The first 20 ms window after 1200 ms holding >= 18 completions ends near 1217 ms.
  EXPECT_GE(*r.recoveredAt, 1215 * ms);
  EXPECT_LE(*r.recoveredAt, 1220 * ms);
}

TEST(FaultDrillRecovery, HalfTheThroughputIsNotRecovered) {
  std::vector<runtime::Nanoseconds> done;
  for (runtime::Nanoseconds t = 1; t < 1000; ++t) done.push_back(t * ms);
  for (runtime::Nanoseconds t = 1000; t < 2000; t += 2) done.push_back(t * ms);
  EXPECT_FALSE(suite::findRecovery(done, 0, 1000 * ms, 1000 * ms, 20 * ms).recoveredAt);
  EXPECT_FALSE(suite::findRecovery({}, 0, 1000 * ms, 1000 * ms, 20 * ms).recoveredAt);
}

}  // namespace
}  // namespace fabscope
