// The fault drill over NCCL without a GPU: its loader checks (through the real
// loader and planner, with the nccl transport and cuda memory declared
// available so the checks run in every build), the survivor's state machine
// (poll -> detect -> abort -> report) and the judgement of the aborts.
#include <gtest/gtest.h>

#include <cmath>

#include "driver/Runner.hpp"
#include "fabscope/BuildConfig.hpp"
#include "kinds/Registry.hpp"
#include "kinds/fault/AbortDrillWatch.hpp"
#include "kinds/fault/ExpectedDetection.hpp"
#include "kinds/fault/FaultDrillConfig.hpp"
#include "scenario/Matrix.hpp"

namespace fabscope {
namespace {

using suite::fault_drill::AbortDrillAction;
using suite::fault_drill::AbortDrillPhase;
using suite::fault_drill::AbortDrillPoll;
using suite::fault_drill::AbortDrillWatch;

const suite::Registry& registry() {
  static const suite::Registry r;
  return r;
}

std::string text(const std::string& keys) {
  return "name: t\nseed: 1\ntests:\n  - name: drill\n    kind: fault\n    sizes: [64]\n    timeout: 60s\n" + keys;
}

// Rules as in a build with NCCL (or, with `ncclMissing`, as in one without).
scenario::ScenarioRules rulesFor(int ranks, const std::string& ncclMissing = "") {
  auto rules = registry().scenarioRules(ranks);
  rules.transports["nccl"] = ncclMissing;
  rules.memoryKinds["cuda"] = ncclMissing;
  rules.allowCommands = true;
  return rules;
}

// The error of loading and planning on `ranks` ranks, "" if none.
std::string planError(const std::string& keys, int ranks = 2, const std::string& ncclMissing = "",
                      const std::string& sizes = "[64]") {
  try {
    auto yaml = text(keys);
    yaml.replace(yaml.find("[64]"), 4, sizes);
    const auto s = scenario::loadScenarioText(yaml, "t.yaml", {}, rulesFor(ranks, ncclMissing));
    (void)driver::planMatrix(s, registry(), ranks);
  } catch (const scenario::ScenarioError& e) {
    return e.what();
  }
  return "";
}

constexpr const char* overNccl = "    transport: nccl\n    memory: cuda\n";

TEST(AbortDrillConfig, ReadsTheKeysAndPlansItsOwnDataPath) {
  const auto s = scenario::loadScenarioText(
      text(std::string(overNccl) + "    fault: hang\n    request_timeout: 200ms\n    abort_within: 3s\n"), "t.yaml", {},
      rulesFor(2));
  const auto& c = scenario::configOf<suite::FaultDrillConfig>(s.tests.at(0));
  EXPECT_TRUE(c.abortDrill);
  EXPECT_FALSE(c.faultEnds());  // nothing comes back over an aborted communicator
  EXPECT_DOUBLE_EQ(c.requestTimeoutSeconds, 0.2);
  EXPECT_DOUBLE_EQ(c.abortWithinSeconds, 3.0);
  EXPECT_DOUBLE_EQ(c.heartbeatSeconds, 0.0);
  const auto planned = driver::planMatrix(s, registry(), 2);
  EXPECT_TRUE(planned.at(0).plan.ownDataPath);
  EXPECT_TRUE(planned.at(0).plan.mayLoseRanks);
}

TEST(AbortDrillConfig, UcxDrillsStillNeedFourRanksAndOpenTheScenariosTransport) {
  if (!FABSCOPE_HAVE_UCX) GTEST_SKIP() << "built without UCX";
  EXPECT_NE(planError("    transport: ucx\n", 3).find("at least 4"), std::string::npos);
  const auto s = scenario::loadScenarioText(text("    transport: ucx\n"), "t.yaml", {}, rulesFor(4));
  EXPECT_FALSE(driver::planMatrix(s, registry(), 4).at(0).plan.ownDataPath);
  EXPECT_NE(planError("    transport: ucx\n    abort_within: 2s\n", 4).find("abort_within is for"), std::string::npos);
}

TEST(AbortDrillConfig, RefusesWhatNcclCannotDo) {
  struct Case {
    std::string keys, where, says;
  };
  // Line numbers: the test's keys start on line 8 of text().
  const std::vector<Case> cases = {
      {"    transport: nccl\n    memory: host\n", "t.yaml:9:13", "memory: cuda"},
      {std::string(overNccl) + "    fault: loss\n    fault_command: x\n", "t.yaml:10:12",
       "fault: loss over transport: nccl is not supported"},
      {std::string(overNccl) + "    fault: link-down\n    fault_command: x\n", "t.yaml:10:12",
       "cannot tell from a hung peer"},
      {std::string(overNccl) + "    fault: flap\n    down_for: 1s\n", "t.yaml:10:12", "use fault: kill or hang"},
      {std::string(overNccl) + "    heartbeat: 50ms\n", "t.yaml:10:16", "no heartbeats"},
      {std::string(overNccl) + "    fault: hang\n    hang_for: 1s\n", "t.yaml:11:15", "nothing is re-routed"},
      {std::string(overNccl) + "    recover_within: 1s\n", "t.yaml:10:21", "abort the communicator"},
      {std::string(overNccl) + "    request_timeout: 3s\n", "t.yaml:10:22", "shorter than detect_within"},
      {std::string(overNccl) + "    abort_within: 0s\n", "t.yaml:10:19", "expected a duration"},
      {std::string(overNccl) + "    abort_within: 11m\n", "t.yaml:10:19", "outside"},
  };
  for (const auto& k : cases) {
    const auto e = planError(k.keys);
    EXPECT_NE(e.find(k.where), std::string::npos) << k.keys << " -> " << e;
    EXPECT_NE(e.find(k.says), std::string::npos) << k.keys << " -> " << e;
  }
  const auto floats = planError(overNccl, 2, "", "[66]");
  EXPECT_NE(floats.find("t.yaml:6:12: test 'drill': over nccl the size is that of an all-reduce of floats"),
            std::string::npos)
      << floats;
}

TEST(AbortDrillConfig, RanksAndVictim) {
  EXPECT_NE(planError(overNccl, 1).find("needs at least 2 ranks"), std::string::npos) << planError(overNccl, 1);
  EXPECT_EQ(planError(overNccl, 2), "");
  EXPECT_NE(planError(std::string(overNccl) + "    victim: 2\n", 2).find("victim must be 1 .. 1"), std::string::npos);
  EXPECT_EQ(planError(std::string(overNccl) + "    victim: 2\n", 3), "");
}

TEST(AbortDrillConfig, ABuildWithoutNcclSaysSoAtTheTransportKey) {
  const auto e = planError(overNccl, 2, "built without CUDA/NCCL");
  EXPECT_NE(e.find("t.yaml:8:16"), std::string::npos) << e;
  EXPECT_NE(e.find("not available in this build: built without CUDA/NCCL"), std::string::npos) << e;
}

suite::AbortDrillTiming timing() {
  // Steps due every 10 ms from t = 1000 ms; a step unfinished for 50 ms is a loss; abort within 200 ms.
  return {1'000'000'000, 10'000'000, 50'000'000, 200'000'000, 3};
}

constexpr runtime::Nanoseconds ms = 1'000'000;

TEST(AbortDrillWatch, LaunchesStepsWhenDueOneInFlight) {
  AbortDrillWatch w(timing());
  EXPECT_EQ(w.poll(999 * ms, {}), AbortDrillAction::wait);
  ASSERT_EQ(w.poll(1000 * ms, {}), AbortDrillAction::launch);
  w.launched(1000 * ms);
  // The next step is due at 1010 ms but the first has not finished: wait for it.
  EXPECT_EQ(w.poll(1012 * ms, {}), AbortDrillAction::wait);
  ASSERT_EQ(w.poll(1013 * ms, {.stepDone = true}), AbortDrillAction::stepCompleted);
  EXPECT_EQ(w.lastStep().index, 0);
  EXPECT_EQ(w.lastStep().launchedAt, 1000 * ms);
  EXPECT_EQ(w.lastStep().doneAt, 1013 * ms);
  EXPECT_EQ(w.poll(1013 * ms, {}), AbortDrillAction::launch);  // late: at once
  w.launched(1013 * ms);
  EXPECT_THROW(w.launched(1014 * ms), std::logic_error);  // never two in flight
  ASSERT_EQ(w.poll(1014 * ms, {.stepDone = true}), AbortDrillAction::stepCompleted);
  EXPECT_EQ(w.poll(1015 * ms, {}), AbortDrillAction::wait);  // step 2 is due at 1020 ms
  ASSERT_EQ(w.poll(1020 * ms, {}), AbortDrillAction::launch);
  w.launched(1020 * ms);
  ASSERT_EQ(w.poll(1021 * ms, {.stepDone = true}), AbortDrillAction::stepCompleted);
  EXPECT_EQ(w.poll(1022 * ms, {}), AbortDrillAction::finished);
  EXPECT_EQ(w.completedSteps(), 3);
  EXPECT_FALSE(w.detectedAt());
  EXPECT_EQ(w.phase(), AbortDrillPhase::finished);
}

TEST(AbortDrillWatch, TheStepDeadlineDeclaresTheLossThenTheAbortIsTimed) {
  AbortDrillWatch w(timing());
  ASSERT_EQ(w.poll(1000 * ms, {}), AbortDrillAction::launch);
  w.launched(1000 * ms);
  EXPECT_EQ(w.poll(1050 * ms, {}), AbortDrillAction::wait);  // exactly request_timeout: not yet
  ASSERT_EQ(w.poll(1051 * ms, {}), AbortDrillAction::abort);
  EXPECT_EQ(*w.detectedAt(), 1051 * ms);
  EXPECT_EQ(w.detectionPath(), "step deadline: all-reduce step 0 unfinished for 51.0 ms (request_timeout 50.0 ms)");
  EXPECT_EQ(w.abortDeadline(), 1251 * ms);
  // While aborting, polls change nothing (a late completion included).
  EXPECT_EQ(w.poll(1052 * ms, {.stepDone = true}), AbortDrillAction::wait);
  EXPECT_EQ(w.abortTook(), -1);
  w.abortReturned(1081 * ms);
  EXPECT_EQ(w.phase(), AbortDrillPhase::aborted);
  EXPECT_EQ(w.abortTook(), 30 * ms);
  EXPECT_TRUE(w.abortedInTime());
  EXPECT_EQ(w.completedSteps(), 0);
}

TEST(AbortDrillWatch, AnAsynchronousErrorComesFirstAndAStuckAbortIsNotInTime) {
  AbortDrillWatch w(timing());
  ASSERT_EQ(w.poll(1000 * ms, {}), AbortDrillAction::launch);
  w.launched(1000 * ms);
  // Reported in the same poll as the step's end: the error wins.
  ASSERT_EQ(w.poll(1005 * ms, {.stepDone = true, .ncclError = "remote process exited or there was a network error"}),
            AbortDrillAction::abort);
  EXPECT_EQ(w.detectionPath(), "NCCL asynchronous error: remote process exited or there was a network error");
  EXPECT_THROW(w.launched(1006 * ms), std::logic_error);
  w.abortGivenUp(1205 * ms);
  EXPECT_EQ(w.phase(), AbortDrillPhase::abortStuck);
  EXPECT_FALSE(w.abortedInTime());
  EXPECT_EQ(w.abortTook(), -1);
  EXPECT_THROW(w.abortReturned(1300 * ms), std::logic_error);

  AbortDrillWatch cuda(timing());
  ASSERT_EQ(cuda.poll(1000 * ms, {.cudaError = "an illegal memory access was encountered"}), AbortDrillAction::abort);
  EXPECT_EQ(cuda.detectionPath(), "CUDA error: an illegal memory access was encountered");
  // An abort that returns, but after abort_within, is not in time either.
  cuda.abortReturned(1000 * ms + 201 * ms);
  EXPECT_FALSE(cuda.abortedInTime());
}

TEST(AbortDrillJudgement, AbortsAgainstAbortWithin) {
  const auto j =
      suite::judgeAborts({{0, true, 12'300'000}, {2, true, -1}, {3, false, -1}, {4, true, 250'000'000}}, 200);
  EXPECT_EQ(j.stuck, 1);
  EXPECT_DOUBLE_EQ(j.slowestMs, 250);
  EXPECT_EQ(j.perSurvivor,
            "rank 0: aborted in 12.3 ms; rank 2: abort stuck; rank 3: nothing detected, not aborted; rank 4: aborted "
            "in 250.0 ms");
  EXPECT_EQ(j.late,
            "rank 2's ncclCommAbort did not return within abort_within (200.0 ms), rank 4 aborted after 250.0 ms");
  const auto fine = suite::judgeAborts({{0, true, 1'000'000}}, 200);
  EXPECT_EQ(fine.late, "");
  EXPECT_EQ(fine.stuck, 0);
}

TEST(AbortDrillJudgement, TimingFollowsTheKeys) {
  const auto s = scenario::loadScenarioText(
      text(std::string(overNccl) +
           "    rate: 250\n    requests: 1000\n    request_timeout: 300ms\n    abort_within: 2s\n"),
      "t.yaml", {}, rulesFor(2));
  const auto t = suite::abortDrillTiming(scenario::configOf<suite::FaultDrillConfig>(s.tests.at(0)), 7);
  EXPECT_EQ(t.start, 7);
  EXPECT_EQ(t.interval, 4 * ms);
  EXPECT_EQ(t.stepTimeout, 300 * ms);
  EXPECT_EQ(t.abortWithin, 2000 * ms);
  EXPECT_EQ(t.steps, 1000);
}

TEST(AbortDrillExpected, NcclWithinAHostNeverReportsAndTheIbFigureStaysBeside) {
  const suite::StackSettings settings;
  const auto here = suite::expectedForDrill("kill", 100, "nccl", settings);
  EXPECT_EQ(here.stack, "NCCL within a host");
  EXPECT_TRUE(std::isinf(here.seconds));
  EXPECT_NE(here.basis.find("not yet seen on hardware"), std::string::npos);
  EXPECT_NEAR(suite::expectedNcclIb("kill", settings).seconds, 34.36, 0.01);
}

}  // namespace
}  // namespace fabscope
