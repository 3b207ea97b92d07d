#pragma once
// What the run's objects share on one rank: the Runner (set up, header,
// finish), the MatrixLoop, each InstanceExecutor and the RankLoss handling.
// The state of one instance is not here: its InstanceExecutor owns it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "driver/FabricRecorder.hpp"
#include "driver/InstanceResult.hpp"
#include "kinds/Kind.hpp"
#include "kinds/Registry.hpp"
#include "kinds/SelfTest.hpp"
#include "runtime/ClockSync.hpp"
#include "runtime/LossChannel.hpp"
#include "runtime/RankIdentity.hpp"
#include "scenario/Scenario.hpp"
#include "transport/Transport.hpp"
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

// An instance's status as the ranks agree on it: the largest of theirs.
namespace instance_status {
// Ordered by weight: the ranks agree on the largest (a skip outweighs a pass only).
enum : std::int64_t { passed = 0, skipped = 1, failed = 2, timeout = 3, errored = 4 };
}  // namespace instance_status

// After this many instances missed their deadline the run stops recovering
// (each leaves a data path and its buffers alive) and skips the rest.
inline constexpr int maxRecoveries = 3;

// The deadline of a setup step (and of opening a transport): the scenario's
// control_timeout, else runtime::deadlines::setupSeconds.
runtime::Deadline setupDeadline(const scenario::Scenario& scenario);

struct RunState {
  RunState(const scenario::Scenario& scenario, const suite::Registry& registry, const runtime::Communicator& world,
           RunOptions options)
      : scenario(scenario), registry(registry), world(world), comm(&world), options(std::move(options)) {}
  const scenario::Scenario& scenario;
  const suite::Registry& registry;
  const runtime::Communicator& world;
  // The ranks the run goes on with: the world, or the survivors of a fault drill.
  const runtime::Communicator* comm;
  std::optional<runtime::Communicator> survivors;
  bool leaveRun = false;  // this rank left the run on purpose (a fault drill's victim)
  // Transfers of a timed-out instance may still be in flight: its buffers,
  // kind state and data path are kept alive, unused, until the process exits.
  bool abandoned = false;
  int recoveries = 0;           // instances that missed their deadline, recovered from
  int notRunAfterTimeouts = 0;  // instances not run because the run stopped recovering
  std::vector<std::unique_ptr<transport::Transport>> retiredTransports;
  suite::BufferArena buffers;
  suite::RunCache runCache;  // after buffers: destroyed first
  // Kind states (RunContext::state) of timed-out instances: like the
  // arena's buffers, they may hold memory that transfers still touch.
  std::vector<std::unique_ptr<suite::InstanceState>> abandonedKindStates;
  std::vector<std::string> siteOfRank;  // every rank's site, on every rank
  RunOptions options;
  runtime::RankIdentity identity;
  runtime::ClockSync clock;
  double clockReadNs = 0;  // one monotonicNow() here, subtracted from batch figures
  std::uint64_t seed = 0;
  validity::RunValidity validity;
  bool validityRecorded = false;  // /validity is written once (at the end, or by the loss record)
  std::string runId;
  std::vector<InstanceResult> results;  // rank 0: every instance's, for the closing table
  Progress* progress = nullptr;         // the matrix loop's, while it runs
};

}  // namespace fabscope::driver
