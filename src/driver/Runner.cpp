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
#include <span>
#include <thread>

#include "conditions/NeighbourLoad.hpp"
#include "inventory/HostInventory.hpp"
#include "driver/CounterSummary.hpp"
#include "driver/Progress.hpp"
#include "driver/ScopedStatistics.hpp"
#include "driver/SummaryTable.hpp"
#include "fabscope/BuildConfig.hpp"
#include "runtime/Timestamp.hpp"
#include "scenario/Units.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::driver {
namespace {

constexpr int formatVersion = 1;
// Extra time the control plane grants after a test's own deadline before a
// silent rank is declared lost.
constexpr double controlGraceSeconds = 30;
// A loss round: how long rank 0 waits for the ranks it calls to answer, and
// for those that answered to print its conclusion.
constexpr double lossAnswerSeconds = 5;
constexpr double lossAckSeconds = 2;
// How long a rank that reported a loss waits to be ended by rank 0 before it
// ends the job itself.
constexpr double lossEndSeconds = 10;
// After this many instances missed their deadline the run stops recovering
// (each leaves a data path and its buffers alive) and skips the rest.
constexpr int maxRecoveries = 3;

enum StatusCode : std::int64_t { passed = 0, failed = 1, timeout = 2, errored = 3 };

const char* statusName(std::int64_t code) {
  switch (code) {
    case passed: return "passed";
    case failed: return "failed";
    case timeout: return "timeout";
    default: return "error";
  }
}

std::string groupPathOf(int index) {
  char name[32];
  std::snprintf(name, sizeof name, "/tests/%04d", index);
  return name;
}

std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

// FNV-1a: the same value on every rank and every build, unlike std::hash.
std::uint64_t stableHash(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

struct PairKey {
  int a, b;
  bool operator<(const PairKey& o) const { return a != o.a ? a < o.a : b < o.b; }
};

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

void Runner::writeRunHeader(output::ResultFile& file) {
  const auto now = runtime::realtimeNow();
  const auto mono = runtime::monotonicNow();
  output::Attributes attrs = {
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
      {"overrides", [&] {
         std::string s;
         for (const auto& o : scenario_.overrides) s += o + "\n";
         return s;
       }()},
      {"nranks", std::int64_t{world_.size()}},
      {"nhosts", std::int64_t{identity_.hostCount}},
      {"hdf5_mode", std::string(output::writeModeName(file.mode()))},
      {"epoch_offset_ns", std::int64_t{now - mono}},
      {"seed", static_cast<std::int64_t>(seed_)},
      {"launch_preset", envOr("FABSCOPE_FABRIC", "")},
      // Known at start; /validity and validity_findings are written at the end
      // (the clock finding needs the latencies).
      {"waits_yield", std::int64_t{validity_.waitsYield ? 1 : 0}},
      {"validity_findings", static_cast<std::int64_t>(validity_.findings.size())},
  };
  file.setAttributes("/", attrs, runtime::Deadline::afterSeconds(60));
}

void Runner::writeRanks(output::ResultFile& file) {
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
  file.writeTable<output::RankRecord>("/ranks", std::span(&row, 1), runtime::Deadline::afterSeconds(60));
  // Every rank's site on every rank: each rank splits its own summary by site
  // scope, rank 0 the instance's statistics, and flags groups that span sites.
  const auto control = runtime::Deadline::afterSeconds(60);
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

output::Attributes Runner::unfinishedAttributes(int index, const PlannedInstance& planned, const std::string& status,
                                                const std::string& why) const {
  const auto& spec = *planned.instance.spec;
  return {{"index", std::int64_t{index}}, {"name", spec.name}, {"kind", spec.kind},
          {"case", planned.instance.caseId}, {"condition", planned.instance.condition},
          {"transport", spec.transport}, {"memory", spec.memory}, {"bytes", planned.instance.bytes},
          {"iterations", std::int64_t{spec.iterations}}, {"pattern", planned.plan.pattern},
          {"pass", planned.plan.pass}, {"status", status}, {"error", why}};
}

void Runner::writeSkipped(int index, const PlannedInstance& planned, output::ResultFile& file, const std::string& why) {
  const auto control = runtime::Deadline::afterSeconds(60);
  const std::string group = groupPathOf(index);
  file.createGroup(group);
  file.setAttributes(group, unfinishedAttributes(index, planned, "skipped", why), control);
  file.writeTable<output::SampleRecord>(group + "/samples", {}, control);
  file.flush();
}

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

}  // namespace

void printResultLine(bool rank0, int code) {
  const char* asked = std::getenv("FABSCOPE_REPORT_EXIT");
  if (!rank0 || !asked || std::string(asked) != "1") return;
  std::printf("fabscope: result: exit code %d\n", code);
  std::fflush(stdout);
}

void Runner::endAfterLoss(output::ResultFile& file, const std::string& myError, std::vector<int> lost,
                          const RunningTest* running) {
  const int me = world_.rank();
  const auto& hosts = identity_.hostOfRank;
  const auto now = [] { return runtime::utcTimestamp(runtime::realtimeNow()); };
  std::fflush(stdout);
  runtime::LossReport mine{myError, lost, {}};
  if (running) {
    for (auto& s : running->samples) {
      s.t_post_ns = clock_.toGlobal(s.t_post_ns);
      s.t_done_ns = clock_.toGlobal(s.t_done_ns);
    }
    const auto bytes = std::as_bytes(running->samples);
    mine.samples.assign(bytes.begin(), bytes.end());
  }
  const auto* losses = options_.losses;
  if (me != 0) {
    std::string conclusion;
    const bool rank0Lost = std::find(lost.begin(), lost.end(), 0) != lost.end();
    if (losses && !rank0Lost) {
      // Rank 0 may still be inside a test of its own: it joins at its next control-plane wait.
      const double within = (running ? running->planned.instance.spec->timeoutSeconds : 0) + controlGraceSeconds +
                            lossAnswerSeconds;
      conclusion = losses->report(mine, static_cast<runtime::Nanoseconds>(within * 1e9));
    }
    std::fprintf(stderr, "fabscope: %s %s: runtime failure: %s%s%s\n", now().c_str(), rankAndHost(me, hosts).c_str(),
                 myError.empty() ? "another rank reported a loss" : myError.c_str(),
                 conclusion.empty() ? "" : "; rank 0: ", conclusion.c_str());
    if (conclusion.empty())
      std::fprintf(stderr, "fabscope: %s: %s; the result file cannot be finished\n", rankAndHost(me, hosts).c_str(),
                   rank0Lost ? "rank 0, which holds the result file, is lost" : "rank 0 did not conclude the loss round");
    std::fflush(stderr);
    if (!conclusion.empty()) {
      losses->acknowledge();
      // Rank 0 ends the job once it has recorded the loss; this is only the fallback.
      const auto wait = runtime::Deadline::afterSeconds(lossEndSeconds);
      while (!wait.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    runtime::MpiEnvironment::abortJob(exit_code::runtimeFailure);
  }

  runtime::LossOutcome outcome;
  if (losses) outcome = losses->gather(std::move(mine), static_cast<runtime::Nanoseconds>(lossAnswerSeconds * 1e9));
  else outcome = {lost, {}, {{0, std::move(mine)}}};
  std::string firstError;
  for (const auto& [rank, report] : outcome.reports)
    if (!report.error.empty()) {
      firstError = report.error;
      break;
    }
  std::string line = outcome.lost.empty() ? "a control-plane wait failed"
                                          : "lost contact with " + namesOf(outcome.lost, hosts);
  if (!outcome.silent.empty())
    line += std::string(outcome.silent.size() == outcome.lost.size() ? ": " : "; ") +
            (outcome.silent.size() == 1 ? "it" : namesOf(outcome.silent, hosts)) + " did not answer within " +
            std::to_string(static_cast<int>(lossAnswerSeconds)) + " s";
  if (!firstError.empty()) line += "; first error: " + firstError;
  std::fprintf(stderr, "fabscope: %s rank 0: runtime failure: %s\n", now().c_str(), line.c_str());
  try {
    file.continueAlone();
    const auto control = runtime::Deadline::afterSeconds(10);
    if (running) {
      std::vector<output::SampleRecord> rows;
      for (const auto& [rank, report] : outcome.reports) {
        const auto* first = reinterpret_cast<const output::SampleRecord*>(report.samples.data());
        rows.insert(rows.end(), first, first + report.samples.size() / sizeof(output::SampleRecord));
      }
      const std::string group = groupPathOf(running->index);
      file.createGroup(group);
      const std::string status = running->status == timeout ? "timeout" : "error";
      auto attrs = unfinishedAttributes(running->index, running->planned, status, line);
      attrs.emplace_back("samples_from_ranks", [&] {
        std::string list;
        for (const auto& [rank, report] : outcome.reports) list += (list.empty() ? "" : ",") + std::to_string(rank);
        return list;
      }());
      file.setAttributes(group, attrs, control);
      file.writeTable<output::SampleRecord>(group + "/samples", rows, control);
    }
    if (!std::exchange(validityRecorded_, true))
      validity::record(file, validity_, true, control);  // the start findings; no clock finding
    std::string lostList;
    for (int r : outcome.lost) lostList += (lostList.empty() ? "" : ",") + std::to_string(r);
    file.setAttributes("/",
                       {{"finished_utc", now()}, {"complete", std::int64_t{0}},
                        {"exit_code", std::int64_t{exit_code::runtimeFailure}}, {"error", line},
                        {"lost_ranks", lostList}},
                       control);
    file.flush();
    std::fprintf(stderr, "fabscope: the result file %s keeps every test finished so far%s, is marked complete=0 "
                 "and exit_code=3\n", options_.outputPath.c_str(), running ? " and the interrupted one's samples" : "");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fabscope: rank 0: could not record the loss in %s: %s (it stays complete=0, exit_code=-1)\n",
                 options_.outputPath.c_str(), e.what());
  }
  std::fflush(stderr);
  printResultLine(true, exit_code::runtimeFailure);
  if (losses) losses->conclude(outcome, line, static_cast<runtime::Nanoseconds>(lossAckSeconds * 1e9));
  runtime::MpiEnvironment::abortJob(exit_code::runtimeFailure);
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

int Runner::run() {
  const auto setup = runtime::Deadline::afterSeconds(120);
  const bool rank0 = world_.rank() == 0;
  // First: the wait policy depends on it, and every later wait (clock sync
  // included) must already yield where ranks outnumber CPUs.
  validity_ = validity::judgeAtStart(world_, setup);
  identity_ = runtime::discoverRankIdentity(world_, setup);
  clock_ = runtime::ClockSync::measure(world_, 50, setup);

  std::uint64_t seed = scenario_.seed;
  if (!scenario_.seedGiven && rank0) seed = std::random_device{}() & 0x7fffffffffffull;
  world_.broadcast(&seed, sizeof seed, 0, setup);
  seed_ = seed;
  char id[40];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(std::random_device{}()) << 32 |
                                               static_cast<unsigned long long>(runtime::realtimeNow() & 0xffffffff));
  runId_ = world_.broadcastString(id, 0, setup);

  auto planned = planMatrix(scenario_, registry_, world_.size());
  std::string hdf5Mode = scenario_.hdf5Mode;
  const bool mayLoseRanks =
      std::any_of(planned.begin(), planned.end(), [](const PlannedInstance& p) { return p.plan.mayLoseRanks; });
  if (mayLoseRanks) {
    if (hdf5Mode == "parallel")
      throw UsageError("the scenario has a fault drill, which loses ranks: it needs hdf5=serial (or auto), not parallel");
    hdf5Mode = "serial";
  }
  output::ResultFile file(options_.outputPath, hdf5Mode, world_, setup);
  if (rank0) {
    std::fprintf(stderr, "fabscope %s: scenario '%s', %d ranks on %d hosts, %zu test instances, seed %llu\n",
                 FABSCOPE_VERSION, scenario_.name.c_str(), world_.size(), identity_.hostCount, planned.size(),
                 static_cast<unsigned long long>(seed_));
    std::fprintf(stderr, "fabscope: writing %s (%s HDF5)\n", options_.outputPath.c_str(),
                 output::writeModeName(file.mode()));
    for (const auto& line : validity::describe(validity_)) std::fprintf(stderr, "fabscope: %s\n", line.c_str());
  }
  writeRunHeader(file);
  writeRanks(file);
  const auto fabric = recordFabric(file, world_, identity_, options_.fabric, setup);
  file.setAttributes("/", {{"consistency_flags", std::int64_t{fabric.consistencyFlags}},
                           {"manifest_failed", std::int64_t{fabric.manifestFailed ? 1 : 0}}}, setup);
  file.createGroup("/tests");
  file.flush();

  // One transport per name, opened when a test first needs it.
  std::map<std::string, std::unique_ptr<transport::Transport>> transports;
  // After a missed deadline transfers may still be in flight inside a
  // transport (UCX can cancel neither sends nor puts nor gets, and destroying
  // its worker under them crashed): like the buffers they touch, the
  // transports are then left alive; the process exits without MPI_Finalize.
  struct KeepTransportsIfAbandoned {
    std::map<std::string, std::unique_ptr<transport::Transport>>& transports;
    const bool& abandoned;
    std::vector<std::unique_ptr<transport::Transport>>& retired;
    ~KeepTransportsIfAbandoned() {
      if (abandoned)
        for (auto& entry : transports) (void)entry.second.release();
      for (auto& t : retired) (void)t.release();
    }
  } keepTransportsIfAbandoned{transports, abandoned_, retiredTransports_};
  Progress progress(static_cast<int>(planned.size()), rank0 && options_.progress);
  std::deque<PlannedInstance> queue(planned.begin(), planned.end());
  int exitCode = exit_code::ok;
  int index = 0;
  try {
  while (!queue.empty()) {
    PlannedInstance current = std::move(queue.front());
    queue.pop_front();
    progress.starting(index, current.instance.caseId + " [" + current.instance.condition + ", " + current.plan.pass + "]");
    std::vector<suite::RankPair> worst, controls;
    if (survivors_ || recoveries_ > maxRecoveries) {
      // The cluster that lost a rank is not the one the rest of the matrix was for.
      writeSkipped(index, current, file,
                   survivors_ ? "skipped: ranks were lost in an earlier fault drill"
                              : "not run: " + std::to_string(recoveries_) +
                                    " tests missed their deadline, more than the run recovers from (" +
                                    std::to_string(maxRecoveries) + ")");
      if (!survivors_) ++notRunAfterTimeouts_;
      if (rank0) results_.push_back(skippedResult(index, current));
      ++index;
      continue;
    }
    const std::string transportName =
        registry_.kind(current.instance.spec->kind).usesTransport() ? current.instance.spec->transport : "mpi";
    auto& transport = transports[transportName];
    if (!transport) transport = transport::openTransport(transportName, world_, identity_.localRank, runtime::Deadline::afterSeconds(120));
    auto result = runInstance(index, current, file, *transport, worst, controls);
    if (leaveRun_) return exit_code::ok;
    if (std::exchange(retireDataPath_, false)) {
      // Every rank answered, but transfers of the missed instance may still be
      // in flight (a matched rendezvous can be neither cancelled nor
      // abandoned, and UCX crashed destroying a worker under them): the next
      // instance gets a fresh data path, and the old one is kept, unused.
      ++recoveries_;
      retiredTransports_.push_back(std::move(transport));
      transports.erase(transportName);
      runCache_.retire();
    }
    if (result.status != "passed" && result.status != "skipped") exitCode = exit_code::checkFailed;
    if (!worst.empty()) {
      PlannedInstance retest = current;
      // The worst pairs and as many control pairs, alternated, one at a time.
      retest.plan.schedule = suite::retestSchedule(worst, controls);
      retest.plan.controlPairs = controls;
      retest.plan.pass = "serial-retest";
      retest.plan.retestOf = index;
      retest.plan.retestWorst = 0;
      retest.plan.maxSamplesPerRank =
          static_cast<std::int64_t>(worst.size() + controls.size()) * current.instance.spec->iterations;
      queue.push_front(std::move(retest));
      progress.setTotal(static_cast<int>(planned.size()) + 1);
      planned.emplace_back();  // keeps the total in step with the extra instance
    }
    if (rank0) results_.push_back(std::move(result));
    ++index;
  }

  bool transportsGroup = false;
  for (const auto& [name, t] : transports) {
    // Facts a transport can only tell after use (e.g. UCX's selected lanes).
    const auto facts = t->describe();
    if (facts.empty()) continue;
    if (!std::exchange(transportsGroup, true)) file.createGroup("/transports");
    output::Attributes attributes;
    for (const auto& [key, value] : facts) attributes.emplace_back(key, value);
    file.createGroup("/transports/" + name);
    file.setAttributes("/transports/" + name, attributes, runtime::Deadline::afterSeconds(60));
  }
  } catch (const runtime::PeerLost& e) {
    // No collective may run again, not even closing the file (parallel HDF5
    // closes collectively): a loss round names the lost ranks and rank 0
    // records the end alone. Every finished test is already flushed.
    endAfterLoss(file, "rank " + std::to_string(world_.rank()) + ": " + e.what(), {e.peer()}, nullptr);
  } catch (const std::exception& e) {
    if (survivors_) {
      std::fprintf(stderr, "fabscope: %s rank %d: runtime failure after a fault drill: %s\n",
                   runtime::utcTimestamp(runtime::realtimeNow()).c_str(), world_.rank(), e.what());
      std::fflush(stderr);
      runtime::MpiEnvironment::abortJob(exit_code::runtimeFailure);
    }
    endAfterLoss(file, "rank " + std::to_string(world_.rank()) + ": " + e.what(), {}, nullptr);
  }

  if (fabric.manifestFailed) exitCode = exit_code::checkFailed;
  {
    // Clock uncertainty against the smallest latency measured (one-way p50).
    double smallestLatency = 0;
    for (const auto& r : results_)
      if (r.metric == suite::Metric::latency && r.status == "passed" && std::isfinite(r.latency.p50) &&
          r.latency.p50 > 0 && (smallestLatency == 0 || r.latency.p50 < smallestLatency))
        smallestLatency = r.latency.p50;
    const auto closing = runtime::Deadline::afterSeconds(60);
    validity::judgeClocks(validity_, *comm_, clock_.mine().uncertainty, smallestLatency, closing);
    validity::record(file, validity_, rank0, closing);
    validityRecorded_ = true;
  }
  file.setAttributes("/",
                     {{"finished_utc", runtime::utcTimestamp(runtime::realtimeNow())},
                      {"complete", std::int64_t{1}},
                      {"exit_code", std::int64_t{exitCode}},
                      {"missed_deadlines", std::int64_t{recoveries_}},
                      {"not_run_after_missed_deadlines", std::int64_t{notRunAfterTimeouts_}}},
                     runtime::Deadline::afterSeconds(60));
  file.flush();
  if (rank0) {
    // What makes the numbers doubtful comes before the numbers.
    for (const auto& line : validity::describe(validity_)) std::printf("%s\n", line.c_str());
    if (!validity_.findings.empty()) std::printf("\n");
    printSummaryTable(stdout, results_);
    if (recoveries_ > 0)
      std::printf("\n%d test(s) missed their deadline; each following test ran on a fresh data path%s\n", recoveries_,
                  notRunAfterTimeouts_ > 0
                      ? (", until the limit of " + std::to_string(maxRecoveries) + ": " +
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

bool Runner::survivorsDone(const runtime::Deadline& deadline) const {
  if (!survivors_) return true;
  try {
    survivors_->barrier(deadline);
    return true;
  } catch (const DeadlineExceeded&) {
    return false;
  }
}

InstanceResult Runner::runInstance(int index, const PlannedInstance& planned, output::ResultFile& file,
                                   transport::Transport& transport, std::vector<suite::RankPair>& worstPairs,
                                   std::vector<suite::RankPair>& controlPairs) {
  const auto& instance = planned.instance;
  const auto& plan = planned.plan;
  const auto& spec = *instance.spec;
  const bool rank0 = world_.rank() == 0;
  const auto control = runtime::Deadline::afterSeconds(spec.timeoutSeconds + controlGraceSeconds);

  const auto& kind = registry_.kind(spec.kind);
  const bool congested = instance.condition != "quiet";
  // Same canaries for every condition of a case: the seed depends on the test, not the condition.
  const auto roles = suite::assignRoles(suite::roleSpecOf(spec), identity_.hostOfRank, kind.rules().minRanks,
                                        suite::hasCongestedCondition(spec), seed_ ^ stableHash(spec.name));
  const int me = world_.rank();
  const bool canary = roles.isCanary(me);
  const bool congestor = roles.isCongestor(me);
  const int rolePosition = static_cast<int>(
      canary ? std::find(roles.canaries.begin(), roles.canaries.end(), me) - roles.canaries.begin() : me);

  suite::SampleBuffer samples(canary ? static_cast<std::size_t>(plan.maxSamplesPerRank) : 0);
  CounterWindow counters(identity_.localRank == 0);
  // Comm split has no non-blocking form; split() first bounds a barrier by `control`.
  const runtime::Communicator measuring = comm_->split(canary ? 0 : congestor ? 1 : 2, rolePosition, control);
  const auto runDeadline = runtime::Deadline::afterSeconds(spec.timeoutSeconds);
  std::optional<conditions::GatedLoad> load;
  conditions::LoadGraph loadGraph;
  if (congested) {
    loadGraph = conditions::planLoad(instance.condition, roles, identity_.hostOfRank);
    load.emplace(*comm_, runDeadline, identity_.localRank);
  }
  const auto tStart = clock_.toGlobal(runtime::monotonicNow());
  suite::RunContext ctx{world_, measuring, roles.canaries, transport, identity_, clock_, instance, plan, samples,
                        buffers_, runCache_, runDeadline, seed_ + static_cast<std::uint64_t>(index), false, {}};
  std::int64_t status = passed;
  std::string errorText;
  std::vector<int> lostPeers;  // known gone: the run ends now, not at a deadline
  bool lossRound = false;      // another rank started a loss round
  conditions::LoadReport loadReport;
  try {
    if (canary) {
      if (load) load->canaryBeforeMeasuring();
      try {
        kind.run(ctx);
      } catch (...) {
        // Release the congestors even when the measurement failed.
        if (load) load->canaryAfterMeasuring();
        throw;
      }
      if (load) load->canaryAfterMeasuring();
    } else if (load) {
      if (congestor) loadReport = load->congest(instance.condition, loadGraph, spec.loadBytes);
      else load->idle();
    }
  } catch (const DeadlineExceeded& e) {
    status = timeout;
    errorText = "rank " + std::to_string(world_.rank()) + " (" + identity_.host + "): " + e.what();
  } catch (const runtime::PeerLost& e) {
    status = errored;
    errorText = "rank " + std::to_string(world_.rank()) + " (" + identity_.host + "): " + e.what();
    lostPeers.push_back(e.peer());
  } catch (const runtime::LossRoundStarted& e) {
    status = errored;
    errorText = "rank " + std::to_string(world_.rank()) + " (" + identity_.host + "): " + e.what();
    lossRound = true;
  } catch (const RuntimeFailure& e) {
    status = errored;
    errorText = "rank " + std::to_string(world_.rank()) + " (" + identity_.host + "): " + e.what();
  }
  if (status == passed && ctx.dataCheckFailed) {
    status = failed;
    errorText = ctx.dataCheckMessage;
  }
  if (samples.overflowed() && status == passed) {
    status = errored;
    errorText = "rank " + std::to_string(world_.rank()) + ": more samples than planned (a bug in the test kind)";
  }
  const auto tEnd = clock_.toGlobal(runtime::monotonicNow());
  counters.finish();
  if (ctx.leaveRun) {
    leaveRun_ = true;
    return {};
  }
  if (ctx.survivors) {
    survivors_ = std::move(ctx.survivors);
    comm_ = &*survivors_;
    file.switchCommunicator(*comm_);
  }

  const RunningTest running{index, planned, samples.used(), status};
  if (!lostPeers.empty() || lossRound) endAfterLoss(file, errorText, lostPeers, &running);
  // Agreement: if a rank cannot answer now, it is lost and the run cannot go on.
  std::int64_t agreed = 0;
  std::vector<std::string> errors;
  try {
    agreed = comm_->allreduceMax(status, control);
    errors = comm_->gatherStrings(errorText, 0, control);
  } catch (const RuntimeFailure& e) {
    if (survivors_) throw;  // a fault drill's survivors: the drill's own ending applies
    endAfterLoss(file,
                 "waiting for the other ranks after test " + std::to_string(index) + " (" + instance.caseId +
                     "): " + e.what() + (errorText.empty() ? "" : "; this rank saw: " + errorText),
                 {}, &running);
  }
  // Transfers of a test that missed its deadline may still be in flight (a
  // matched rendezvous can be neither cancelled nor abandoned), so no later
  // test may share the data path, the buffers or the kind's state with them.
  if (agreed >= timeout) {
    abandoned_ = true;
    retireDataPath_ = true;
    buffers_.abandon();
    if (ctx.kindState) abandonedKindStates_.push_back(ctx.kindState);
  } else {
    buffers_.release();
  }
  // What the neighbour traffic achieved, so a weak load is not mistaken for a robust fabric.
  double loadGbps = 0;
  if (congested) {
    const auto loadBytes = comm_->allreduceSum(loadReport.bytesSent, control);
    const auto loadNs = comm_->allreduceMax(static_cast<std::int64_t>(loadReport.seconds * 1e9), control);
    loadGbps = loadNs > 0 ? static_cast<double>(loadBytes) / static_cast<double>(loadNs) : 0;
  }
  std::string firstError;
  for (const auto& e : errors)
    if (!e.empty()) {
      firstError = e;
      break;
    }

  for (auto& s : samples.used()) {
    s.t_post_ns = clock_.toGlobal(s.t_post_ns);
    s.t_done_ns = clock_.toGlobal(s.t_done_ns);
  }

  // This rank's own statistics, one row per site scope its samples fall in.
  const double divisor = plan.sampleDivisor;
  stats::SiteScopes myScopes(siteOfRank_, roles.canaries);
  const auto mine = headlineSamples(samples.used(), divisor);
  const auto mySummary = rankSummaryRows(world_.rank(), mine, myScopes, ctx.dataCheckFailed);

  // Rank 0 sees every sample for the run-wide numbers, and every counter row
  // to name the known counters that moved in the closing summary.
  std::vector<int> counts;
  const auto all = comm_->gatherBytes(std::as_bytes(samples.used()), 0, counts, control);
  const auto counterRows = counters.rows(world_.rank());
  const auto allCounters = comm_->gatherBytes(std::as_bytes(std::span(counterRows)), 0, counts, control);
  InstanceResult result;
  result.index = index;
  result.name = spec.name;
  result.kind = spec.kind;
  result.caseId = instance.caseId;
  result.condition = instance.condition;
  result.pattern = plan.pattern;
  result.pass = plan.pass;
  result.status = statusName(agreed);
  result.error = firstError;
  result.bytes = instance.bytes;
  result.metric = plan.metric;

  output::Attributes attrs = {
      {"index", std::int64_t{index}},
      {"name", spec.name},
      {"kind", spec.kind},
      {"case", instance.caseId},
      {"condition", instance.condition},
      {"transport", spec.transport},
      {"memory", spec.memory},
      {"pattern", plan.pattern},
      {"pass", plan.pass},
      {"description", plan.description},
      {"bytes", instance.bytes},
      {"window", std::int64_t{plan.window}},
      {"iterations", std::int64_t{spec.iterations}},
      {"warmup", std::int64_t{spec.warmup}},
      {"timeout_s", spec.timeoutSeconds},
      {"metric", std::string(plan.metric == suite::Metric::latency ? "latency" : "bandwidth")},
      {"sample_divisor", std::int64_t{plan.sampleDivisor}},
      {"status", result.status},
      {"error", firstError},
      {"t_start_ns", tStart},
      {"t_end_ns", tEnd},
      {"retest_of", std::int64_t{plan.retestOf}},
      {"canaries", suite::joinRanks(roles.canaries)},
      {"congestors", suite::joinRanks(roles.congestors)},
      {"placement", roles.placement},
      {"size_formula", instance.sizeFormula},
  };
  if (rank0) {
    // A group across sites measures a WAN path, not the cluster fabric: say so.
    std::set<std::string> sites;
    for (int r : roles.canaries)
      if (!siteOfRank_[static_cast<std::size_t>(r)].empty()) sites.insert(siteOfRank_[static_cast<std::size_t>(r)]);
    if (sites.size() > 1) {
      std::string list;
      for (const auto& s : sites) list += (list.empty() ? "" : ",") + s;
      attrs.emplace_back("spans_sites", list);
      result.spansSites = list;
    }
  }
  if (congested) {
    attrs.emplace_back("load", loadGraph.description);
    attrs.emplace_back("load_bytes", spec.loadBytes);
    attrs.emplace_back("load_gbps", loadGbps);
  }
  attrs.insert(attrs.end(), ctx.attributes.begin(), ctx.attributes.end());
  std::vector<double> matrix;
  std::vector<output::ScopeRecord> scopeTable;
  const int n = world_.size();
  std::vector<std::int32_t> worstFlat, controlFlat;
  if (rank0) {
    const auto* records = reinterpret_cast<const output::SampleRecord*>(all.data());
    const std::size_t count = all.size() / sizeof(output::SampleRecord);
    const auto headline = headlineSamples({records, count}, divisor);
    stats::SiteScopes scopes(siteOfRank_, roles.canaries);
    std::map<PairKey, std::vector<double>> perPair;
    std::map<PairKey, double> pairBytes;
    for (const auto& s : headline) {
      perPair[{s.rank, s.peer}].push_back(s.value);
      pairBytes[{s.rank, s.peer}] += s.bytes;
    }
    // Headline statistics: NaN when the samples fall into several site scopes
    // (/tests/NNNN/scopes has each one's numbers).
    summarizeInstance(result, headline, scopes);
    const auto& l = result.latency;
    for (auto [k, v] : {std::pair{"p50_ns", l.p50}, {"p99_ns", l.p99}, {"p999_ns", l.p999}, {"max_ns", l.max},
                        {"mean_ns", l.mean}})
      attrs.emplace_back(k, v);
    if (plan.metric == suite::Metric::bandwidth) {
      attrs.emplace_back("gbps_p50", result.bytesPerSample / l.p50);
      attrs.emplace_back("gbps_p99", result.bytesPerSample / l.p99);
      attrs.emplace_back("gbps_mean", result.gbpsMean);
    }
    if (result.labelled) attrs.emplace_back("site_scopes", scopeList(result));
    if (instance.condition != "quiet") {
      for (const auto& earlier : results_)
        if (earlier.caseId == instance.caseId && earlier.condition == "quiet" && earlier.pass == plan.pass &&
            compareWithQuiet(result, earlier)) {
          if (result.scopes.size() == 1 && earlier.scopes.size() == 1) {  // else per scope only
            attrs.emplace_back("impact_mean", result.impactMean);
            attrs.emplace_back("impact_p99", result.impactP99);
          }
          attrs.emplace_back("quiet_index", std::int64_t{earlier.index});
        }
    }
    scopeTable = scopeRows(result);
    result.counters = movedKnownCounters(
        {reinterpret_cast<const output::CounterRecord*>(allCounters.data()),
         allCounters.size() / sizeof(output::CounterRecord)},
        identity_.hostOfRank);
    if (plan.pattern == "all-pairs") {
      matrix.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), std::nan(""));
      std::vector<std::pair<double, PairKey>> ranked;
      // A pair is judged against the median pair of its own site scope: a WAN
      // pair is slow by nature and must not take every retest slot.
      std::vector<std::vector<double>> scopeMedians(scopes.scopes().size());
      std::map<PairKey, double> pairMedian;
      for (auto& [key, v] : perPair) {
        pairMedian[key] = stats::summarize(v).p50;
        scopeMedians[scopes.indexOf(key.a, key.b)].push_back(pairMedian[key]);
      }
      std::vector<double> typical;
      for (auto& m : scopeMedians) typical.push_back(stats::summarize(m).p50);
      for (const auto& [key, median] : pairMedian) {
        const double bytesPerSample = pairBytes[key] / static_cast<double>(perPair[key].size());
        const double cell = plan.metric == suite::Metric::latency ? median : bytesPerSample / median;
        matrix[static_cast<std::size_t>(key.a) * n + key.b] = cell;
        if (plan.metric == suite::Metric::latency) matrix[static_cast<std::size_t>(key.b) * n + key.a] = cell;
        ranked.push_back({median / typical[scopes.indexOf(key.a, key.b)], key});  // larger = worse, for both metrics
      }
      if (plan.retestWorst > 0 && agreed == passed) {
        std::sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
        // The retest's schedule is in group indices, like every schedule.
        auto indexOf = [&](int worldRank) {
          return static_cast<std::int32_t>(std::find(roles.canaries.begin(), roles.canaries.end(), worldRank) -
                                           roles.canaries.begin());
        };
        std::vector<suite::RankPair> rankedPairs;
        for (const auto& [badness, key] : ranked) rankedPairs.push_back({indexOf(key.a), indexOf(key.b)});
        const std::size_t retested = std::min(rankedPairs.size(), static_cast<std::size_t>(plan.retestWorst));
        for (std::size_t i = 0; i < retested; ++i) {
          worstFlat.push_back(rankedPairs[i].initiator);
          worstFlat.push_back(rankedPairs[i].responder);
        }
        // As many controls as retested pairs, from the middle of this pass (seeded).
        for (const auto& c : suite::controlPairs(rankedPairs, retested, static_cast<int>(retested),
                                                 seed_ ^ stableHash("controls") ^ static_cast<std::uint64_t>(index))) {
          controlFlat.push_back(c.initiator);
          controlFlat.push_back(c.responder);
        }
      }
    }
  }

  const std::string group = groupPathOf(index);
  file.createGroup(group);
  // `status` goes in last: a group without it was interrupted while being written.
  output::Attributes verdict;
  for (auto it = attrs.begin(); it != attrs.end();)
    if (it->first == "status" || it->first == "error") {
      verdict.push_back(*it);
      it = attrs.erase(it);
    } else {
      ++it;
    }
  file.setAttributes(group, attrs, control);
  file.writeTable<output::SampleRecord>(group + "/samples", samples.used(), control);
  file.writeTable<output::SummaryRecord>(group + "/summary", mySummary, control);
  // Only in runs with site labels: without them the instance's attributes are its one scope.
  if (myScopes.labelled())
    file.writeTable<output::ScopeRecord>(group + "/scopes", scopeTable, control);
  if (plan.pattern == "all-pairs") file.writeMatrix(group + "/pair_matrix", matrix, n, n);
  file.writeTable<output::CounterRecord>(group + "/counters", counterRows, control);
  registry_.kind(spec.kind).writeExtra(ctx, file, group, control);
  file.setAttributes(group, verdict, control);
  file.flush();

  if (plan.retestWorst > 0) {
    std::int64_t pairs = static_cast<std::int64_t>(worstFlat.size() / 2);
    comm_->broadcast(&pairs, sizeof pairs, 0, control);
    worstFlat.resize(static_cast<std::size_t>(pairs) * 2);
    if (pairs > 0)
      comm_->broadcast(worstFlat.data(), static_cast<int>(worstFlat.size() * sizeof(std::int32_t)), 0, control);
    for (std::int64_t i = 0; i < pairs; ++i)
      worstPairs.push_back({worstFlat[static_cast<std::size_t>(2 * i)], worstFlat[static_cast<std::size_t>(2 * i + 1)]});
    std::int64_t controls = static_cast<std::int64_t>(controlFlat.size() / 2);
    comm_->broadcast(&controls, sizeof controls, 0, control);
    controlFlat.resize(static_cast<std::size_t>(controls) * 2);
    if (controls > 0)
      comm_->broadcast(controlFlat.data(), static_cast<int>(controlFlat.size() * sizeof(std::int32_t)), 0, control);
    for (std::int64_t i = 0; i < controls; ++i)
      controlPairs.push_back(
          {controlFlat[static_cast<std::size_t>(2 * i)], controlFlat[static_cast<std::size_t>(2 * i + 1)]});
  }
  return result;
}

}  // namespace fabscope::driver
