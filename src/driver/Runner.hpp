#pragma once
// Runs a validated scenario on every rank and writes the shared result file.
#include <optional>
#include <string>
#include <vector>

#include "validity/RunValidity.hpp"
#include "driver/FabricRecorder.hpp"
#include "driver/InstanceResult.hpp"
#include "output/ResultFile.hpp"
#include "runtime/ClockSync.hpp"
#include "runtime/LossChannel.hpp"
#include "runtime/RankIdentity.hpp"
#include "scenario/Matrix.hpp"
#include "suite/Registry.hpp"

namespace fabscope::driver {

struct RunOptions {
  std::string outputPath;
  std::string commandLine;
  bool progress = true;
  FabricInputs fabric;
  // Where a lost or silent rank is reported and named (see LossChannel).
  const runtime::LossChannel* losses = nullptr;
};

// Rank 0's result line, when the launcher asked for it (FABSCOPE_REPORT_EXIT=1):
// launch/fabscope-mpirun and launch/slurm/fabscope.sbatch read it, because in a
// fault-tolerant launch the launcher's own status does not carry the code.
void printResultLine(bool rank0, int code);

struct PlannedInstance {
  scenario::TestInstance instance;
  suite::InstancePlan plan;
};

// Samples and buffers one rank needs for an instance (known before it runs).
std::int64_t memoryPerRank(const suite::InstancePlan& plan);

// The matrix with every instance's plan; throws ScenarioError on bad kind keys
// and on an instance above the scenario's max_memory_per_rank.
std::vector<PlannedInstance> planMatrix(const scenario::Scenario& scenario, const suite::Registry& registry,
                                        int worldSize);

class Runner {
 public:
  Runner(const scenario::Scenario& scenario, const suite::Registry& registry, const runtime::Communicator& world,
         RunOptions options);
  // Returns the exit code (0 or 1); throws RuntimeFailure when the run cannot go on.
  int run();
  // True on a rank that left the run on purpose (the victim of a fault drill):
  // it must exit without MPI_Finalize.
  bool leftRun() const { return leaveRun_; }
  // True when transfers of a timed-out test may still be pending: MPI_Finalize
  // could wait for them forever, so the process must exit without it.
  bool transfersAbandoned() const { return abandoned_; }
  // How many instances missed their deadline and were recovered from (fresh
  // transports for the next one), and how many were then not run because
  // the run stopped recovering.
  int recoveries() const { return recoveries_; }
  int notRunAfterTimeouts() const { return notRunAfterTimeouts_; }
  // True after a fault drill lost ranks: MPI_Finalize would wait for them.
  bool lostRanks() const { return survivors_.has_value(); }
  // After a run that lost ranks: how many, and a barrier of the survivors so
  // none leaves (which makes Open MPI end the job) before rank 0 has closed
  // the result file. Bounded by `deadline`; false if it ran out.
  int lostRankCount() const { return survivors_ ? world_.size() - survivors_->size() : 0; }
  bool survivorsDone(const runtime::Deadline& deadline) const;

 private:
  InstanceResult runInstance(int index, const PlannedInstance& planned, output::ResultFile& file,
                             transport::Transport& transport, std::vector<suite::RankPair>& worstPairs,
                             std::vector<suite::RankPair>& controlPairs);
  void writeRunHeader(output::ResultFile& file);
  void writeSkipped(int index, const PlannedInstance& planned, output::ResultFile& file, const std::string& why);
  output::Attributes unfinishedAttributes(int index, const PlannedInstance& planned, const std::string& status,
                                          const std::string& why) const;
  InstanceResult skippedResult(int index, const PlannedInstance& planned) const;
  // The test that was running when a rank was lost, for the loss round.
  struct RunningTest {
    int index;
    const PlannedInstance& planned;
    std::span<output::SampleRecord> samples;  // this rank's, local clock
    std::int64_t status;
  };
  // A rank is lost or silent: names it with the other survivors (a loss
  // round over the LossChannel), records what it can (rank 0: the running
  // test's samples with its status, the error, exit_code 3, complete=0) and
  // ends the job with exit code 3, within seconds. Never returns.
  [[noreturn]] void endAfterLoss(output::ResultFile& file, const std::string& myError, std::vector<int> lost,
                                 const RunningTest* running);
  void writeRanks(output::ResultFile& file);

  const scenario::Scenario& scenario_;
  const suite::Registry& registry_;
  const runtime::Communicator& world_;
  // The ranks the run goes on with: the world, or the survivors of a fault drill.
  const runtime::Communicator* comm_;
  std::optional<runtime::Communicator> survivors_;
  bool leaveRun_ = false;
  // Transfers of a timed-out instance may still be in flight: its buffers,
  // kind state and data path are kept alive, unused, until the process exits.
  bool abandoned_ = false;
  bool retireDataPath_ = false;  // set by runInstance, acted on by run()
  int recoveries_ = 0;
  int notRunAfterTimeouts_ = 0;
  std::vector<std::unique_ptr<transport::Transport>> retiredTransports_;
  suite::BufferArena buffers_;
  suite::RunCache runCache_;  // after buffers_: destroyed first
  // Kind states (RunContext::kindState) of timed-out instances: like the
  // arena's buffers, they may hold memory that transfers still touch.
  std::vector<std::shared_ptr<void>> abandonedKindStates_;
  std::vector<std::string> siteOfRank_;  // rank 0 only
  RunOptions options_;
  runtime::RankIdentity identity_;
  runtime::ClockSync clock_;
  std::uint64_t seed_ = 0;
  validity::RunValidity validity_;
  bool validityRecorded_ = false;  // /validity is written once
  std::string runId_;
  std::vector<InstanceResult> results_;
};

}  // namespace fabscope::driver
