#pragma once
// Runs a validated scenario on every rank and writes the shared result file:
// a short list of named stages (Runner::run). Planning is in Planning.*, the
// stages of one instance in InstanceStages.cpp, rank-loss handling in RankLoss.cpp.
#include <optional>
#include <string>
#include <vector>

#include "conditions/NeighbourLoad.hpp"
#include "driver/FabricRecorder.hpp"
#include "driver/InstanceResult.hpp"
#include "driver/Planning.hpp"
#include "kinds/Registry.hpp"
#include "kinds/SelfTest.hpp"
#include "output/Recorder.hpp"
#include "output/ResultFile.hpp"
#include "runtime/ClockSync.hpp"
#include "runtime/LossChannel.hpp"
#include "runtime/RankIdentity.hpp"
#include "scenario/Matrix.hpp"
#include "validity/RunValidity.hpp"

namespace fabscope::driver {

class Progress;

struct RunOptions {
  std::string outputPath;
  std::string commandLine;
  bool progress = true;
  FabricInputs fabric;
  // Where a lost or silent rank is reported and named (see LossChannel).
  const runtime::LossChannel* losses = nullptr;
  // --self-test hooks for fabscope's own tests (kinds/SelfTest.hpp); none in a real run.
  suite::SelfTestHooks selfTest;
};

// Rank 0's result line, when the launcher asked for it (FABSCOPE_REPORT_EXIT=1):
// launch/fabscope-mpirun and launch/slurm/fabscope.sbatch read it, because in a
// fault-tolerant launch the launcher's own status does not carry the code.
void printResultLine(bool rank0, int code);

// An instance's status as the ranks agree on it: the largest of theirs.
namespace instance_status {
// Ordered by weight: the ranks agree on the largest (a skip outweighs a pass only).
enum : std::int64_t { passed = 0, skipped = 1, failed = 2, timeout = 3, errored = 4 };
}  // namespace instance_status

// What the stages of one instance share on one rank (InstanceStages.cpp), in
// the order the stages fill it: roles, condition + run, agree, reduce, record.
struct InstanceRun {
  InstanceRun(int index, const PlannedInstance& planned, const suite::Kind& kind, double controlGraceSeconds);
  int index;
  const PlannedInstance& planned;
  const suite::Kind& kind;
  runtime::Deadline control;  // the test's timeout plus the control plane's grace
  // roles
  suite::RoleAssignment roles;
  bool canary = false, congestor = false;
  std::optional<suite::SampleBuffer> samples;
  std::optional<CounterWindow> counters;
  std::optional<runtime::Communicator> measuring;
  // condition + run
  conditions::LoadGraph loadGraph;
  conditions::LoadReport loadReport;
  suite::Verdict verdict;
  std::unique_ptr<suite::InstanceState> state;
  suite::Outcome outcome;  // empty when run() threw or the rank did not measure
  std::int64_t status = 0;
  std::string errorText;
  std::vector<int> lostPeers;  // known gone: the run ends now, not at a deadline
  bool lossRound = false;      // another rank started a loss round
  std::int64_t tStart = 0, tEnd = 0;
  // agree
  std::int64_t agreed = 0;
  std::string firstError;
  double loadGbps = 0;
  // reduce
  std::vector<output::SummaryRecord> mySummary;
  bool labelled = false;
  std::vector<output::CounterRecord> counterRows;
  InstanceResult result;  // rank 0
  output::Attributes attributes;
  std::vector<output::ScopeRecord> scopeTable;
  std::vector<double> pairMatrix;
  FollowUpChoice followUp;  // rank 0's choice for the follow-up (PlanPart::chooseFollowUp)
};

class Runner {
 public:
  Runner(const scenario::Scenario& scenario, const suite::Registry& registry, const runtime::Communicator& world,
         RunOptions options);
  // Runs `planned` (planMatrix of the runner's scenario, planned once at
  // load). Returns the exit code (0 or 1); throws RuntimeFailure when the run
  // cannot go on.
  int run(std::vector<PlannedInstance> planned);
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
  // The world ranks a fault drill left behind (not among the survivors).
  std::vector<int> ranksLeftBehind() const;
  bool survivorsDone(const runtime::Deadline& deadline) const;

 private:
  // Run level (Runner.cpp).
  void setUp();
  output::ResultFile openFile(const std::vector<PlannedInstance>& planned);
  void announce(const std::vector<PlannedInstance>& planned, const output::ResultFile& file) const;
  FabricVerdict writeFileHeader(output::Recorder& recorder, output::ResultFile& file);
  int runMatrixOrEndAfterLoss(std::vector<PlannedInstance> planned, output::ResultFile& file,
                              output::Recorder& recorder);
  void writeRunHeader(output::Recorder& recorder, const output::ResultFile& file);
  void writeRanks(output::Recorder& recorder);
  int runMatrix(std::vector<PlannedInstance> planned, output::ResultFile& file, output::Recorder& recorder);
  void writeSkipped(int index, const PlannedInstance& planned, output::Recorder& recorder, const std::string& why);
  // Recorded as not run, and counted in the summary.
  void skipInstance(int index, const PlannedInstance& planned, output::Recorder& recorder, const std::string& why);
  // After a fault drill lost ranks, or too many missed deadlines, the rest of the matrix is skipped.
  bool stoppedRunning() const;
  std::string transportNameOf(const PlannedInstance& planned) const;
  std::string whyStopped() const;
  InstanceResult skippedResult(int index, const PlannedInstance& planned) const;
  output::Attributes unfinishedAttributes(int index, const PlannedInstance& planned, const std::string& status,
                                          const std::string& why) const;
  // Rank-loss handling (RankLoss.cpp).
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
  [[noreturn]] void endAfterLoss(output::Recorder& recorder, const std::string& myError, std::vector<int> lost,
                                 const RunningTest* running);
  runtime::LossReport lossReportOf(const std::string& myError, std::vector<int> lost, const RunningTest* running) const;
  double rank0ConcludesWithinSeconds(const RunningTest* running) const;
  // A rank other than 0: reports to rank 0 and waits for it to end the job. Never returns.
  [[noreturn]] void reportLossToRank0(runtime::LossReport mine, const std::vector<int>& lost,
                                      const RunningTest* running);
  void recordLoss(output::Recorder& recorder, const runtime::LossOutcome& outcome, const std::string& line,
                  const RunningTest* running);
  int finish(output::ResultFile& file, output::Recorder& recorder, const FabricVerdict& fabric, int exitCode);

  // One instance: the stages in order (InstanceStages.cpp).
  InstanceResult runInstance(int index, const PlannedInstance& planned, output::ResultFile& file,
                             output::Recorder& recorder, transport::Transport& transport, FollowUpChoice& followUp);
  void assignInstanceRoles(InstanceRun& run);
  void runUnderCondition(InstanceRun& run, transport::Transport& transport);
  void runKind(InstanceRun& run, transport::Transport& transport);
  void judgeCompletedRun(InstanceRun& run) const;
  bool carryOn(InstanceRun& run, output::ResultFile& file, output::Recorder& recorder);
  void agree(InstanceRun& run, output::Recorder& recorder);
  void reduce(InstanceRun& run);
  void instanceAttributes(InstanceRun& run);
  void reduceOnRank0(InstanceRun& run, std::span<const std::byte> allSamples, std::span<const std::byte> allCounters);
  void recordBatchFigure(InstanceRun& run, std::span<const output::SampleRecord> samples);
  void pairMatrix(InstanceRun& run, std::span<const stats::ScopedSample> headline, stats::SiteScopes& scopes);
  void record(InstanceRun& run, output::Recorder& recorder);
  FollowUpChoice followUpChoice(InstanceRun& run);

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
  bool retireDataPath_ = false;  // set by the agree stage, acted on by runMatrix
  int recoveries_ = 0;
  int notRunAfterTimeouts_ = 0;
  std::vector<std::unique_ptr<transport::Transport>> retiredTransports_;
  suite::BufferArena buffers_;
  suite::RunCache runCache_;  // after buffers_: destroyed first
  // Kind states (RunContext::state) of timed-out instances: like the
  // arena's buffers, they may hold memory that transfers still touch.
  std::vector<std::unique_ptr<suite::InstanceState>> abandonedKindStates_;
  std::vector<std::string> siteOfRank_;  // rank 0 only
  RunOptions options_;
  runtime::RankIdentity identity_;
  runtime::ClockSync clock_;
  double clockReadNs_ = 0;  // one monotonicNow() here, subtracted from batch figures
  std::uint64_t seed_ = 0;
  validity::RunValidity validity_;
  bool validityRecorded_ = false;  // /validity is written once (at the end, or by the loss record)
  std::string runId_;
  std::vector<InstanceResult> results_;
  Progress* progress_ = nullptr;  // runMatrix's, while it runs
};

}  // namespace fabscope::driver
