#pragma once
// Rank-loss handling: when a rank is lost or silent outside a fault drill, a
// loss round over the LossChannel names it, rank 0 records what it can alone
// (the interrupted test's samples, the start's validity findings, exit code 3)
// and the job ends within seconds.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "driver/Planning.hpp"
#include "driver/RunState.hpp"
#include "output/Recorder.hpp"
#include "runtime/LossChannel.hpp"

namespace fabscope::driver {

class RankLoss {
 public:
  // The test that was running when a rank was lost, for the loss round.
  struct RunningTest {
    int index;
    const PlannedInstance& planned;
    std::span<output::SampleRecord> samples;  // this rank's, local clock
    std::int64_t status;
  };
  RankLoss(RunState& run, output::Recorder& recorder) : run_(run), recorder_(recorder) {}
  // A rank is lost or silent: names it with the other survivors (a loss
  // round over the LossChannel), records what it can (rank 0: the running
  // test's samples with its status, the error, exit_code 3, complete=0) and
  // ends the job with exit code 3, within seconds. Never returns.
  [[noreturn]] void endAfterLoss(const std::string& myError, std::vector<int> lost, const RunningTest* running);

 private:
  runtime::LossReport lossReportOf(const std::string& myError, std::vector<int> lost, const RunningTest* running) const;
  double rank0ConcludesWithinSeconds(const RunningTest* running) const;
  // A rank other than 0: reports to rank 0 and waits for it to end the job. Never returns.
  [[noreturn]] void reportLossToRank0(runtime::LossReport mine, const std::vector<int>& lost,
                                      const RunningTest* running);
  void recordLoss(const runtime::LossOutcome& outcome, const std::string& line, const RunningTest* running);

  RunState& run_;
  output::Recorder& recorder_;
};

}  // namespace fabscope::driver
