// Rank-loss handling (RankLoss.hpp): the loss round, rank 0's record of it,
// the end of the job.
#include "driver/RankLoss.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "driver/InstanceAttributes.hpp"
#include "driver/Runner.hpp"
#include "runtime/Deadlines.hpp"
#include "runtime/Timestamp.hpp"
#include "runtime/Watchdog.hpp"

namespace fabscope::driver {
namespace {

std::string rankAndHost(int rank, const std::vector<std::string>& hostOfRank) {
  const bool known = rank >= 0 && static_cast<std::size_t>(rank) < hostOfRank.size();
  return "rank " + std::to_string(rank) + " (" + (known ? hostOfRank[static_cast<std::size_t>(rank)] : "?") + ")";
}

std::string namesOf(const std::vector<int>& ranks, const std::vector<std::string>& hostOfRank) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + rankAndHost(r, hostOfRank);
  return out;
}

std::string nowUtc() { return runtime::utcTimestamp(runtime::realtimeNow()); }

std::string commaList(const std::vector<int>& values) {
  std::string list;
  for (int v : values) list += (list.empty() ? "" : ",") + std::to_string(v);
  return list;
}

// Rank 0's one line for a loss round: who was lost, who stayed silent, the first error.
std::string describeLoss(const runtime::LossOutcome& outcome, const std::vector<std::string>& hosts) {
  std::string firstError;
  for (const auto& [rank, report] : outcome.reports)
    if (!report.error.empty()) {
      firstError = report.error;
      break;
    }
  std::string line =
      outcome.lost.empty() ? "a control-plane wait failed" : "lost contact with " + namesOf(outcome.lost, hosts);
  if (!outcome.silent.empty())
    line += std::string(outcome.silent.size() == outcome.lost.size() ? ": " : "; ") +
            (outcome.silent.size() == 1 ? "it" : namesOf(outcome.silent, hosts)) + " did not answer within " +
            std::to_string(static_cast<int>(runtime::deadlines::lossAnswerSeconds)) + " s";
  if (!firstError.empty()) line += "; first error: " + firstError;
  return line;
}

// The interrupted test's samples as every rank that answered sent them.
std::vector<output::SampleRecord> samplesOf(const runtime::LossOutcome& outcome) {
  std::vector<output::SampleRecord> rows;
  for (const auto& [rank, report] : outcome.reports) {
    const auto* first = reinterpret_cast<const output::SampleRecord*>(report.samples.data());
    rows.insert(rows.end(), first, first + report.samples.size() / sizeof(output::SampleRecord));
  }
  return rows;
}

}  // namespace

// This rank's part of a loss round: its error, the ranks it knows are gone
// and the running test's samples, moved to the global clock for rank 0.
runtime::LossReport RankLoss::lossReportOf(const std::string& myError, std::vector<int> lost,
                                           const RunningTest* running) const {
  runtime::LossReport mine{myError, std::move(lost), {}};
  if (running) {
    for (auto& s : running->samples) {
      s.t_post_ns = run_.clock.toGlobal(s.t_post_ns);
      s.t_done_ns = run_.clock.toGlobal(s.t_done_ns);
    }
    const auto bytes = std::as_bytes(running->samples);
    mine.samples.assign(bytes.begin(), bytes.end());
  }
  return mine;
}

// How long a rank other than 0 waits for rank 0 to conclude a loss round.
// Rank 0 may still be inside a test of its own: it joins at its next
// control-plane wait (at the latest the test's deadline plus the control
// grace), calls the others, records the loss, then concludes. Giving up
// earlier ended the job (MPI_Abort) while rank 0 was still writing the file
// (seen in the no-hang campaign: a file left locked and unfinished).
double RankLoss::rank0ConcludesWithinSeconds(const RunningTest* running) const {
  double testTimeout = running ? running->planned.instance.spec->timeoutSeconds : 0;
  if (!running)
    for (const auto& test : run_.scenario.tests) testTimeout = std::max(testTimeout, test.timeoutSeconds);
  return testTimeout + run_.scenario.controlGraceSeconds + runtime::deadlines::lossAnswerSeconds +
         runtime::deadlines::lossRecordSeconds + runtime::deadlines::lossAckSeconds;
}

void RankLoss::reportLossToRank0(runtime::LossReport mine, const std::vector<int>& lost, const RunningTest* running) {
  const int me = run_.world.rank();
  const auto& hosts = run_.identity.hostOfRank;
  const auto* losses = run_.options.losses;
  std::string conclusion;
  const bool rank0Lost = std::find(lost.begin(), lost.end(), 0) != lost.end();
  if (losses && !rank0Lost)
    conclusion = losses->report(mine, static_cast<runtime::Nanoseconds>(rank0ConcludesWithinSeconds(running) * 1e9));
  std::fprintf(stderr, "fabscope: %s %s: runtime failure: %s%s%s\n", nowUtc().c_str(), rankAndHost(me, hosts).c_str(),
               mine.error.empty() ? "another rank reported a loss" : mine.error.c_str(),
               conclusion.empty() ? "" : "; rank 0: ", conclusion.c_str());
  if (conclusion.empty())
    std::fprintf(stderr, "fabscope: %s: %s; the result file cannot be finished\n", rankAndHost(me, hosts).c_str(),
                 rank0Lost ? "rank 0, which holds the result file, is lost" : "rank 0 did not conclude the loss round");
  std::fflush(stderr);
  if (!conclusion.empty()) {
    losses->acknowledge();
    // Rank 0 ends the job once it has recorded the loss; this is only the fallback.
    const auto wait = runtime::Deadline::afterSeconds(runtime::deadlines::lossEndSeconds);
    const runtime::watchdog::Watch watch("rank 0 to end the job after a loss round", wait.at(), 0);
    while (!wait.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  runtime::MpiEnvironment::abortJob(exit_code::runtimeFailure);
}

// Rank 0, alone: the interrupted test's samples, the start's validity
// findings and the run's end (complete=0, exit_code 3, the lost ranks).
void RankLoss::recordLoss(const runtime::LossOutcome& outcome, const std::string& line, const RunningTest* running) {
  try {
    recorder_.continueAlone();
    const auto control = runtime::Deadline::afterSeconds(runtime::deadlines::lossRecordSeconds);
    if (running) {
      const std::string status = running->status == instance_status::timeout ? "timeout" : "error";
      auto attrs = unfinishedAttributes(running->index, running->planned, status, line);
      std::vector<int> answered;
      for (const auto& [rank, report] : outcome.reports) answered.push_back(rank);
      attrs.emplace_back("samples_from_ranks", commaList(answered));
      recorder_.interrupted(output::instanceGroupPath(running->index), attrs, samplesOf(outcome), control);
    }
    if (!std::exchange(run_.validityRecorded, true))  // the start findings; no clock finding
      recorder_.validity(validity::rowsOf(run_.validity), validity::attributesOf(run_.validity), control);
    recorder_.attributes("/",
                         {{"finished_utc", nowUtc()},
                          {"complete", std::int64_t{0}},
                          {"exit_code", std::int64_t{exit_code::runtimeFailure}},
                          {"error", line},
                          {"lost_ranks", commaList(outcome.lost)}},
                         control);
    recorder_.flush();
    std::fprintf(stderr,
                 "fabscope: the result file %s keeps every test finished so far%s, is marked complete=0 "
                 "and exit_code=3\n",
                 run_.options.outputPath.c_str(), running ? " and the interrupted one's samples" : "");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fabscope: rank 0: could not record the loss in %s: %s (it stays complete=0, exit_code=-1)\n",
                 run_.options.outputPath.c_str(), e.what());
  }
}

void RankLoss::endAfterLoss(const std::string& myError, std::vector<int> lost, const RunningTest* running) {
  std::fflush(stdout);
  auto mine = lossReportOf(myError, lost, running);
  if (run_.world.rank() != 0) reportLossToRank0(std::move(mine), lost, running);
  const auto* losses = run_.options.losses;
  runtime::LossOutcome outcome;
  if (losses)
    outcome =
        losses->gather(std::move(mine), static_cast<runtime::Nanoseconds>(runtime::deadlines::lossAnswerSeconds * 1e9));
  else
    outcome = {lost, {}, {{0, std::move(mine)}}};
  const std::string line = describeLoss(outcome, run_.identity.hostOfRank);
  std::fprintf(stderr, "fabscope: %s rank 0: runtime failure: %s\n", nowUtc().c_str(), line.c_str());
  recordLoss(outcome, line, running);
  std::fflush(stderr);
  printResultLine(true, exit_code::runtimeFailure);
  if (losses)
    losses->conclude(outcome, line, static_cast<runtime::Nanoseconds>(runtime::deadlines::lossAckSeconds * 1e9));
  runtime::MpiEnvironment::abortJob(exit_code::runtimeFailure);
}

}  // namespace fabscope::driver
