// The stages of one test instance on one rank, in order: roles, condition +
// run, agree, reduce, record, follow-up choice. Each stage reads what the ones
// before it left in InstanceRun; only `record` writes to the result file.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "driver/BatchFigure.hpp"
#include "driver/CounterSummary.hpp"
#include "driver/Progress.hpp"
#include "driver/Runner.hpp"
#include "driver/ScopedStatistics.hpp"
#include "runtime/Deadlines.hpp"
#include "runtime/MemoryUse.hpp"
#include "runtime/Timestamp.hpp"

namespace fabscope::driver {
namespace {

using namespace instance_status;

const char* statusName(std::int64_t code) {
  switch (code) {
    case passed:
      return "passed";
    case skipped:
      return "skipped";
    case failed:
      return "failed";
    case timeout:
      return "timeout";
    default:
      return "error";
  }
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

InstanceRun::InstanceRun(int index, const PlannedInstance& planned, const suite::Kind& kind, double controlGraceSeconds)
    : index(index),
      planned(planned),
      kind(kind),
      control(runtime::Deadline::afterSeconds(planned.instance.spec->timeoutSeconds + controlGraceSeconds)) {}

InstanceResult Runner::runInstance(int index, const PlannedInstance& planned, output::ResultFile& file,
                                   output::Recorder& recorder, transport::Transport& transport,
                                   FollowUpChoice& followUp) {
  InstanceRun run(index, planned, registry_.kind(planned.instance.spec->kind), scenario_.controlGraceSeconds);
  assignInstanceRoles(run);
  runUnderCondition(run, transport);
  runtime::sampleHeapPeak("run");  // the test's buffers (an incast receiver's landing buffers) are still held
  if (!carryOn(run, file, recorder)) return {};
  agree(run, recorder);
  reduce(run);
  record(run, recorder);
  runtime::sampleHeapPeak("record");
  // What the instance freed (rank 0: every sample of it, gathered) goes back to
  // the system, so the next instance's peak (an incast receiver's landing
  // buffers) does not stack on this one's in memory malloc keeps for reuse.
  runtime::returnFreedMemory();
  if (run.agreed >= timeout && run.state) abandonedKindStates_.push_back(std::move(run.state));
  followUp = followUpChoice(run);
  return std::move(run.result);
}

// Canaries measure, congestors load, the rest idle. Same canaries for every
// condition of a case: the seed depends on the test, not the condition.
void Runner::assignInstanceRoles(InstanceRun& run) {
  const auto& spec = *run.planned.instance.spec;
  run.roles = suite::assignRoles(suite::roleSpecOf(spec), identity_.hostOfRank, run.kind.rules().minRanks,
                                 suite::hasCongestedCondition(spec), seed_ ^ stableHash(spec.name));
  const int me = world_.rank();
  run.canary = run.roles.isCanary(me);
  run.congestor = run.roles.isCongestor(me);
  const auto& canaries = run.roles.canaries;
  const int rolePosition =
      static_cast<int>(run.canary ? std::find(canaries.begin(), canaries.end(), me) - canaries.begin() : me);
  run.samples.emplace(run.canary ? static_cast<std::size_t>(run.planned.plan.maxSamplesPerRank) : 0);
  run.counters.emplace(identity_.localRank == 0);
  // Comm split has no non-blocking form; split() first bounds a barrier by `control`.
  run.measuring.emplace(comm_->split(run.canary ? 0 : run.congestor ? 1 : 2, rolePosition, run.control));
}

// The condition's neighbour load around the kind's run; the rank's status.
void Runner::runUnderCondition(InstanceRun& run, transport::Transport& transport) {
  const auto& instance = run.planned.instance;
  const auto& spec = *instance.spec;
  const bool congested = instance.condition != "quiet";
  const auto runDeadline = runtime::Deadline::afterSeconds(spec.timeoutSeconds);
  std::optional<conditions::GatedLoad> load;
  if (congested) {
    run.loadGraph = conditions::planLoad(instance.condition, run.roles, identity_.hostOfRank);
    load.emplace(*comm_, runDeadline, identity_.localRank);
  }
  // Rank 0 says how a long test is getting on, from a thread of its own.
  std::optional<ProgressWatch> watch;
  if (progress_ && progress_->enabled()) watch.emplace(progress_->heading(), *run.samples, spec.timeoutSeconds);
  run.tStart = clock_.toGlobal(runtime::monotonicNow());
  const auto rankSaid = [&](const std::exception& e) {
    return "rank " + std::to_string(world_.rank()) + " (" + identity_.host + "): " + e.what();
  };
  try {
    if (run.canary) {
      if (load) load->canaryBeforeMeasuring();
      try {
        runKind(run, transport);
      } catch (...) {
        // Release the congestors even when the measurement failed.
        if (load) load->canaryAfterMeasuring();
        throw;
      }
      if (load) load->canaryAfterMeasuring();
    } else if (load) {
      if (run.congestor)
        run.loadReport = load->congest(instance.condition, run.loadGraph, spec.loadBytes);
      else
        load->idle();
    }
  } catch (const DeadlineExceeded& e) {
    run.status = timeout;
    run.errorText = rankSaid(e);
  } catch (const runtime::PeerLost& e) {
    run.status = errored;
    run.errorText = rankSaid(e);
    run.lostPeers.push_back(e.peer());
  } catch (const runtime::LossRoundStarted& e) {
    run.status = errored;
    run.errorText = rankSaid(e);
    run.lossRound = true;
  } catch (const RuntimeFailure& e) {
    run.status = errored;
    run.errorText = rankSaid(e);
  }
  judgeCompletedRun(run);
  run.tEnd = clock_.toGlobal(runtime::monotonicNow());
  run.counters->finish();
}

// A run that raised nothing may still have skipped, failed its checks, or
// written more samples than its plan allowed: the first of these is the rank's status.
void Runner::judgeCompletedRun(InstanceRun& run) const {
  if (run.status == passed && !run.outcome.skipped.empty()) {
    run.status = skipped;
    run.errorText = run.outcome.skipped;
  }
  if (run.status == passed && run.verdict.failed()) {
    run.status = failed;
    run.errorText = run.verdict.message();
  }
  if (run.samples->overflowed() && run.status == passed) {
    run.status = errored;
    run.errorText = "rank " + std::to_string(world_.rank()) + ": more samples than planned (a bug in the test kind)";
  }
}

void Runner::runKind(InstanceRun& run, transport::Transport& transport) {
  suite::RunContext ctx{world_,
                        *run.measuring,
                        run.roles.canaries,
                        transport,
                        identity_,
                        clock_,
                        run.planned.instance,
                        run.planned.plan,
                        *run.samples,
                        buffers_,
                        runCache_,
                        run.verdict,
                        run.state,
                        runtime::Deadline::afterSeconds(run.planned.instance.spec->timeoutSeconds),
                        seed_ + static_cast<std::uint64_t>(run.index),
                        seed_ ^ stableHash(run.planned.instance.spec->name) ^
                            (static_cast<std::uint64_t>(run.planned.instance.bytes) * 0x9e3779b97f4a7c15ULL),
                        options_.selfTest};
  transport.startTest(ctx.deadline);
  run.outcome = run.kind.run(ctx);
}

// A rank that left on purpose stops here; after a fault drill's lost ranks
// the run (and the file) goes on with the survivors; after a rank lost
// otherwise the run ends (endAfterLoss).
bool Runner::carryOn(InstanceRun& run, output::ResultFile& file, output::Recorder& recorder) {
  if (run.outcome.leaveRun) {
    leaveRun_ = true;
    return false;
  }
  if (run.outcome.survivors) {
    survivors_ = std::move(run.outcome.survivors);
    comm_ = &*survivors_;
    file.switchCommunicator(*comm_);
  }
  if (!run.lostPeers.empty() || run.lossRound) {
    const RunningTest running{run.index, run.planned, run.samples->used(), run.status};
    endAfterLoss(recorder, run.errorText, run.lostPeers, &running);
  }
  return true;
}

// Agreement: if a rank cannot answer now, it is lost and the run cannot go on.
void Runner::agree(InstanceRun& run, output::Recorder& recorder) {
  std::vector<std::string> errors;
  try {
    run.agreed = comm_->allreduceMax(run.status, run.control);
    errors = comm_->gatherStrings(run.errorText, 0, run.control);
  } catch (const RuntimeFailure& e) {
    if (survivors_) throw;  // a fault drill's survivors: the drill's own ending applies
    const RunningTest running{run.index, run.planned, run.samples->used(), run.status};
    endAfterLoss(recorder,
                 "waiting for the other ranks after test " + std::to_string(run.index) + " (" +
                     run.planned.instance.caseId + "): " + e.what() +
                     (run.errorText.empty() ? "" : "; this rank saw: " + run.errorText),
                 {}, &running);
  }
  // Transfers of a test that missed its deadline may still be in flight (a
  // matched rendezvous can be neither cancelled nor abandoned), so no later
  // test may share the data path, the buffers or the kind's state with them.
  if (run.agreed >= timeout) {
    abandoned_ = true;
    retireDataPath_ = true;
    buffers_.abandon();  // the kind's state is kept too, once recorded (runInstance)
  } else {
    buffers_.release();
  }
  // What the neighbour traffic achieved, so a weak load is not mistaken for a robust fabric.
  if (run.planned.instance.condition != "quiet") {
    const auto loadBytes = comm_->allreduceSum(run.loadReport.bytesSent, run.control);
    const auto loadNs = comm_->allreduceMax(static_cast<std::int64_t>(run.loadReport.seconds * 1e9), run.control);
    run.loadGbps = loadNs > 0 ? static_cast<double>(loadBytes) / static_cast<double>(loadNs) : 0;
  }
  for (const auto& e : errors)
    if (!e.empty()) {
      run.firstError = e;
      break;
    }
}

// Samples onto the global clock, this rank's summary rows, and on rank 0 the
// instance's statistics from every rank's samples and counters.
void Runner::reduce(InstanceRun& run) {
  for (auto& s : run.samples->used()) {
    s.t_post_ns = clock_.toGlobal(s.t_post_ns);
    s.t_done_ns = clock_.toGlobal(s.t_done_ns);
  }
  stats::SiteScopes myScopes(siteOfRank_, run.roles.canaries);
  const auto mine = headlineSamples(run.samples->used(), run.planned.plan.sampleDivisor);
  run.mySummary = rankSummaryRows(world_.rank(), mine, myScopes, run.verdict.failed());
  run.labelled = myScopes.labelled();
  // Rank 0 sees every sample for the run-wide numbers, and every counter row
  // to name the known counters that moved in the closing summary.
  std::vector<int> counts;
  const auto all = comm_->gatherBytes(std::as_bytes(run.samples->used()), 0, counts, run.control);
  run.counterRows = run.counters->rows(world_.rank());
  const auto allCounters = comm_->gatherBytes(std::as_bytes(std::span(run.counterRows)), 0, counts, run.control);
  instanceAttributes(run);
  if (world_.rank() == 0) reduceOnRank0(run, all, allCounters);
  runtime::sampleHeapPeak("reduce");  // rank 0 holds every sample of the instance here
}

void Runner::instanceAttributes(InstanceRun& run) {
  const auto& instance = run.planned.instance;
  const auto& plan = run.planned.plan;
  const auto& spec = *instance.spec;
  auto& result = run.result;
  result.index = run.index;
  result.name = spec.name;
  result.kind = spec.kind;
  result.caseId = instance.caseId;
  result.condition = instance.condition;
  result.pattern = plan.pattern;
  result.pass = plan.pass;
  result.status = statusName(run.agreed);
  result.error = run.firstError;
  result.bytes = instance.bytes;
  result.metric = plan.metric;
  run.attributes = {
      {"index", std::int64_t{run.index}},
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
      {"t_start_ns", run.tStart},
      {"t_end_ns", run.tEnd},
      {"retest_of", std::int64_t{plan.followUpOf}},
      {"canaries", suite::joinRanks(run.roles.canaries)},
      {"congestors", suite::joinRanks(run.roles.congestors)},
      {"placement", run.roles.placement},
      {"size_formula", instance.sizeFormula},
  };
  plan.part->addAttributes(run.attributes);
  result.replicate = instance.replicate;
  result.repeats = spec.repeats;
  if (spec.repeats > 1) {  // only then: files without `repeats` keep their layout
    run.attributes.emplace_back("replicate", std::int64_t{instance.replicate});
    run.attributes.emplace_back("repeats", std::int64_t{spec.repeats});
  }
}

void Runner::reduceOnRank0(InstanceRun& run, std::span<const std::byte> allSamples,
                           std::span<const std::byte> allCounters) {
  const auto& instance = run.planned.instance;
  const auto& plan = run.planned.plan;
  auto& result = run.result;
  auto& attrs = run.attributes;
  // A group across sites measures a WAN path, not the cluster fabric: say so.
  std::set<std::string> sites;
  for (int r : run.roles.canaries)
    if (!siteOfRank_[static_cast<std::size_t>(r)].empty()) sites.insert(siteOfRank_[static_cast<std::size_t>(r)]);
  if (sites.size() > 1) {
    std::string list;
    for (const auto& s : sites) list += (list.empty() ? "" : ",") + s;
    attrs.emplace_back("spans_sites", list);
    result.spansSites = list;
  }
  if (instance.condition != "quiet") {
    attrs.emplace_back("load", run.loadGraph.description);
    attrs.emplace_back("load_bytes", instance.spec->loadBytes);
    attrs.emplace_back("load_gbps", run.loadGbps);
  }
  attrs.insert(attrs.end(), run.outcome.attributes.begin(), run.outcome.attributes.end());
  const auto* records = reinterpret_cast<const output::SampleRecord*>(allSamples.data());
  const auto headline =
      headlineSamples({records, allSamples.size() / sizeof(output::SampleRecord)}, plan.sampleDivisor);
  stats::SiteScopes scopes(siteOfRank_, run.roles.canaries);
  // Headline statistics: NaN when the samples fall into several site scopes
  // (/tests/NNNN/scopes has each one's numbers).
  summarizeInstance(result, headline, scopes);
  const auto& l = result.latency;
  for (auto [k, v] :
       {std::pair{"p50_ns", l.p50}, {"p99_ns", l.p99}, {"p999_ns", l.p999}, {"max_ns", l.max}, {"mean_ns", l.mean}})
    attrs.emplace_back(k, v);
  if (plan.metric == suite::Metric::bandwidth) {
    attrs.emplace_back("gbps_p50", result.bytesPerSample / l.p50);
    attrs.emplace_back("gbps_p99", result.bytesPerSample / l.p99);
    attrs.emplace_back("gbps_mean", result.gbpsMean);
  }
  if (plan.batchClockReads > 0) recordBatchFigure(run, {records, allSamples.size() / sizeof(output::SampleRecord)});
  if (result.labelled) attrs.emplace_back("site_scopes", scopeList(result));
  if (instance.condition != "quiet")
    for (const auto& earlier : results_)
      if (earlier.caseId == instance.caseId && earlier.replicate == instance.replicate &&
          earlier.condition == "quiet" && earlier.pass == plan.pass && compareWithQuiet(result, earlier)) {
        if (result.scopes.size() == 1 && earlier.scopes.size() == 1) {  // else per scope only
          attrs.emplace_back("impact_mean", result.impactMean);
          attrs.emplace_back("impact_p99", result.impactP99);
        }
        attrs.emplace_back("quiet_index", std::int64_t{earlier.index});
      }
  run.scopeTable = scopeRows(result);
  result.counters = movedKnownCounters({reinterpret_cast<const output::CounterRecord*>(allCounters.data()),
                                        allCounters.size() / sizeof(output::CounterRecord)},
                                       identity_.hostOfRank);
  if (plan.part->pairMatrix()) pairMatrix(run, headline, scopes);
}

// A point-to-point test's batch figure (driver/BatchFigure.hpp), beside its per-sample statistics.
void Runner::recordBatchFigure(InstanceRun& run, std::span<const output::SampleRecord> samples) {
  const auto& plan = run.planned.plan;
  const auto batch = batchFigure(samples, plan.sampleDivisor, plan.batchClockReads, clockReadNs_);
  const double nan = std::nan("");
  const bool bandwidth = plan.metric == suite::Metric::bandwidth;
  run.attributes.emplace_back("batch_mean_ns", batch.iterations ? batch.meanNs : nan);
  if (bandwidth) run.attributes.emplace_back("batch_gbps", batch.iterations ? batch.gbps : nan);
  run.attributes.emplace_back("clock_read_ns", clockReadNs_);
  run.result.batchMeanNs = batch.iterations ? batch.meanNs : nan;
  run.result.batchGbps = batch.iterations && bandwidth ? batch.gbps : nan;
}

// The pair matrix (PlanPart::pairMatrix: all-pairs), and the pairs ranked
// worst first for a follow-up's choice (PlanPart::chooseFollowUp: the serial
// retest): each against the median pair of its own site scope, since a WAN
// pair is slow by nature and must not take every retest slot.
void Runner::pairMatrix(InstanceRun& run, std::span<const stats::ScopedSample> headline, stats::SiteScopes& scopes) {
  const auto& plan = run.planned.plan;
  const int n = world_.size();
  std::map<PairKey, std::vector<double>> perPair;
  std::map<PairKey, double> pairBytes;
  for (const auto& s : headline) {
    perPair[{s.rank, s.peer}].push_back(s.value);
    pairBytes[{s.rank, s.peer}] += s.bytes;
  }
  run.pairMatrix.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), std::nan(""));
  std::vector<std::vector<double>> scopeMedians(scopes.scopes().size());
  std::map<PairKey, double> pairMedian;
  for (auto& [key, v] : perPair) {
    pairMedian[key] = stats::summarize(v).p50;
    scopeMedians[scopes.indexOf(key.a, key.b)].push_back(pairMedian[key]);
  }
  std::vector<double> typical;
  for (auto& m : scopeMedians) typical.push_back(stats::summarize(m).p50);
  std::vector<std::pair<double, PairKey>> ranked;
  for (const auto& [key, median] : pairMedian) {
    const double bytesPerSample = pairBytes[key] / static_cast<double>(perPair[key].size());
    const double cell = plan.metric == suite::Metric::latency ? median : bytesPerSample / median;
    run.pairMatrix[static_cast<std::size_t>(key.a) * n + key.b] = cell;
    if (plan.metric == suite::Metric::latency) run.pairMatrix[static_cast<std::size_t>(key.b) * n + key.a] = cell;
    ranked.push_back({median / typical[scopes.indexOf(key.a, key.b)], key});  // larger = worse, for both metrics
  }
  if (!plan.part->followedUp() || run.agreed != passed) return;
  std::sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  // In group indices, like every schedule.
  const auto& canaries = run.roles.canaries;
  auto indexOf = [&](int worldRank) {
    return static_cast<std::int32_t>(std::find(canaries.begin(), canaries.end(), worldRank) - canaries.begin());
  };
  std::vector<std::pair<std::int32_t, std::int32_t>> worstFirst;
  for (const auto& [badness, key] : ranked) worstFirst.push_back({indexOf(key.a), indexOf(key.b)});
  run.followUp =
      plan.part->chooseFollowUp(worstFirst, seed_ ^ stableHash("controls") ^ static_cast<std::uint64_t>(run.index));
}

void Runner::record(InstanceRun& run, output::Recorder& recorder) {
  output::InstanceRecord r;
  r.group = output::instanceGroupPath(run.index);
  r.attributes = std::move(run.attributes);
  // `status` goes in last: a group without it was interrupted while being written.
  r.verdict = {{"status", run.result.status}, {"error", run.firstError}};
  r.samples = run.samples->used();
  r.summary = run.mySummary;
  // Only in runs with site labels: without them the instance's attributes are its one scope.
  r.withScopes = run.labelled;
  r.scopes = run.scopeTable;
  r.withPairMatrix = run.planned.plan.part->pairMatrix();
  r.pairMatrix = run.pairMatrix;
  r.ranks = static_cast<std::size_t>(world_.size());
  r.counters = run.counterRows;
  r.declaredTables = run.kind.tables();
  r.tables = std::move(run.outcome.tables);
  if (run.state)
    for (auto& t : run.state->tablesSoFar()) r.tables.push_back(std::move(t));
  const auto writeStart = runtime::monotonicNow();
  recorder.instance(r, run.control);
  runtime::addWriteNanoseconds(runtime::monotonicNow() - writeStart);
}

// Rank 0's choice for the instance's follow-up, on every rank (empty unless
// the plan has one).
FollowUpChoice Runner::followUpChoice(InstanceRun& run) {
  if (!run.planned.plan.part->followedUp()) return {};
  std::int64_t count = static_cast<std::int64_t>(run.followUp.size());
  comm_->broadcast(&count, sizeof count, 0, run.control);
  run.followUp.resize(static_cast<std::size_t>(count));
  if (count > 0)
    comm_->broadcast(run.followUp.data(), static_cast<int>(run.followUp.size() * sizeof(std::int32_t)), 0, run.control);
  return run.followUp;
}

}  // namespace fabscope::driver
