#include "driver/Runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <set>
#include <utility>
#include <map>
#include <random>

#include "conditions/NeighbourLoad.hpp"
#include "inventory/HostInventory.hpp"
#include "driver/CounterSummary.hpp"
#include "driver/Progress.hpp"
#include "driver/ScopedStatistics.hpp"
#include "driver/SummaryTable.hpp"
#include "fabscope/BuildConfig.hpp"
#include "runtime/Deadlines.hpp"
#include "runtime/Timestamp.hpp"
#include "scenario/Units.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::driver {
namespace {

constexpr int formatVersion = 1;

runtime::Deadline setupDeadline() { return runtime::Deadline::afterSeconds(runtime::deadlines::setupSeconds); }
runtime::Deadline fileStep() { return runtime::Deadline::afterSeconds(runtime::deadlines::fileStepSeconds); }

// The retest stage's instance: the worst pairs of `measured`, one at a time.
PlannedInstance retestOf(const PlannedInstance& measured, const std::vector<suite::RankPair>& worst, int index) {
  PlannedInstance retest = measured;
  retest.plan.schedule = suite::serialScheduleOf(worst);
  retest.plan.pass = "serial-retest";
  retest.plan.retestOf = index;
  retest.plan.retestWorst = 0;
  retest.plan.maxSamplesPerRank = static_cast<std::int64_t>(worst.size()) * measured.instance.spec->iterations;
  return retest;
}

std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

}  // namespace

std::int64_t memoryPerRank(const suite::InstancePlan& plan) {
  return plan.maxSamplesPerRank * static_cast<std::int64_t>(sizeof(output::SampleRecord)) + plan.bufferBytesPerRank;
}

std::vector<PlannedInstance> planMatrix(const scenario::Scenario& scenario, const suite::Registry& registry,
                                        int worldSize) {
  std::vector<PlannedInstance> out;
  for (auto& instance : scenario::expandMatrix(scenario)) {
    auto plan = registry.kind(instance.spec->kind).plan(instance, scenario.file, worldSize);
    const std::int64_t memory = memoryPerRank(plan);
    if (memory > scenario.maxMemoryPerRank)
      throw scenario::ScenarioError(
          scenario::positionOf(scenario.file, instance.spec->node) + ": test '" + instance.spec->name + "' at " +
          scenario::formatSize(instance.bytes) + " needs about " + std::to_string(memory >> 20) +
          " MiB per rank for samples and buffers, more than max_memory_per_rank (" +
          std::to_string(scenario.maxMemoryPerRank >> 20) + " MiB); lower iterations, window or sizes, or raise the "
          "limit with --set max_memory_per_rank=16GiB");
    out.push_back({std::move(instance), std::move(plan)});
  }
  return out;
}

Runner::Runner(const scenario::Scenario& scenario, const suite::Registry& registry,
               const runtime::Communicator& world, RunOptions options)
    : scenario_(scenario), registry_(registry), world_(world), comm_(&world), options_(std::move(options)) {}

void Runner::writeRunHeader(output::Recorder& recorder, const output::ResultFile& file) {
  const auto now = runtime::realtimeNow();
  const auto mono = runtime::monotonicNow();
  std::string overrides;
  for (const auto& o : scenario_.overrides) overrides += o + "\n";
  recorder.attributes("/", {
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
  });
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
  const auto label = inventory::topologyForHost(identity_.host, topology ? &*topology : nullptr,
                                                inventory::currentEnvironment());
  output::setText(row.site, label.site);
  output::setText(row.pod, label.pod);
  output::setText(row.leaf, label.leaf);
  recorder.rank(row);
  // Every rank's site on every rank: each rank splits its own summary by site
  // scope, rank 0 the instance's statistics, and flags groups that span sites.
  const auto control = fileStep();
  const auto gathered = world_.gatherStrings(label.site, 0, control);
  std::string joined;
  for (const auto& site : gathered) joined += site + "\n";
  joined = world_.broadcastString(joined, 0, control);
  siteOfRank_.clear();
  for (std::size_t start = 0; start < joined.size();) {
    const auto end = joined.find('\n', start);
    siteOfRank_.push_back(joined.substr(start, end - start));
    start = end + 1;
  }
}

void Runner::writeSkipped(int index, const PlannedInstance& planned, output::Recorder& recorder,
                          const std::string& why) {
  const auto& spec = *planned.instance.spec;
  recorder.skipped(output::instanceGroupPath(index),
                   {{"index", std::int64_t{index}}, {"name", spec.name}, {"kind", spec.kind},
                    {"case", planned.instance.caseId}, {"condition", planned.instance.condition},
                    {"transport", spec.transport}, {"memory", spec.memory}, {"bytes", planned.instance.bytes},
                    {"iterations", std::int64_t{spec.iterations}}, {"status", std::string("skipped")},
                    {"error", why}});
}

InstanceResult Runner::skippedResult(int index, const PlannedInstance& planned) const {
  InstanceResult r;
  r.index = index;
  r.name = planned.instance.spec->name;
  r.kind = planned.instance.spec->kind;
  r.caseId = planned.instance.caseId;
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
  const auto setup = setupDeadline();
  identity_ = runtime::discoverRankIdentity(world_, setup);
  clock_ = runtime::ClockSync::measure(world_, 50, setup);
  std::uint64_t seed = scenario_.seed;
  if (!scenario_.seedGiven && world_.rank() == 0) seed = std::random_device{}() & 0x7fffffffffffull;
  world_.broadcast(&seed, sizeof seed, 0, setup);
  seed_ = seed;
  char id[40];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(std::random_device{}()) << 32 |
                                               static_cast<unsigned long long>(runtime::realtimeNow() & 0xffffffff));
  runId_ = world_.broadcastString(id, 0, setup);
}

output::ResultFile Runner::openFile(const std::vector<PlannedInstance>& planned) {
  std::string hdf5Mode = scenario_.hdf5Mode;
  const bool mayLoseRanks =
      std::any_of(planned.begin(), planned.end(), [](const PlannedInstance& p) { return p.plan.mayLoseRanks; });
  if (mayLoseRanks) {
    if (hdf5Mode == "parallel")
      throw UsageError("the scenario has a fault drill, which loses ranks: it needs hdf5=serial (or auto), not parallel");
    hdf5Mode = "serial";
  }
  return output::ResultFile(options_.outputPath, hdf5Mode, world_, setupDeadline());
}

int Runner::run() {
  const bool rank0 = world_.rank() == 0;
  setUp();
  auto planned = planMatrix(scenario_, registry_, world_.size());
  auto file = openFile(planned);
  output::Recorder recorder(file);
  if (rank0) {
    std::fprintf(stderr, "fabscope %s: scenario '%s', %d ranks on %d hosts, %zu test instances, seed %llu\n",
                 FABSCOPE_VERSION, scenario_.name.c_str(), world_.size(), identity_.hostCount, planned.size(),
                 static_cast<unsigned long long>(seed_));
    std::fprintf(stderr, "fabscope: writing %s (%s HDF5)\n", options_.outputPath.c_str(),
                 output::writeModeName(file.mode()));
  }
  writeRunHeader(recorder, file);
  writeRanks(recorder);
  const auto fabric = recordFabric(file, world_, identity_, options_.fabric, setupDeadline());
  recorder.attributes("/", {{"consistency_flags", std::int64_t{fabric.consistencyFlags}},
                            {"manifest_failed", std::int64_t{fabric.manifestFailed ? 1 : 0}}});
  recorder.testsGroup();
  int exitCode = exit_code::ok;
  try {
    exitCode = runMatrix(std::move(planned), file, recorder);
  } catch (const std::exception& e) {
    // A rank is lost: no collective may run again, not even closing the file
    // (parallel HDF5 closes collectively). Every finished test is already
    // flushed; the file stays complete=0. MPI_Abort ends every rank.
    std::fprintf(stderr,
                 "fabscope: %s rank %d: runtime failure: %s\nfabscope: the result file %s keeps every test finished "
                 "so far and is marked complete=0\n",
                 runtime::utcTimestamp(runtime::realtimeNow()).c_str(), world_.rank(), e.what(),
                 options_.outputPath.c_str());
    std::fflush(stderr);
    runtime::MpiEnvironment::abortJob(exit_code::runtimeFailure);
  }
  if (leaveRun_) return exit_code::ok;
  return finish(file, recorder, fabric, exitCode);
}

// The matrix, one instance at a time; a retest runs right after the instance it retests.
int Runner::runMatrix(std::vector<PlannedInstance> planned, output::ResultFile& file, output::Recorder& recorder) {
  const bool rank0 = world_.rank() == 0;
  // One transport per name, opened when a test first needs it.
  std::map<std::string, std::unique_ptr<transport::Transport>> transports;
  // After a missed deadline transfers may still be in flight inside a
  // transport (UCX can cancel neither sends nor puts nor gets, and destroying
  // its worker under them crashed): like the buffers they touch, the
  // transports are then left alive; the process exits without MPI_Finalize.
  struct KeepTransportsIfAbandoned {
    std::map<std::string, std::unique_ptr<transport::Transport>>& transports;
    const bool& abandoned;
    ~KeepTransportsIfAbandoned() {
      if (abandoned)
        for (auto& entry : transports) (void)entry.second.release();
    }
  } keepTransportsIfAbandoned{transports, abandoned_};
  Progress progress(static_cast<int>(planned.size()), rank0 && options_.progress);
  std::deque<PlannedInstance> queue(planned.begin(), planned.end());
  int total = static_cast<int>(planned.size());
  int exitCode = exit_code::ok;
  for (int index = 0; !queue.empty(); ++index) {
    PlannedInstance current = std::move(queue.front());
    queue.pop_front();
    progress.starting(index, current.instance.caseId + " [" + current.instance.condition + ", " + current.plan.pass + "]");
    if (survivors_ || abandoned_) {
      // The cluster that lost a rank is not the one the rest of the matrix was for.
      writeSkipped(index, current, recorder,
                   survivors_ ? "skipped: ranks were lost in an earlier fault drill"
                              : "skipped: an earlier test missed its deadline and its transfers may still be in flight");
      if (rank0) results_.push_back(skippedResult(index, current));
      continue;
    }
    const std::string transportName =
        registry_.kind(current.instance.spec->kind).usesTransport() ? current.instance.spec->transport : "mpi";
    auto& transport = transports[transportName];
    if (!transport) transport = transport::openTransport(transportName, world_, identity_.localRank, setupDeadline());
    std::vector<suite::RankPair> worst;
    auto result = runInstance(index, current, file, recorder, *transport, worst);
    if (leaveRun_) return exit_code::ok;
    if (result.status != "passed" && result.status != "skipped") exitCode = exit_code::checkFailed;
    if (!worst.empty()) {
      queue.push_front(retestOf(current, worst, index));
      progress.setTotal(++total);
    }
    if (rank0) results_.push_back(std::move(result));
  }
  for (const auto& [name, t] : transports) {
    output::Attributes facts;
    for (const auto& [key, value] : t->describe()) facts.emplace_back(key, value);
    recorder.transport(name, facts);
  }
  return exitCode;
}

int Runner::finish(output::ResultFile& file, output::Recorder& recorder, const FabricVerdict& fabric, int exitCode) {
  if (fabric.manifestFailed) exitCode = exit_code::checkFailed;
  recorder.attributes("/", {{"finished_utc", runtime::utcTimestamp(runtime::realtimeNow())},
                            {"complete", std::int64_t{1}},
                            {"exit_code", std::int64_t{exitCode}}});
  file.flush();
  if (world_.rank() == 0) {
    printSummaryTable(stdout, results_);
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
