#pragma once
// Runs a validated scenario on every rank and writes the shared result file.
#include <optional>
#include <string>
#include <vector>

#include "conditions/NeighbourLoad.hpp"
#include "driver/FabricRecorder.hpp"
#include "driver/InstanceResult.hpp"
#include "output/Recorder.hpp"
#include "output/ResultFile.hpp"
#include "runtime/ClockSync.hpp"
#include "runtime/RankIdentity.hpp"
#include "scenario/Matrix.hpp"
#include "kinds/Registry.hpp"

namespace fabscope::driver {

struct RunOptions {
  std::string outputPath;
  std::string commandLine;
  bool progress = true;
  FabricInputs fabric;
};

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

// What the stages of one instance share on one rank (InstanceStages.cpp), in
// the order the stages fill it: roles, condition + run, agree, reduce, record.
struct InstanceRun {
  InstanceRun(int index, const PlannedInstance& planned, const suite::Kind& kind);
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
  std::int64_t tStart = 0, tEnd = 0;
  // agree
  std::int64_t agreed = 0;
  std::string firstError;
  double loadGbps = 0;
  // reduce
  std::vector<output::SummaryRecord> mySummary;
  bool labelled = false;
  std::vector<output::CounterRecord> counterRows;
  InstanceResult result;         // rank 0
  output::Attributes attributes;
  std::vector<output::ScopeRecord> scopeTable;
  std::vector<double> pairMatrix;
  std::vector<std::int32_t> worstFlat;  // retest pairs in group indices, flattened
};

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
  // True after a fault drill lost ranks: MPI_Finalize would wait for them.
  bool lostRanks() const { return survivors_.has_value(); }
  // After a run that lost ranks: how many, and a barrier of the survivors so
  // none leaves (which makes Open MPI end the job) before rank 0 has closed
  // the result file. Bounded by `deadline`; false if it ran out.
  int lostRankCount() const { return survivors_ ? world_.size() - survivors_->size() : 0; }
  bool survivorsDone(const runtime::Deadline& deadline) const;

 private:
  // Run level (Runner.cpp).
  void setUp();
  output::ResultFile openFile(const std::vector<PlannedInstance>& planned);
  void writeRunHeader(output::Recorder& recorder, const output::ResultFile& file);
  void writeRanks(output::Recorder& recorder);
  int runMatrix(std::vector<PlannedInstance> planned, output::ResultFile& file, output::Recorder& recorder);
  void writeSkipped(int index, const PlannedInstance& planned, output::Recorder& recorder, const std::string& why);
  InstanceResult skippedResult(int index, const PlannedInstance& planned) const;
  int finish(output::ResultFile& file, output::Recorder& recorder, const FabricVerdict& fabric, int exitCode);

  // One instance: the stages in order (InstanceStages.cpp).
  InstanceResult runInstance(int index, const PlannedInstance& planned, output::ResultFile& file,
                             output::Recorder& recorder, transport::Transport& transport,
                             std::vector<suite::RankPair>& retestPairs);
  void assignInstanceRoles(InstanceRun& run);
  void runUnderCondition(InstanceRun& run, transport::Transport& transport);
  void runKind(InstanceRun& run, transport::Transport& transport);
  bool carryOn(InstanceRun& run, output::ResultFile& file);
  void agree(InstanceRun& run);
  void reduce(InstanceRun& run);
  void instanceAttributes(InstanceRun& run);
  void reduceOnRank0(InstanceRun& run, std::span<const std::byte> allSamples, std::span<const std::byte> allCounters);
  void pairMatrix(InstanceRun& run, std::span<const stats::ScopedSample> headline, stats::SiteScopes& scopes);
  void record(InstanceRun& run, output::Recorder& recorder);
  std::vector<suite::RankPair> retestPairs(InstanceRun& run);

  const scenario::Scenario& scenario_;
  const suite::Registry& registry_;
  const runtime::Communicator& world_;
  // The ranks the run goes on with: the world, or the survivors of a fault drill.
  const runtime::Communicator* comm_;
  std::optional<runtime::Communicator> survivors_;
  bool leaveRun_ = false;
  bool abandoned_ = false;
  suite::BufferArena buffers_;
  suite::RunCache runCache_;  // after buffers_: destroyed first
  // Kind states (RunContext::state) of timed-out instances: like the
  // arena's buffers, they may hold memory that transfers still touch.
  std::vector<std::unique_ptr<suite::InstanceState>> abandonedKindStates_;
  std::vector<std::string> siteOfRank_;  // rank 0 only
  RunOptions options_;
  runtime::RankIdentity identity_;
  runtime::ClockSync clock_;
  std::uint64_t seed_ = 0;
  std::string runId_;
  std::vector<InstanceResult> results_;
};

}  // namespace fabscope::driver
