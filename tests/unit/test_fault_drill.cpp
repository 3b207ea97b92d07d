// Fault drill: the scenario keys (through the real loader and planner) and
// the recovery computation.
#include <gtest/gtest.h>

#include "driver/Runner.hpp"
#include "fabscope/BuildConfig.hpp"
#include "kinds/Registry.hpp"
#include "kinds/fault/FaultCommand.hpp"
#include "kinds/fault/FaultDrillConfig.hpp"
#include "scenario/Matrix.hpp"

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
  EXPECT_NE(e.find("for fault: link-down, loss and flap"), std::string::npos) << e;
  e = planError("    transport: ucx\n    fault: kill\n    loss_percent: 5\n");
  EXPECT_NE(e.find("loss_percent is for fault: loss"), std::string::npos) << e;
  // The commands' deadlines count against the test's timeout.
  e = planError("    transport: ucx\n    fault: loss\n    fault_command: x\n    command_timeout: 30s\n");
  EXPECT_NE(e.find("timeout must be at least"), std::string::npos) << e;
}

std::string flap(const std::string& downFor = "1s", const std::string& requests = "8000") {
  return "    transport: ucx\n    fault: flap\n    fault_command: cut {victim_host}\n"
         "    restore_command: plug {victim_host}\n    down_for: " +
         downFor + "\n    requests: " + requests + "\n    rate: 1000\n";
}
const std::string flapKeys = flap();

scenario::ScenarioRules commandRules() {
  auto rules = registry().scenarioRules(4);
  rules.allowCommands = true;
  return rules;
}

TEST(FaultDrillFlap, ReadsTheKeys) {
  if (!FABSCOPE_HAVE_UCX) GTEST_SKIP() << "built without UCX";
  const auto s = scenario::loadScenarioText(
      text(flapKeys + "    repeat: 3\n    every: 2s\n    recover_within: 1500ms\n    baseline_throughput: 0.8\n"
                      "    baseline_p99: 3\n    baseline_window: 200ms\n"),
      "t.yaml", {}, commandRules());
  const auto& c = scenario::configOf<suite::FaultDrillConfig>(s.tests.at(0));
  EXPECT_EQ(c.fault, "flap");
  EXPECT_DOUBLE_EQ(c.downForSeconds, 1.0);
  EXPECT_EQ(c.faultCount(), 3);
  EXPECT_DOUBLE_EQ(c.faultStartSeconds(2), 5.0);  // at 1 s + 2 x every 2 s
  EXPECT_DOUBLE_EQ(c.recoverWithinSeconds, 1.5);
  EXPECT_DOUBLE_EQ(c.baselineThroughput, 0.8);
  EXPECT_DOUBLE_EQ(c.baselineP99, 3.0);
  EXPECT_DOUBLE_EQ(c.baselineWindowSeconds, 0.2);
  EXPECT_TRUE(c.usesCommand() && c.restoresInLoop() && c.victimReturns() && c.detectionRequired());
  EXPECT_EQ(planError(flapKeys), "");
  // Defaults: one cut, 5 s to come back, 90 % of the throughput, p99 within 2x.
  const auto d = scenario::loadScenarioText(text(flapKeys), "t.yaml", {}, commandRules());
  const auto& e = scenario::configOf<suite::FaultDrillConfig>(d.tests.at(0));
  EXPECT_EQ(e.faultCount(), 1);
  EXPECT_DOUBLE_EQ(e.recoverWithinSeconds, 5);
  EXPECT_DOUBLE_EQ(e.baselineThroughput, 0.9);
  EXPECT_DOUBLE_EQ(e.baselineP99, 2);
}

TEST(FaultDrillFlap, BadInputNamesTheFilePosition) {
  if (!FABSCOPE_HAVE_UCX) GTEST_SKIP() << "built without UCX";
  // A flap without a restore command: at the fault key (line 8 of the text, column 12).
  auto e = planError("    transport: ucx\n    fault: flap\n    fault_command: cut\n    down_for: 1s\n");
  EXPECT_NE(e.find("t.yaml:9:12: "), std::string::npos) << e;
  EXPECT_NE(e.find("fault: flap needs restore_command"), std::string::npos) << e;
  // down_for longer than the test's timeout (60 s here).
  e = planError(flap("90s"));
  EXPECT_NE(e.find("down_for (90.000000 s) is not shorter than the test's timeout"), std::string::npos) << e;
  EXPECT_NE(e.find("t.yaml:"), std::string::npos) << e;
  e = planError("    transport: ucx\n    fault: flap\n    fault_command: cut\n    restore_command: plug\n");
  EXPECT_NE(e.find("needs down_for"), std::string::npos) << e;
  e = planError(flapKeys + "    repeat: 2\n");
  EXPECT_NE(e.find("needs every"), std::string::npos) << e;
  e = planError(flapKeys + "    repeat: 2\n    every: 1s\n");
  EXPECT_NE(e.find("every (1.000000 s) must be longer than down_for"), std::string::npos) << e;
  e = planError("    transport: ucx\n    fault: kill\n    down_for: 1s\n");
  EXPECT_NE(e.find("down_for is for fault: flap"), std::string::npos) << e;
  e = planError("    transport: ucx\n    fault: hang\n    recover_within: 1s\n");
  EXPECT_NE(e.find("recover_within is for a fault that ends"), std::string::npos) << e;
  // The stream must outlast the last cut + recover_within: 3 cuts 2 s apart end at 6 s.
  e = planError(flap("1s", "7000") + "    repeat: 3\n    every: 2s\n");
  EXPECT_NE(e.find("ends before the last fault's end"), std::string::npos) << e;
  e = planError(flap("200ms"));
  EXPECT_NE(e.find("down_for must be longer than heartbeat_deadline"), std::string::npos) << e;
}

TEST(FaultDrillFlap, EndingHangsAndLossesAndKill) {
  if (!FABSCOPE_HAVE_UCX) GTEST_SKIP() << "built without UCX";
  const auto s = scenario::loadScenarioText(text("    transport: ucx\n    fault: hang\n    hang_for: 1s\n"
                                                 "    requests: 8000\n"),
                                            "t.yaml", {}, registry().scenarioRules(4));
  const auto& c = scenario::configOf<suite::FaultDrillConfig>(s.tests.at(0));
  EXPECT_TRUE(c.faultEnds() && c.victimReturns() && !c.usesCommand());
  EXPECT_DOUBLE_EQ(c.faultLastsSeconds(), 1.0);
  auto e =
      planError("    transport: ucx\n    fault: loss\n    fault_command: x\n    loss_for: 1s\n    requests: 8000\n");
  EXPECT_NE(e.find("loss_for needs restore_command"), std::string::npos) << e;
  EXPECT_EQ(planError("    transport: ucx\n    fault: loss\n    fault_command: x\n    restore_command: y\n"
                      "    loss_for: 1s\n    requests: 8000\n"),
            "");
  // kill: the spare takes the victim's place; its return to baseline is measured.
  const auto k = scenario::loadScenarioText(text("    transport: ucx\n    requests: 8000\n"), "t.yaml", {},
                                            registry().scenarioRules(4));
  const auto& kc = scenario::configOf<suite::FaultDrillConfig>(k.tests.at(0));
  EXPECT_TRUE(kc.faultEnds() && !kc.victimReturns());
}

// The carrier's completions: (posted, done) in ms.
std::vector<suite::CarrierCompletion> carrier(const std::vector<std::pair<int, int>>& postedDone) {
  std::vector<suite::CarrierCompletion> out;
  for (auto [p, d] : postedDone) out.push_back({p * 1000000LL, d * 1000000LL});
  return out;
}

TEST(FaultDrillBaseline, BackWhenThroughputAndP99AreBack) {
  // 1 request per ms, 1 ms latency, from 2000 ms (the victim rejoined), restore at 1800 ms.
  std::vector<std::pair<int, int>> pd;
  for (int t = 2000; t < 4000; ++t) pd.push_back({t, t + 1});
  const auto r =
      suite::findBaseline(carrier(pd), 1800 * 1000000LL, 9000 * 1000000LL, 100 * 1000000LL, 1000, 1e6, 0.9, 2.0);
  ASSERT_TRUE(r.at);
  // The first 100 ms window with >= 90 completions ends near 2091 ms.
  EXPECT_GE(*r.at, 2089 * 1000000LL);
  EXPECT_LE(*r.at, 2092 * 1000000LL);
  EXPECT_LE(r.p99Ns, 1e6);
}

TEST(FaultDrillBaseline, ASlowTailOrHalfTheRateIsNotBack) {
  // Full rate but every 20th request takes 5 ms: p99 5 ms > 2 x 1 ms.
  std::vector<std::pair<int, int>> slow, half;
  for (int t = 2000; t < 4000; ++t) slow.push_back({t, t + (t % 20 == 0 ? 5 : 1)});
  for (int t = 2000; t < 4000; t += 2) half.push_back({t, t + 1});
  const auto a =
      suite::findBaseline(carrier(slow), 1800 * 1000000LL, 9000 * 1000000LL, 100 * 1000000LL, 1000, 1e6, 0.9, 2.0);
  EXPECT_FALSE(a.at);
  EXPECT_GE(a.p99Ns, 5e6);
  EXPECT_TRUE(
      suite::findBaseline(carrier(slow), 1800 * 1000000LL, 9000 * 1000000LL, 100 * 1000000LL, 1000, 1e6, 0.9, 6.0).at);
  const auto b =
      suite::findBaseline(carrier(half), 1800 * 1000000LL, 9000 * 1000000LL, 100 * 1000000LL, 1000, 1e6, 0.9, 2.0);
  EXPECT_FALSE(b.at);
  EXPECT_NEAR(b.throughputPerSecond, 500, 20);
  // Requests posted before the restore do not count, nor windows past `until`.
  EXPECT_FALSE(
      suite::findBaseline(carrier(slow), 5000 * 1000000LL, 9000 * 1000000LL, 100 * 1000000LL, 1000, 1e6, 0.9, 6.0).at);
  EXPECT_FALSE(suite::findBaseline({}, 0, 1, 1, 1, 1, 0.9, 2).at);
}

// A link fault's victim must be alone on its host: refused at load with the
// victim key's position when the hosts say otherwise; a kill acts on the
// process only and may share.
TEST(FaultDrillConfig, LinkFaultVictimMustBeAloneOnItsHost) {
  if (!FABSCOPE_HAVE_UCX) GTEST_SKIP() << "built without UCX";
  auto rules = registry().scenarioRules(4);
  rules.allowCommands = true;
  const auto& kind = registry().kind("fault");
  const auto link = scenario::loadScenarioText(text("    transport: ucx\n    fault: flap\n    fault_command: cut\n"
                                                    "    victim: 1\n    restore_command: plug\n    down_for: 1s\n"
                                                    "    requests: 8000\n"),
                                               "t.yaml", {}, rules);
  const auto planned = driver::planMatrix(link, registry(), 4);
  EXPECT_NO_THROW(kind.checkPlacement(planned.at(0).instance, {"a", "b", "c", "d"}));
  try {
    kind.checkPlacement(planned.at(0).instance, {"h", "h", "h", "h"});
    FAIL() << "a victim sharing its host was accepted";
  } catch (const scenario::ScenarioError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("t.yaml:11:", 0), 0u) << what;
    EXPECT_NE(what.find("alone on its host"), std::string::npos) << what;
  }
  const auto kill = scenario::loadScenarioText(text("    transport: ucx\n"), "t.yaml", {}, rules);
  EXPECT_NO_THROW(kind.checkPlacement(driver::planMatrix(kill, registry(), 4).at(0).instance, {"h", "h", "h", "h"}));
}

TEST(FaultCommandText, Placeholders) {
  const std::map<std::string, std::string> v{{"victim_host", "n7"}, {"victim_rank", "3"}, {"percent", "20"}};
  EXPECT_EQ(suite::expandFaultCommand("loss {victim_host} {percent} # {victim_rank}", v), "loss 'n7' '20' # '3'");
  EXPECT_THROW(suite::expandFaultCommand("x {victim_host", v), std::invalid_argument);
}

TEST(FaultCommandText, HostileValuesStayOneWord) {
  // A value is substituted as one single-quoted shell word: no ;, $(), backquote,
  // newline or quote in a host name can add a command.
  const std::map<std::string, std::string> v{
      {"victim_host", "n1; rm -rf / #"}, {"victim_rank", "$(reboot)"}, {"percent", "a'b\nc`id`"}};
  EXPECT_EQ(suite::expandFaultCommand("cut {victim_host} {victim_rank} {percent}", v),
            "cut 'n1; rm -rf / #' '$(reboot)' 'a'\\''b\nc`id`'");
  // and the shell agrees: echo prints the three values back unchanged, runs nothing
  const auto r =
      suite::runFaultCommand(suite::expandFaultCommand("printf '%s|' {victim_host} {victim_rank} {percent}", v), 5);
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
  EXPECT_EQ(
      planError("    transport: ucx\n    fault: link-down\n", 4, false, {"drill.fault_command=cut {victim_host}"}), "");
  // --set of another key of the test does not make the file's own command the admin's.
  e = planError(drill, 4, false, {"drill.iterations=3"});
  EXPECT_NE(e.find("would run the command fault_command: 'cut {victim_host}'"), std::string::npos) << e;
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

TEST(FaultDrillJudgement, DetectionBeforeTheFaultIsAFalseLoss) {
  const std::int64_t fault = 10'000'000'000;
  // Rank 3 declared the victim lost 400 ms before the fault: not a detection.
  // Rank 0's 5 ms "early" transport detection is within the clocks' tolerance.
  std::vector<suite::SurvivorDetection> s{{0, fault - 5'000'000, "transport error callback: UCX ..."},
                                          {3, fault - 400'000'000, "heartbeat: none for 500 ms"}};
  const auto j = suite::judgeDetections(s, fault, 2000, true);
  EXPECT_EQ(j.detected, 1);
  EXPECT_EQ(j.perSurvivor,
            "rank 0: -5.0 ms via transport error callback; "
            "rank 3: declared it lost 400.0 ms before the fault (a false loss) via heartbeat");
  EXPECT_EQ(j.late, "");  // judged as a false loss instead

  const int victim = 1;
  std::vector<suite::DeclaredLoss> losses{
      {3, 0, fault - 1'001'200'000, "heartbeat: none for 500 ms (deadline 500 ms)"},  // the client, alive
      {0, victim, fault + 410'000'000, "heartbeat: none for 500 ms"},                 // the real detection
      {2, victim, fault - 5'000'000, "transport: endpoint error"},                    // within the tolerance
  };
  auto f = suite::judgeFalseLosses(losses, victim, fault);
  EXPECT_EQ(f.count, 1);
  EXPECT_EQ(f.detail,
            "rank 3 declared rank 0 lost 1001.2 ms before the fault (heartbeat: none for 500 ms "
            "(deadline 500 ms))");
  // The victim before the fault, and a worker after it, are false too.
  losses.push_back({3, victim, fault - 300'000'000, "heartbeat: none for 500 ms"});
  losses.push_back({0, 2, fault + 2'000'000'000, "request: no reply for 1000 ms"});
  f = suite::judgeFalseLosses(losses, victim, fault);
  EXPECT_EQ(f.count, 3);
  EXPECT_NE(f.detail.find("rank 3 declared rank 1 (the victim) lost 300.0 ms before the fault"), std::string::npos);
  EXPECT_NE(f.detail.find("rank 0 declared rank 2 lost 2000.0 ms after the fault (request: no reply"),
            std::string::npos);
  // Only the first four are named.
  for (int i = 0; i < 4; ++i) losses.push_back({2, 3, fault + i, "heartbeat"});
  f = suite::judgeFalseLosses(losses, victim, fault);
  EXPECT_EQ(f.count, 7);
  EXPECT_NE(f.detail.find(", and 3 more"), std::string::npos);
  // A clean drill: none.
  EXPECT_EQ(suite::judgeFalseLosses({{0, victim, fault + 1, "x"}}, victim, fault).count, 0);
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
