// Running: the run's named stages (Runner::run: set up, open the file, its
// header, the matrix instance by instance with one transport per name, finish)
// and what every instance's record shares. Planning is in Planning.cpp, the
// stages of one instance in InstanceStages.cpp, rank-loss handling in RankLoss.cpp.
#include "driver/Runner.hpp"
#include "runtime/MemoryUse.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <utility>

#include "conditions/NeighbourLoad.hpp"
#include "driver/CounterSummary.hpp"
#include "driver/Progress.hpp"
#include "driver/ScopedStatistics.hpp"
#include "driver/SummaryTable.hpp"
#include "fabscope/BuildConfig.hpp"
#include "inventory/HostInventory.hpp"
#include "runtime/Deadlines.hpp"
#include "runtime/EveryRanksLine.hpp"
#include "runtime/Timestamp.hpp"
#include "runtime/WatchdogRanks.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::driver {
namespace {

constexpr int formatVersion = 1;
// After this many instances missed their deadline the run stops recovering
// (each leaves a data path and its buffers alive) and skips the rest.
constexpr int maxRecoveries = 3;

runtime::Deadline setupDeadline(const scenario::Scenario& scenario) {
  return runtime::Deadline::afterSeconds(scenario.controlTimeoutSeconds > 0 ? scenario.controlTimeoutSeconds
                                                                            : runtime::deadlines::setupSeconds);
}
double fileStepSeconds(const scenario::Scenario& scenario) {
  return scenario.controlTimeoutSeconds > 0 ? scenario.controlTimeoutSeconds : runtime::deadlines::fileStepSeconds;
}
runtime::Deadline fileStep(const scenario::Scenario& scenario) {
  return runtime::Deadline::afterSeconds(fileStepSeconds(scenario));
}

std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

}  // namespace

Runner::Runner(const scenario::Scenario& scenario, const suite::Registry& registry, const runtime::Communicator& world,
               RunOptions options)
    : scenario_(scenario), registry_(registry), world_(world), comm_(&world), options_(std::move(options)) {}

void Runner::writeRunHeader(output::Recorder& recorder, const output::ResultFile& file) {
  const auto now = runtime::realtimeNow();
  const auto mono = runtime::monotonicNow();
  std::string overrides;
  for (const auto& o : scenario_.overrides) overrides += o + "\n";
  output::Attributes header = {
      {"format", std::string("fabscope")},
      {"format_version", std::int64_t{formatVersion}},
      {"tool_version", std::string(FABSCOPE_VERSION)},
      {"run_id", runId_},
      {"started_utc", runtime::utcTimestamp(now)},
      {"finished_utc", std::string()},
      {"complete", std::int64_t{0}},
      {"exit_code", std::int64_t{-1}},
      {"command_line", options_.commandLine},
      {"scenario_name", scenario_.name},
      {"scenario_file", scenario_.file},
      {"scenario_text", scenario_.text},
      {"overrides", overrides},
      {"nranks", std::int64_t{world_.size()}},
      {"nhosts", std::int64_t{identity_.hostCount}},
      {"hdf5_mode", std::string(output::writeModeName(file.mode()))},
      {"epoch_offset_ns", std::int64_t{now - mono}},
      {"seed", static_cast<std::int64_t>(seed_)},
      {"launch_preset", envOr("FABSCOPE_FABRIC", "")},
  };
  // Known at start: the wait policy and the start findings (the count becomes
  // final with /validity at the end: the clock finding needs the latencies).
  for (auto& attribute : validity::attributesOf(validity_)) header.push_back(std::move(attribute));
  recorder.attributes("/", header);
  transport::recordTransportSettings(recorder, scenario_.transports);
}

void Runner::writeRanks(output::Recorder& recorder) {
  output::RankRecord row{};
  row.rank = identity_.rank;
  output::setText(row.host, identity_.host);
  row.local_rank = identity_.localRank;
  row.local_size = identity_.localSize;
  row.pid = identity_.pid;
  row.gpu = identity_.gpu;
  output::setText(row.nic, identity_.nic);
  row.clock_offset_ns = clock_.mine().offset;
  row.clock_uncertainty_ns = clock_.mine().uncertainty;
  const auto& topology = options_.fabric.topology;
  const auto label =
      inventory::topologyForHost(identity_.host, topology ? &*topology : nullptr, inventory::currentEnvironment());
  output::setText(row.site, label.site);
  output::setText(row.pod, label.pod);
  output::setText(row.leaf, label.leaf);
  recorder.rank(row);
  // Every rank's site on every rank: each rank splits its own summary by site
  // scope, rank 0 the instance's statistics, and flags groups that span sites.
  siteOfRank_ = runtime::everyRanksLine(world_, label.site, fileStep(scenario_));
}

void Runner::writeSkipped(int index, const PlannedInstance& planned, output::Recorder& recorder,
                          const std::string& why) {
  recorder.skipped(output::instanceGroupPath(index), unfinishedAttributes(index, planned, "skipped", why));
}

void printResultLine(bool rank0, int code) {
  const char* asked = std::getenv("FABSCOPE_REPORT_EXIT");
  if (!rank0 || !asked || std::string(asked) != "1") return;
  std::printf("fabscope: result: exit code %d\n", code);
  std::fflush(stdout);
}

output::Attributes Runner::unfinishedAttributes(int index, const PlannedInstance& planned, const std::string& status,
                                                const std::string& why) const {
  const auto& spec = *planned.instance.spec;
  output::Attributes attrs{{"index", std::int64_t{index}},
                           {"name", spec.name},
                           {"kind", spec.kind},
                           {"case", planned.instance.caseId},
                           {"condition", planned.instance.condition},
                           {"transport", spec.transport},
                           {"memory", spec.memory},
                           {"bytes", planned.instance.bytes},
                           {"iterations", std::int64_t{spec.iterations}},
                           {"pattern", planned.plan.pattern},
                           {"pass", planned.plan.pass},
                           {"status", status},
                           {"error", why}};
  if (planned.plan.followUpOf >= 0) attrs.emplace_back("retest_of", std::int64_t{planned.plan.followUpOf});
  if (spec.repeats > 1) {
    attrs.emplace_back("replicate", std::int64_t{planned.instance.replicate});
    attrs.emplace_back("repeats", std::int64_t{spec.repeats});
  }
  return attrs;
}

InstanceResult Runner::skippedResult(int index, const PlannedInstance& planned) const {
  InstanceResult r;
  r.index = index;
  r.name = planned.instance.spec->name;
  r.kind = planned.instance.spec->kind;
  r.caseId = planned.instance.caseId;
  r.replicate = planned.instance.replicate;
  r.repeats = planned.instance.spec->repeats;
  r.condition = planned.instance.condition;
  r.pattern = planned.plan.pattern;
  r.pass = planned.plan.pass;
  r.bytes = planned.instance.bytes;
  r.status = "skipped";
  r.latency = stats::summarize(std::span<double>{});
  return r;
}

// Identity, clock, the run's seed and id: the same on every rank.
void Runner::setUp() {
  const auto setup = setupDeadline(scenario_);
  // First: the wait policy depends on it, and every later wait (clock sync
  // included) must already yield where ranks outnumber CPUs.
  validity_ = validity::judgeAtStart(world_, setup);
  identity_ = runtime::discoverRankIdentity(world_, setup);
  // So the watchdog's line names a peer's host, and the ranks of its own host
  // that are gone or stopped.
  runtime::watchdog::knowHosts(identity_.hostOfRank);
  runtime::watchdog::knowPids(world_.allgather(identity_.pid, setup));
  const auto syncStart = runtime::monotonicNow();
  clock_ = runtime::ClockSync::measure(world_, 50, setup);
  clockReadNs_ = runtime::clockReadCost();
  runtime::addClockSyncNanoseconds(runtime::monotonicNow() - syncStart);
  std::uint64_t seed = scenario_.seed;
  if (!scenario_.seedGiven && world_.rank() == 0) seed = std::random_device{}() & 0x7fffffffffffull;
  world_.broadcast(&seed, sizeof seed, 0, setup);
  seed_ = seed;
  char id[40];
  std::snprintf(id, sizeof id, "%016llx",
                static_cast<unsigned long long>(std::random_device{}()) << 32 |
                    static_cast<unsigned long long>(runtime::realtimeNow() & 0xffffffff));
  runId_ = world_.broadcastString(id, 0, setup);
}

output::ResultFile Runner::openFile(const std::vector<PlannedInstance>& planned) {
  std::string hdf5Mode = scenario_.hdf5Mode;
  const bool mayLoseRanks =
      std::any_of(planned.begin(), planned.end(), [](const PlannedInstance& p) { return p.plan.mayLoseRanks; });
  if (mayLoseRanks) {
    if (hdf5Mode == "parallel")
      throw UsageError(
          "the scenario has a fault drill, which loses ranks: it needs hdf5=serial (or auto), not parallel");
    hdf5Mode = "serial";
  }
  return output::ResultFile(options_.outputPath, hdf5Mode, world_, setupDeadline(scenario_));
}

int Runner::run(std::vector<PlannedInstance> planned) {
  setUp();
  runtime::sampleHeapPeak("setup");
  auto file = openFile(planned);
  file.setStepSeconds(fileStepSeconds(scenario_));
  output::Recorder recorder(file, fileStepSeconds(scenario_));
  announce(planned, file);
  const auto fabric = writeFileHeader(recorder, file);
  runtime::sampleHeapPeak("file header");
  const int exitCode = runMatrixOrEndAfterLoss(std::move(planned), file, recorder);
  if (leaveRun_) return exit_code::ok;
  return finish(file, recorder, fabric, exitCode);
}

// Rank 0's opening lines on stderr: what runs, where it is written, what makes the numbers doubtful.
void Runner::announce(const std::vector<PlannedInstance>& planned, const output::ResultFile& file) const {
  if (world_.rank() != 0) return;
  std::fprintf(stderr, "fabscope %s: scenario '%s', %d ranks on %d hosts, %zu test instances%s, seed %llu\n",
               FABSCOPE_VERSION, scenario_.name.c_str(), world_.size(), identity_.hostCount, planned.size(),
               retestsAmong(planned).c_str(), static_cast<unsigned long long>(seed_));
  std::fprintf(stderr, "fabscope: writing %s (%s HDF5)\n", options_.outputPath.c_str(),
               output::writeModeName(file.mode()));
  for (const auto& line : validity::describe(validity_)) std::fprintf(stderr, "fabscope: %s\n", line.c_str());
}

// The run header, /ranks, the fabric inventory and the /tests group.
FabricVerdict Runner::writeFileHeader(output::Recorder& recorder, output::ResultFile& file) {
  writeRunHeader(recorder, file);
  writeRanks(recorder);
  auto fabric = recordFabric(file, world_, identity_, options_.fabric, setupDeadline(scenario_));
  recorder.attributes("/", {{"consistency_flags", std::int64_t{fabric.consistencyFlags}},
                            {"manifest_failed", std::int64_t{fabric.manifestFailed ? 1 : 0}}});
  recorder.testsGroup();
  return fabric;
}

// The matrix; a rank lost or a failure outside a fault drill ends the run (RankLoss.cpp) and never returns.
int Runner::runMatrixOrEndAfterLoss(std::vector<PlannedInstance> planned, output::ResultFile& file,
                                    output::Recorder& recorder) {
  try {
    return runMatrix(std::move(planned), file, recorder);
  } catch (const runtime::PeerLost& e) {
    // No collective may run again, not even closing the file (parallel HDF5
    // closes collectively): a loss round names the lost ranks and rank 0
    // records the end alone. Every finished test is already flushed.
    endAfterLoss(recorder, "rank " + std::to_string(world_.rank()) + ": " + e.what(), {e.peer()}, nullptr);
  } catch (const std::exception& e) {
    if (survivors_) {
      std::fprintf(stderr, "fabscope: %s rank %d: runtime failure after a fault drill: %s\n",
                   runtime::utcTimestamp(runtime::realtimeNow()).c_str(), world_.rank(), e.what());
      std::fflush(stderr);
      runtime::MpiEnvironment::abortJob(exit_code::runtimeFailure);
    }
    endAfterLoss(recorder, "rank " + std::to_string(world_.rank()) + ": " + e.what(), {}, nullptr);
  }
}

namespace {

// One transport per name, opened when a test first needs it. After a missed
// deadline transfers may still be in flight inside a transport (UCX can
// cancel neither sends nor puts nor gets, and destroying its worker under
// them crashed): like the buffers they touch, the transports are then left
// alive; the process exits without MPI_Finalize.
class OpenTransports {
 public:
  OpenTransports(const bool& abandoned, std::vector<std::unique_ptr<transport::Transport>>& retired)
      : abandoned_(abandoned), retired_(retired) {}
  OpenTransports(const OpenTransports&) = delete;
  OpenTransports& operator=(const OpenTransports&) = delete;
  ~OpenTransports() {
    if (abandoned_)
      for (auto& entry : open_) (void)entry.second.release();
    for (auto& t : retired_) (void)t.release();
  }
  template <class Open>
  transport::Transport& get(const std::string& name, Open open) {
    auto& transport = open_[name];
    if (!transport) transport = open();
    return *transport;
  }
  // Kept alive, unused: transfers of a missed instance may still be in flight.
  void retire(const std::string& name) {
    retired_.push_back(std::move(open_[name]));
    open_.erase(name);
  }
  void record(output::Recorder& recorder) const {
    for (const auto& [name, t] : open_) {
      output::Attributes facts;
      for (const auto& [key, value] : t->describe()) facts.emplace_back(key, value);
      recorder.transport(name, facts);
    }
  }

 private:
  std::map<std::string, std::unique_ptr<transport::Transport>> open_;
  const bool& abandoned_;
  std::vector<std::unique_ptr<transport::Transport>>& retired_;
};

}  // namespace

bool Runner::stoppedRunning() const { return survivors_ || recoveries_ > maxRecoveries; }

std::string Runner::whyStopped() const {
  // The cluster that lost a rank is not the one the rest of the matrix was for.
  return survivors_ ? "skipped: ranks were lost in an earlier fault drill"
                    : "not run: " + std::to_string(recoveries_) +
                          " tests missed their deadline, more than the run recovers from (" +
                          std::to_string(maxRecoveries) + ")";
}

void Runner::skipInstance(int index, const PlannedInstance& planned, output::Recorder& recorder,
                          const std::string& why) {
  writeSkipped(index, planned, recorder, why);
  if (world_.rank() == 0) results_.push_back(skippedResult(index, planned));
}

// A kind that moves no data of its own runs over the control plane.
std::string Runner::transportNameOf(const PlannedInstance& planned) const {
  return registry_.kind(planned.instance.spec->kind).usesTransport() && !planned.plan.ownDataPath
             ? planned.instance.spec->transport
             : transport::controlPlaneTransport;
}

// The matrix, one instance at a time; a follow-up (a serial retest) runs right after the instance it follows.
int Runner::runMatrix(std::vector<PlannedInstance> planned, output::ResultFile& file, output::Recorder& recorder) {
  const bool rank0 = world_.rank() == 0;
  OpenTransports transports(abandoned_, retiredTransports_);
  // The transports some instance puts or gets over (opened with one-sided operations).
  std::set<std::string> oneSidedTransports;
  for (const auto& p : planned)
    if (p.plan.oneSided) oneSidedTransports.insert(transportNameOf(p));
  Progress progress(static_cast<int>(planned.size()), rank0 && options_.progress);
  progress_ = &progress;
  struct ForgetProgress {
    Progress*& progress;
    ~ForgetProgress() { progress = nullptr; }
  } forgetProgress{progress_};
  int exitCode = exit_code::ok;
  // The instance a follow-up slot (a serial retest) follows, and what it chose
  // (nothing when it did not pass: then the slot is recorded as not run). The
  // same on every rank (the choice is rank 0's, broadcast).
  std::optional<PlannedInstance> measured;
  FollowUpChoice followUp;
  for (int index = 0; index < static_cast<int>(planned.size()); ++index) {
    PlannedInstance current = std::move(planned[static_cast<std::size_t>(index)]);
    progress.starting(index,
                      current.instance.caseId + " [" + current.instance.condition + ", " + current.plan.pass + "]");
    if (current.plan.followUpOf >= 0 && !stoppedRunning()) {
      if (!measured || followUp.empty()) {
        skipInstance(index, current, recorder, current.plan.part->followUpNotRun(current.plan.followUpOf));
        continue;
      }
      current = followUpOf(*measured, followUp, current.plan.followUpOf);
    }
    measured.reset();
    followUp = {};
    if (stoppedRunning()) {
      if (!survivors_) ++notRunAfterTimeouts_;
      skipInstance(index, current, recorder, whyStopped());
      continue;
    }
    const std::string transportName = transportNameOf(current);
    auto& transport = transports.get(transportName, [&] {
      return transport::openTransport(
          transportName, world_, identity_.localRank,
          {.settings = &scenario_.transports, .oneSided = oneSidedTransports.contains(transportName)},
          setupDeadline(scenario_));
    });
    auto result = runInstance(index, current, file, recorder, transport, followUp);
    if (leaveRun_) return exit_code::ok;
    if (std::exchange(retireDataPath_, false)) {
      // Every rank answered, but transfers of the missed instance may still be
      // in flight (a matched rendezvous can be neither cancelled nor
      // abandoned, and UCX crashed destroying a worker under them): the next
      // instance gets a fresh data path, and the old one is kept, unused.
      ++recoveries_;
      transports.retire(transportName);
      runCache_.retire();
    }
    if (result.status != "passed" && result.status != "skipped") exitCode = exit_code::checkFailed;
    if (current.plan.part->followedUp()) measured = std::move(current);
    if (rank0) results_.push_back(std::move(result));
  }
  transports.record(recorder);
  return exitCode;
}

int Runner::finish(output::ResultFile& file, output::Recorder& recorder, const FabricVerdict& fabric, int exitCode) {
  if (fabric.manifestFailed) exitCode = exit_code::checkFailed;
  {
    // Clock uncertainty against the smallest latency measured (one-way p50, rank 0's results).
    double smallestLatency = 0;
    for (const auto& r : results_)
      if (r.metric == suite::Metric::latency && r.status == "passed" && std::isfinite(r.latency.p50) &&
          r.latency.p50 > 0 && (smallestLatency == 0 || r.latency.p50 < smallestLatency))
        smallestLatency = r.latency.p50;
    const auto closing = fileStep(scenario_);
    validity::judgeClocks(validity_, *comm_, clock_.mine().uncertainty, smallestLatency, closing);
    std::vector<output::ValidityRecord> rows;
    if (comm_->rank() == 0) rows = validity::rowsOf(validity_);
    recorder.validity(rows, validity::attributesOf(validity_), closing);
    validityRecorded_ = true;
  }
  recorder.attributes("/", {{"finished_utc", runtime::utcTimestamp(runtime::realtimeNow())},
                            {"complete", std::int64_t{1}},
                            {"exit_code", std::int64_t{exitCode}},
                            {"missed_deadlines", std::int64_t{recoveries_}},
                            {"not_run_after_missed_deadlines", std::int64_t{notRunAfterTimeouts_}}});
  file.flush();
  runtime::sampleHeapPeak("closing");
  if (world_.rank() == 0) {
    // What makes the numbers doubtful comes before the numbers.
    for (const auto& line : validity::describe(validity_)) std::printf("%s\n", line.c_str());
    printSummaryTable(stdout, results_);
    if (recoveries_ > 0)
      std::printf("\n%d test(s) missed their deadline; each following test ran on a fresh data path%s\n", recoveries_,
                  notRunAfterTimeouts_ > 0 ? (", until the limit of " + std::to_string(maxRecoveries) + ": " +
                                              std::to_string(notRunAfterTimeouts_) + " test(s) were NOT RUN")
                                                 .c_str()
                                           : "");
    if (!fabric.lines.empty()) {
      std::printf("\nfabric inventory: %d consistency flag(s)%s\n", fabric.consistencyFlags,
                  fabric.manifestFailed ? "; the manifest check FAILED" : "");
      for (const auto& line : fabric.lines) std::printf("  %s\n", line.c_str());
    }
    std::printf("result file: %s (complete)\n", options_.outputPath.c_str());
    std::fflush(stdout);
  }
  return exitCode;
}

std::vector<int> Runner::ranksLeftBehind() const {
  if (!survivors_) return {};
  MPI_Group worldGroup, survivorGroup;
  MPI_Comm_group(world_.handle(), &worldGroup);
  MPI_Comm_group(survivors_->handle(), &survivorGroup);
  std::vector<int> mine(static_cast<std::size_t>(survivors_->size())), inWorld(mine.size());
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<int>(i);
  MPI_Group_translate_ranks(survivorGroup, static_cast<int>(mine.size()), mine.data(), worldGroup, inWorld.data());
  MPI_Group_free(&worldGroup);
  MPI_Group_free(&survivorGroup);
  std::vector<int> left;
  for (int r = 0; r < world_.size(); ++r)
    if (std::find(inWorld.begin(), inWorld.end(), r) == inWorld.end()) left.push_back(r);
  return left;
}

bool Runner::survivorsDone(const runtime::Deadline& deadline) const {
  if (!survivors_) return true;
  try {
    survivors_->barrier(deadline);
    return true;
  } catch (const DeadlineExceeded&) {
    return false;
  }
}

}  // namespace fabscope::driver
