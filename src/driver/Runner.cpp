#include "driver/Runner.hpp"
#include "runtime/MemoryUse.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <utility>
#include <map>
#include <numeric>
#include <optional>
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
#include "runtime/Deadlines.hpp"
#include "runtime/EveryRanksLine.hpp"
#include "runtime/WatchdogRanks.hpp"
#include "runtime/Timestamp.hpp"
#include "scenario/Units.hpp"
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
runtime::Deadline fileStep(const scenario::Scenario& scenario) {
  return runtime::Deadline::afterSeconds(scenario.controlTimeoutSeconds > 0 ? scenario.controlTimeoutSeconds
                                                                            : runtime::deadlines::fileStepSeconds);
}

// The retest stage's instance: the worst pairs of `measured` and as many
// control pairs, alternated, one at a time (control samples: flag bit 10).
PlannedInstance retestOf(const PlannedInstance& measured, const RetestChoice& choice, int index) {
  PlannedInstance retest = measured;
  retest.plan.rounds =
      suite::PairRounds::explicitRounds(suite::retestSchedule(choice.worst, choice.controls), measured.plan.rounds.sharedLayout());
  retest.plan.controlPairs = choice.controls;
  retest.plan.pass = "serial-retest";
  retest.plan.retestOf = index;
  retest.plan.retestWorst = 0;
  retest.plan.maxSamplesPerRank = static_cast<std::int64_t>(choice.worst.size() + choice.controls.size()) *
                                  measured.instance.spec->iterations;
  return retest;
}

std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

}  // namespace

std::string retestsAmong(const std::vector<PlannedInstance>& planned) {
  const auto retests = std::count_if(planned.begin(), planned.end(),
                                     [](const PlannedInstance& p) { return p.plan.pass == "serial-retest"; });
  return retests == 0 ? "" : " (" + std::to_string(retests) + " of them serial retests)";
}

std::int64_t memoryPerRank(const suite::InstancePlan& plan) {
  return plan.maxSamplesPerRank * static_cast<std::int64_t>(sizeof(output::SampleRecord)) + plan.bufferBytesPerRank;
}

namespace {

// A congested condition's neighbour traffic needs congestors besides the
// measuring ranks; too few is the scenario's fault (exit 2 before anything
// runs), not a runtime failure in the middle of the run.
void checkCongestors(const scenario::TestInstance& instance, const suite::Kind& kind, int worldSize) {
  const int needed = conditions::minCongestors(instance.condition);
  if (needed == 0) return;
  const auto& spec = *instance.spec;
  const int used = spec.ranks > 0 ? std::min(spec.ranks, worldSize) : worldSize;
  const int canaries =
      suite::canaryCount(suite::roleSpecOf(spec), worldSize, kind.rules().minRanks, suite::hasCongestedCondition(spec));
  if (used - canaries >= needed) return;
  throw scenario::ScenarioError(
      spec.where("conditions") + ": test '" +
      spec.name + "' under condition '" + instance.condition + "' needs at least " + std::to_string(needed) +
      " congestor ranks besides its " + std::to_string(canaries) + " measuring ranks; the run gives it " +
      std::to_string(used) + " rank(s) in all (start more ranks with mpirun -np, or measure with fewer: roles: "
      "{canaries: N})");
}

// The place of `measured`'s serial retest in the plan (pass serial-retest, no
// schedule yet): the pairs to retest are known only once `measured` has run.
PlannedInstance retestSlotOf(const PlannedInstance& measured, int index) {
  PlannedInstance slot = measured;
  const std::int64_t retested = std::min<std::int64_t>(measured.plan.retestWorst, measured.plan.rounds.pairs());
  slot.plan.rounds = suite::PairRounds::explicitRounds({}, measured.plan.rounds.sharedLayout());
  slot.plan.pass = "serial-retest";
  slot.plan.retestOf = index;
  slot.plan.retestWorst = 0;
  // At most as many control pairs as retested ones (retestOf sets the exact count).
  slot.plan.maxSamplesPerRank = 2 * retested * measured.instance.spec->iterations;
  slot.plan.description = "serial retest of #" + std::to_string(index) + ": its " + std::to_string(retested) +
                          " worst pairs and as many control pairs, one pair at a time";
  return slot;
}

// The estimate of `planned` if it had `rounds` rounds.
double estimateSecondsWith(const PlannedInstance& planned, double rounds) {
  const auto& spec = *planned.instance.spec;
  const auto& plan = planned.plan;
  if (plan.pass == "serial-retest" && spec.iterations > 0)  // pairs chosen later: its sample bound says how many
    rounds = static_cast<double>(plan.maxSamplesPerRank / spec.iterations);
  rounds = std::max(rounds, 1.0);
  const double perOperation = estimate::assumedLatencySeconds +
                              static_cast<double>(planned.instance.bytes) * std::max(plan.window, 1) /
                                  estimate::assumedBytesPerSecond;
  return rounds * (spec.warmup + spec.iterations) * perOperation + rounds * estimate::assumedRoundCostSeconds;
}

}  // namespace

double estimateSeconds(const PlannedInstance& planned) {
  return estimateSecondsWith(planned, static_cast<double>(planned.plan.rounds.rounds()));
}

std::string formatEstimate(double seconds) {
  char text[32];
  if (seconds >= 3600)
    std::snprintf(text, sizeof text, "%dh%02dm", static_cast<int>(seconds / 3600), static_cast<int>(seconds / 60) % 60);
  else if (seconds >= 60)
    std::snprintf(text, sizeof text, "%dm%02ds", static_cast<int>(seconds / 60), static_cast<int>(seconds) % 60);
  else
    std::snprintf(text, sizeof text, "%.3gs", seconds);
  return text;
}

namespace {

// An instance the budget may thin: a parallel pass with more than one round.
bool thinnable(const PlannedInstance& p) { return p.plan.pass == "parallel" && p.plan.rounds.rounds() > 1; }

// The cheapest the instances in `members` can be: one round for the thinnable.
double leastSeconds(const PlannedInstance& p) {
  return thinnable(p) ? estimateSecondsWith(p, 1) : estimateSeconds(p);
}

// A budget that covers `seconds`, in a unit the scenario reader takes.
std::string budgetSuggestion(double seconds) {
  if (seconds < 60) return std::to_string(static_cast<long long>(std::ceil(seconds * 1e3))) + "ms";
  if (seconds < 3600) return std::to_string(static_cast<long long>(std::ceil(seconds / 60))) + "m";
  return std::to_string(static_cast<long long>(std::ceil(seconds / 3600))) + "h";
}

// Keeps the same share of the thinnable instances' extra rounds (beyond their
// first) so that `members` fit in `budget` seconds; ScenarioError at `where`
// when even one round each does not fit.
void fitBudget(std::vector<PlannedInstance>& planned, const std::vector<std::size_t>& members, double budget,
               const std::string& where, const std::string& what) {
  double full = 0, least = 0;
  for (auto i : members) {
    full += estimateSeconds(planned[i]);
    least += leastSeconds(planned[i]);
  }
  if (full <= budget) return;
  if (least > budget)
    throw scenario::ScenarioError(
        where + ": " + what + " needs about " + formatEstimate(full) + " (estimate), and still " +
        formatEstimate(least) + " with one round per instance: more than its budget of " + formatEstimate(budget) +
        "; what would fit: budget: " + budgetSuggestion(least * 1.1) + " or more, or fewer sizes, "
        "iterations or tests (fabscope list --ranks N shows each instance's estimate)");
  const double share = (budget - least) / (full - least);
  for (auto i : members) {
    auto& p = planned[i];
    if (!thinnable(p)) continue;
    const auto rounds = static_cast<std::size_t>(p.plan.rounds.rounds());
    const auto keep = 1 + static_cast<std::size_t>(std::floor(static_cast<double>(rounds - 1) * share));
    if (keep >= rounds) continue;
    const auto pairsBefore = p.plan.rounds.pairs();
    // A sample of round positions drawn from (rounds, keep, seed) alone: every
    // rank draws the same and generates only the kept rounds' pairs.
    p.plan.rounds.keepSample(keep, i + 1);
    const auto pairsKept = p.plan.rounds.pairs();
    p.plan.roundsLeftOut += static_cast<std::int64_t>(rounds - keep);
    p.plan.pairsLeftOut += pairsBefore - pairsKept;
    p.plan.leftOut = "budget (" + what + ", " + formatEstimate(budget) + "): kept " + std::to_string(keep) + " of " +
                     std::to_string(rounds) + " rounds, a seeded sample; left out " +
                     std::to_string(rounds - keep) + " rounds, " + std::to_string(pairsBefore - pairsKept) + " pairs";
    p.plan.description += "; " + p.plan.leftOut;
    if (p.plan.rounds.layout()) p.plan.maxSamplesPerRank = p.plan.rounds.busiestRankRounds() * p.instance.spec->iterations;
  }
}

}  // namespace

std::vector<PlannedInstance> planMatrix(const scenario::Scenario& scenario, const suite::Registry& registry,
                                        int worldSize) {
  return planMatrix(scenario, registry, suite::WorldLayout::uniform(worldSize, 1, 0, 0));
}

std::vector<PlannedInstance> planMatrix(const scenario::Scenario& scenario, const suite::Registry& registry,
                                        const suite::WorldLayout& world) {
  const int worldSize = world.size();
  std::vector<PlannedInstance> out;
  // The distinct layouts of the measuring ranks (O(N) each): instances with the
  // same measuring ranks (every size and condition of a test) share one.
  std::vector<std::shared_ptr<const suite::RankLayout>> layouts;
  for (auto& instance : scenario::expandMatrix(scenario)) {
    const auto& kind = registry.kind(instance.spec->kind);
    checkCongestors(instance, kind, worldSize);
    auto plan = kind.planOn(instance, world);
    if (const auto* layout = plan.rounds.layout()) {
      const auto same = std::find_if(layouts.begin(), layouts.end(), [&](const auto& l) { return *l == *layout; });
      if (same != layouts.end()) plan.rounds.shareLayout(*same);
      else layouts.push_back(plan.rounds.sharedLayout());
    }
    const bool retests = plan.retestWorst > 0;
    out.push_back({std::move(instance), std::move(plan)});
    // Its serial retest comes right after it, planned now so that the count
    // announced at the start is the count in the table at the end.
    if (retests) out.push_back(retestSlotOf(out.back(), static_cast<int>(out.size()) - 1));
  }
  // The tests' own budgets first, then the scenario's over what they left.
  std::map<const scenario::TestSpec*, std::vector<std::size_t>> ofTest;
  for (std::size_t i = 0; i < out.size(); ++i) ofTest[out[i].instance.spec].push_back(i);
  for (const auto& [spec, members] : ofTest)
    if (spec->budgetSeconds > 0) fitBudget(out, members, spec->budgetSeconds, spec->where("budget"), "test '" + spec->name + "'");
  if (scenario.budgetSeconds > 0) {
    std::vector<std::size_t> all(out.size());
    std::iota(all.begin(), all.end(), 0);
    fitBudget(out, all, scenario.budgetSeconds, scenario.budgetAt, "scenario '" + scenario.name + "'");
  }
  for (const auto& planned : out) {
    const auto& instance = planned.instance;
    const std::int64_t memory = memoryPerRank(planned.plan);
    if (memory > scenario.maxMemoryPerRank)
      throw scenario::ScenarioError(
          instance.spec->at + ": test '" + instance.spec->name + "' at " +
          scenario::formatSize(instance.bytes) + " needs about " + std::to_string(memory >> 20) +
          " MiB per rank for samples and buffers, more than max_memory_per_rank (" +
          std::to_string(scenario.maxMemoryPerRank >> 20) + " MiB); lower iterations, window or sizes, or raise the "
          "limit with --set max_memory_per_rank=16GiB");
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
  siteOfRank_ = runtime::everyRanksLine(world_, label.site, fileStep(scenario_));
}

void Runner::writeSkipped(int index, const PlannedInstance& planned, output::Recorder& recorder,
                          const std::string& why) {
  recorder.skipped(output::instanceGroupPath(index), unfinishedAttributes(index, planned, "skipped", why));
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

namespace {

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
  std::string line = outcome.lost.empty() ? "a control-plane wait failed"
                                          : "lost contact with " + namesOf(outcome.lost, hosts);
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
runtime::LossReport Runner::lossReportOf(const std::string& myError, std::vector<int> lost,
                                         const RunningTest* running) const {
  runtime::LossReport mine{myError, std::move(lost), {}};
  if (running) {
    for (auto& s : running->samples) {
      s.t_post_ns = clock_.toGlobal(s.t_post_ns);
      s.t_done_ns = clock_.toGlobal(s.t_done_ns);
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
double Runner::rank0ConcludesWithinSeconds(const RunningTest* running) const {
  double testTimeout = running ? running->planned.instance.spec->timeoutSeconds : 0;
  if (!running)
    for (const auto& test : scenario_.tests) testTimeout = std::max(testTimeout, test.timeoutSeconds);
  return testTimeout + scenario_.controlGraceSeconds + runtime::deadlines::lossAnswerSeconds +
         runtime::deadlines::lossRecordSeconds + runtime::deadlines::lossAckSeconds;
}

void Runner::reportLossToRank0(runtime::LossReport mine, const std::vector<int>& lost, const RunningTest* running) {
  const int me = world_.rank();
  const auto& hosts = identity_.hostOfRank;
  const auto* losses = options_.losses;
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
void Runner::recordLoss(output::Recorder& recorder, const runtime::LossOutcome& outcome, const std::string& line,
                        const RunningTest* running) {
  try {
    recorder.continueAlone();
    const auto control = runtime::Deadline::afterSeconds(runtime::deadlines::lossRecordSeconds);
    if (running) {
      const std::string status = running->status == instance_status::timeout ? "timeout" : "error";
      auto attrs = unfinishedAttributes(running->index, running->planned, status, line);
      std::vector<int> answered;
      for (const auto& [rank, report] : outcome.reports) answered.push_back(rank);
      attrs.emplace_back("samples_from_ranks", commaList(answered));
      recorder.interrupted(output::instanceGroupPath(running->index), attrs, samplesOf(outcome), control);
    }
    if (!std::exchange(validityRecorded_, true))  // the start findings; no clock finding
      recorder.validity(validity::rowsOf(validity_), validity::attributesOf(validity_), control);
    recorder.attributes("/",
                       {{"finished_utc", nowUtc()}, {"complete", std::int64_t{0}},
                        {"exit_code", std::int64_t{exit_code::runtimeFailure}}, {"error", line},
                        {"lost_ranks", commaList(outcome.lost)}},
                       control);
    recorder.flush();
    std::fprintf(stderr, "fabscope: the result file %s keeps every test finished so far%s, is marked complete=0 "
                 "and exit_code=3\n", options_.outputPath.c_str(), running ? " and the interrupted one's samples" : "");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fabscope: rank 0: could not record the loss in %s: %s (it stays complete=0, exit_code=-1)\n",
                 options_.outputPath.c_str(), e.what());
  }
}

void Runner::endAfterLoss(output::Recorder& recorder, const std::string& myError, std::vector<int> lost,
                          const RunningTest* running) {
  std::fflush(stdout);
  auto mine = lossReportOf(myError, lost, running);
  if (world_.rank() != 0) reportLossToRank0(std::move(mine), lost, running);
  const auto* losses = options_.losses;
  runtime::LossOutcome outcome;
  if (losses) outcome = losses->gather(std::move(mine), static_cast<runtime::Nanoseconds>(runtime::deadlines::lossAnswerSeconds * 1e9));
  else outcome = {lost, {}, {{0, std::move(mine)}}};
  const std::string line = describeLoss(outcome, identity_.hostOfRank);
  std::fprintf(stderr, "fabscope: %s rank 0: runtime failure: %s\n", nowUtc().c_str(), line.c_str());
  recordLoss(recorder, outcome, line, running);
  std::fflush(stderr);
  printResultLine(true, exit_code::runtimeFailure);
  if (losses) losses->conclude(outcome, line, static_cast<runtime::Nanoseconds>(runtime::deadlines::lossAckSeconds * 1e9));
  runtime::MpiEnvironment::abortJob(exit_code::runtimeFailure);
}

output::Attributes Runner::unfinishedAttributes(int index, const PlannedInstance& planned, const std::string& status,
                                                const std::string& why) const {
  const auto& spec = *planned.instance.spec;
  output::Attributes attrs{{"index", std::int64_t{index}}, {"name", spec.name}, {"kind", spec.kind},
          {"case", planned.instance.caseId}, {"condition", planned.instance.condition},
          {"transport", spec.transport}, {"memory", spec.memory}, {"bytes", planned.instance.bytes},
          {"iterations", std::int64_t{spec.iterations}}, {"pattern", planned.plan.pattern},
          {"pass", planned.plan.pass}, {"status", status}, {"error", why}};
  if (planned.plan.retestOf >= 0) attrs.emplace_back("retest_of", std::int64_t{planned.plan.retestOf});
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
  return output::ResultFile(options_.outputPath, hdf5Mode, world_, setupDeadline(scenario_));
}

int Runner::run(std::vector<PlannedInstance> planned) {
  const bool rank0 = world_.rank() == 0;
  setUp();
  runtime::sampleHeapPeak("setup");
  auto file = openFile(planned);
  file.setStepSeconds(scenario_.controlTimeoutSeconds > 0 ? scenario_.controlTimeoutSeconds
                                                          : runtime::deadlines::fileStepSeconds);
  output::Recorder recorder(file, scenario_.controlTimeoutSeconds > 0 ? scenario_.controlTimeoutSeconds
                                                                      : runtime::deadlines::fileStepSeconds);
  if (rank0) {
    std::fprintf(stderr, "fabscope %s: scenario '%s', %d ranks on %d hosts, %zu test instances%s, seed %llu\n",
                 FABSCOPE_VERSION, scenario_.name.c_str(), world_.size(), identity_.hostCount, planned.size(),
                 retestsAmong(planned).c_str(), static_cast<unsigned long long>(seed_));
    std::fprintf(stderr, "fabscope: writing %s (%s HDF5)\n", options_.outputPath.c_str(),
                 output::writeModeName(file.mode()));
    for (const auto& line : validity::describe(validity_)) std::fprintf(stderr, "fabscope: %s\n", line.c_str());
  }
  writeRunHeader(recorder, file);
  writeRanks(recorder);
  const auto fabric = recordFabric(file, world_, identity_, options_.fabric, setupDeadline(scenario_));
  recorder.attributes("/", {{"consistency_flags", std::int64_t{fabric.consistencyFlags}},
                            {"manifest_failed", std::int64_t{fabric.manifestFailed ? 1 : 0}}});
  recorder.testsGroup();
  runtime::sampleHeapPeak("file header");
  int exitCode = exit_code::ok;
  try {
    exitCode = runMatrix(std::move(planned), file, recorder);
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
  if (leaveRun_) return exit_code::ok;
  return finish(file, recorder, fabric, exitCode);
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

// The matrix, one instance at a time; a retest runs right after the instance it retests.
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
  // The instance a serial retest slot retests, and the pairs it chose (none
  // when it did not pass: then the slot is recorded as not run). The same on
  // every rank (the choice is rank 0's, broadcast).
  std::optional<PlannedInstance> measured;
  RetestChoice retest;
  for (int index = 0; index < static_cast<int>(planned.size()); ++index) {
    PlannedInstance current = std::move(planned[static_cast<std::size_t>(index)]);
    progress.starting(index, current.instance.caseId + " [" + current.instance.condition + ", " + current.plan.pass + "]");
    if (current.plan.pass == "serial-retest" && !stoppedRunning()) {
      if (!measured || retest.worst.empty()) {
        skipInstance(index, current, recorder,
                     "not run: the parallel pass (test " + std::to_string(current.plan.retestOf) +
                         ") did not pass, so it named no pairs to retest");
        continue;
      }
      current = retestOf(*measured, retest, current.plan.retestOf);
    }
    measured.reset();
    retest = {};
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
    auto result = runInstance(index, current, file, recorder, transport, retest);
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
    if (current.plan.retestWorst > 0) measured = std::move(current);
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
