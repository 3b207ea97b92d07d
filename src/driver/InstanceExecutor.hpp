#pragma once
// One test instance on one rank: its stages in order (roles, condition + run,
// agree, reduce, record, follow-up choice) over the state it owns. Each stage
// reads what the ones before it left; only `record` writes to the result file.
// A lost rank hands over to RankLoss, which never returns.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "conditions/NeighbourLoad.hpp"
#include "driver/FabricRecorder.hpp"
#include "driver/InstanceResult.hpp"
#include "driver/Planning.hpp"
#include "driver/RankLoss.hpp"
#include "driver/RunState.hpp"
#include "kinds/Kind.hpp"
#include "output/Recorder.hpp"
#include "output/ResultFile.hpp"
#include "stats/SiteScopes.hpp"

namespace fabscope::driver {

class InstanceExecutor {
 public:
  InstanceExecutor(RunState& run, RankLoss& losses, int index, const PlannedInstance& planned);
  InstanceExecutor(const InstanceExecutor&) = delete;
  InstanceExecutor& operator=(const InstanceExecutor&) = delete;
  // Runs the instance over `transport` and records it. Returns rank 0's
  // result (empty on a rank that left the run: RunState::leaveRun).
  InstanceResult execute(transport::Transport& transport, output::ResultFile& file, output::Recorder& recorder);
  // Rank 0's choice for the instance's follow-up, on every rank (empty unless the plan has one).
  const FollowUpChoice& followUp() const { return followUp_; }
  // The instance missed its deadline: transfers may still be in flight, so the
  // next instance needs a fresh data path (the old one is kept, unused).
  bool retireDataPath() const { return agreed_ >= instance_status::timeout; }

 private:
  void assignRoles();
  void runUnderCondition(transport::Transport& transport);
  void runKind(transport::Transport& transport);
  void judgeCompletedRun();
  bool carryOn(output::ResultFile& file);
  void agree();
  void reduce();
  void reduceOnRank0(std::span<const std::byte> allSamples, std::span<const std::byte> allCounters);
  void recordBatchFigure(std::span<const output::SampleRecord> samples);
  void pairMatrix(std::span<const stats::ScopedSample> headline, stats::SiteScopes& scopes);
  void record(output::Recorder& recorder);
  void chooseFollowUp();
  RankLoss::RunningTest running();

  RunState& run_;
  RankLoss& losses_;
  const int index_;
  const PlannedInstance& planned_;
  const suite::Kind& kind_;
  runtime::Deadline control_;  // the test's timeout plus the control plane's grace
  // roles
  suite::RoleAssignment roles_;
  bool canary_ = false, congestor_ = false;
  std::optional<suite::SampleBuffer> samples_;
  std::optional<CounterWindow> counters_;
  std::optional<runtime::Communicator> measuring_;
  // condition + run
  conditions::LoadGraph loadGraph_;
  conditions::LoadReport loadReport_;
  suite::Verdict verdict_;
  std::unique_ptr<suite::InstanceState> kindState_;
  suite::Outcome outcome_;  // empty when run() threw or the rank did not measure
  std::int64_t status_ = 0;
  std::string errorText_;
  std::vector<int> lostPeers_;  // known gone: the run ends now, not at a deadline
  bool lossRound_ = false;      // another rank started a loss round
  std::int64_t tStart_ = 0, tEnd_ = 0;
  // agree
  std::int64_t agreed_ = 0;
  std::string firstError_;
  double loadGbps_ = 0;
  // reduce
  std::vector<output::SummaryRecord> mySummary_;
  bool labelled_ = false;
  std::vector<output::CounterRecord> counterRows_;
  InstanceResult result_;  // rank 0
  output::Attributes attributes_;
  std::vector<output::ScopeRecord> scopeTable_;
  std::vector<double> pairMatrix_;
  FollowUpChoice followUp_;  // rank 0's choice, then every rank's (PlanPart::chooseFollowUp)
};

}  // namespace fabscope::driver
