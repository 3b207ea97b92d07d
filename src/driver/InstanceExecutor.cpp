// The stages of one test instance on one rank (InstanceExecutor.hpp).
#include "driver/InstanceExecutor.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "driver/BatchFigure.hpp"
#include "driver/CounterSummary.hpp"
#include "driver/InstanceAttributes.hpp"
#include "driver/Progress.hpp"
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

InstanceExecutor::InstanceExecutor(RunState& run, RankLoss& losses, int index, const PlannedInstance& planned)
    : run_(run),
      losses_(losses),
      index_(index),
      planned_(planned),
      kind_(run.registry.kind(planned.instance.spec->kind)),
      control_(
          runtime::Deadline::afterSeconds(planned.instance.spec->timeoutSeconds + run.scenario.controlGraceSeconds)) {}

InstanceResult InstanceExecutor::execute(transport::Transport& transport, output::ResultFile& file,
                                         output::Recorder& recorder) {
  assignRoles();
  runUnderCondition(transport);
  runtime::sampleHeapPeak("run");  // the test's buffers (an incast receiver's landing buffers) are still held
  if (!carryOn(file)) return {};
  agree();
  reduce();
  record(recorder);
  runtime::sampleHeapPeak("record");
  // What the instance freed (rank 0: every sample of it, gathered) goes back to
  // the system, so the next instance's peak (an incast receiver's landing
  // buffers) does not stack on this one's in memory malloc keeps for reuse.
  runtime::returnFreedMemory();
  if (agreed_ >= timeout && kindState_) run_.abandonedKindStates.push_back(std::move(kindState_));
  chooseFollowUp();
  return std::move(result_);
}

// This rank's part of the running test, for a loss round.
RankLoss::RunningTest InstanceExecutor::running() { return {index_, planned_, samples_->used(), status_}; }

// Canaries measure, congestors load, the rest idle. Same canaries for every
// condition of a case: the seed depends on the test, not the condition.
void InstanceExecutor::assignRoles() {
  const auto& spec = *planned_.instance.spec;
  roles_ = suite::assignRoles(suite::roleSpecOf(planned_.instance), run_.identity.hostOfRank, kind_.rules().minRanks,
                              suite::hasCongestedCondition(spec), run_.seed ^ stableHash(spec.name));
  const int me = run_.world.rank();
  canary_ = roles_.isCanary(me);
  congestor_ = roles_.isCongestor(me);
  const auto& canaries = roles_.canaries;
  const int rolePosition =
      static_cast<int>(canary_ ? std::find(canaries.begin(), canaries.end(), me) - canaries.begin() : me);
  samples_.emplace(canary_ ? static_cast<std::size_t>(planned_.plan.maxSamplesPerRank) : 0);
  counters_.emplace(run_.identity.localRank == 0);
  // Comm split has no non-blocking form; split() first bounds a barrier by `control`.
  measuring_.emplace(run_.comm->split(canary_ ? 0 : congestor_ ? 1 : 2, rolePosition, control_));
}

// The condition's neighbour load around the kind's run; the rank's status.
void InstanceExecutor::runUnderCondition(transport::Transport& transport) {
  const auto& instance = planned_.instance;
  const auto& spec = *instance.spec;
  const bool congested = instance.condition != "quiet";
  const auto runDeadline = runtime::Deadline::afterSeconds(spec.timeoutSeconds);
  std::optional<conditions::GatedLoad> load;
  if (congested) {
    loadGraph_ = conditions::planLoad(instance.condition, roles_, run_.identity.hostOfRank);
    load.emplace(*run_.comm, runDeadline, run_.identity.localRank);
  }
  // Rank 0 says how a long test is getting on, from a thread of its own.
  std::optional<ProgressWatch> watch;
  if (run_.progress && run_.progress->enabled())
    watch.emplace(run_.progress->heading(), *samples_, spec.timeoutSeconds);
  tStart_ = run_.clock.toGlobal(runtime::monotonicNow());
  const auto rankSaid = [&](const std::exception& e) {
    return "rank " + std::to_string(run_.world.rank()) + " (" + run_.identity.host + "): " + e.what();
  };
  try {
    if (canary_) {
      if (load) load->canaryBeforeMeasuring();
      try {
        runKind(transport);
      } catch (...) {
        // Release the congestors even when the measurement failed.
        if (load) load->canaryAfterMeasuring();
        throw;
      }
      if (load) load->canaryAfterMeasuring();
    } else if (load) {
      if (congestor_)
        loadReport_ = load->congest(instance.condition, loadGraph_, spec.loadBytes);
      else
        load->idle();
    }
  } catch (const DeadlineExceeded& e) {
    status_ = timeout;
    errorText_ = rankSaid(e);
  } catch (const runtime::PeerLost& e) {
    status_ = errored;
    errorText_ = rankSaid(e);
    lostPeers_.push_back(e.peer());
  } catch (const runtime::LossRoundStarted& e) {
    status_ = errored;
    errorText_ = rankSaid(e);
    lossRound_ = true;
  } catch (const RuntimeFailure& e) {
    status_ = errored;
    errorText_ = rankSaid(e);
  }
  judgeCompletedRun();
  tEnd_ = run_.clock.toGlobal(runtime::monotonicNow());
  counters_->finish();
}

// A run that raised nothing may still have skipped, failed its checks, or
// written more samples than its plan allowed: the first of these is the rank's status.
void InstanceExecutor::judgeCompletedRun() {
  if (status_ == passed && !outcome_.skipped.empty()) {
    status_ = skipped;
    errorText_ = outcome_.skipped;
  }
  if (status_ == passed && verdict_.failed()) {
    status_ = failed;
    errorText_ = verdict_.message();
  }
  if (samples_->overflowed() && status_ == passed) {
    status_ = errored;
    errorText_ = "rank " + std::to_string(run_.world.rank()) + ": more samples than planned (a bug in the test kind)";
  }
}

void InstanceExecutor::runKind(transport::Transport& transport) {
  suite::RunContext ctx{run_.world,
                        *measuring_,
                        roles_.canaries,
                        transport,
                        run_.identity,
                        run_.clock,
                        planned_.instance,
                        planned_.plan,
                        *samples_,
                        run_.buffers,
                        run_.runCache,
                        verdict_,
                        kindState_,
                        runtime::Deadline::afterSeconds(planned_.instance.spec->timeoutSeconds),
                        run_.seed + static_cast<std::uint64_t>(index_),
                        run_.seed ^ stableHash(planned_.instance.spec->name) ^
                            (static_cast<std::uint64_t>(planned_.instance.bytes) * 0x9e3779b97f4a7c15ULL),
                        run_.options.selfTest};
  transport.startTest(ctx.deadline);
  outcome_ = kind_.run(ctx);
}

// A rank that left on purpose stops here; after a fault drill's lost ranks
// the run (and the file) goes on with the survivors; after a rank lost
// otherwise the run ends (endAfterLoss).
bool InstanceExecutor::carryOn(output::ResultFile& file) {
  if (outcome_.leaveRun) {
    run_.leaveRun = true;
    return false;
  }
  if (outcome_.survivors) {
    run_.survivors = std::move(outcome_.survivors);
    run_.comm = &*run_.survivors;
    file.switchCommunicator(*run_.comm);
  }
  if (!lostPeers_.empty() || lossRound_) {
    const auto test = running();
    losses_.endAfterLoss(errorText_, lostPeers_, &test);
  }
  return true;
}

// Agreement: if a rank cannot answer now, it is lost and the run cannot go on.
void InstanceExecutor::agree() {
  std::vector<std::string> errors;
  try {
    agreed_ = run_.comm->allreduceMax(status_, control_);
    errors = run_.comm->gatherStrings(errorText_, 0, control_);
  } catch (const RuntimeFailure& e) {
    if (run_.survivors) throw;  // a fault drill's survivors: the drill's own ending applies
    const auto test = running();
    losses_.endAfterLoss("waiting for the other ranks after test " + std::to_string(index_) + " (" +
                             planned_.instance.caseId + "): " + e.what() +
                             (errorText_.empty() ? "" : "; this rank saw: " + errorText_),
                         {}, &test);
  }
  // Transfers of a test that missed its deadline may still be in flight (a
  // matched rendezvous can be neither cancelled nor abandoned), so no later
  // test may share the data path, the buffers or the kind's state with them.
  if (agreed_ >= timeout) {
    run_.abandoned = true;
    run_.buffers.abandon();  // the kind's state is kept too, once recorded (execute)
  } else {
    run_.buffers.release();
  }
  // What the neighbour traffic achieved, so a weak load is not mistaken for a robust fabric.
  if (planned_.instance.condition != "quiet") {
    const auto loadBytes = run_.comm->allreduceSum(loadReport_.bytesSent, control_);
    const auto loadNs = run_.comm->allreduceMax(static_cast<std::int64_t>(loadReport_.seconds * 1e9), control_);
    loadGbps_ = loadNs > 0 ? static_cast<double>(loadBytes) / static_cast<double>(loadNs) : 0;
  }
  for (const auto& e : errors)
    if (!e.empty()) {
      firstError_ = e;
      break;
    }
}

// Samples onto the global clock, this rank's summary rows, and on rank 0 the
// instance's statistics from every rank's samples and counters.
void InstanceExecutor::reduce() {
  suite::stopIfAsked(run_.options.selfTest, run_.world.rank(), suite::SelfTestHooks::StopPoint::afterTest);
  for (auto& s : samples_->used()) {
    s.t_post_ns = run_.clock.toGlobal(s.t_post_ns);
    s.t_done_ns = run_.clock.toGlobal(s.t_done_ns);
  }
  stats::SiteScopes myScopes(run_.siteOfRank, roles_.canaries);
  const auto mine = headlineSamples(samples_->used(), planned_.plan.sampleDivisor);
  mySummary_ = rankSummaryRows(run_.world.rank(), mine, myScopes, verdict_.failed());
  labelled_ = myScopes.labelled();
  // Rank 0 sees every sample for the run-wide numbers, and every counter row
  // to name the known counters that moved in the closing summary.
  std::vector<int> counts;
  const auto all = run_.comm->gatherBytes(std::as_bytes(samples_->used()), 0, counts, control_);
  counterRows_ = counters_->rows(run_.world.rank());
  const auto allCounters = run_.comm->gatherBytes(std::as_bytes(std::span(counterRows_)), 0, counts, control_);
  result_ = coreInstanceResult(index_, planned_);
  result_.status = statusName(agreed_);
  result_.error = firstError_;
  result_.metric = planned_.plan.metric;
  attributes_ = finishedAttributes(index_, planned_, tStart_, tEnd_, roles_);
  if (run_.world.rank() == 0) reduceOnRank0(all, allCounters);
  runtime::sampleHeapPeak("reduce");  // rank 0 holds every sample of the instance here
}

void InstanceExecutor::reduceOnRank0(std::span<const std::byte> allSamples, std::span<const std::byte> allCounters) {
  const auto& instance = planned_.instance;
  const auto& plan = planned_.plan;
  auto& result = result_;
  auto& attrs = attributes_;
  // A group across sites measures a WAN path, not the cluster fabric: say so.
  std::set<std::string> sites;
  for (int r : roles_.canaries)
    if (!run_.siteOfRank[static_cast<std::size_t>(r)].empty())
      sites.insert(run_.siteOfRank[static_cast<std::size_t>(r)]);
  if (sites.size() > 1) {
    std::string list;
    for (const auto& s : sites) list += (list.empty() ? "" : ",") + s;
    attrs.emplace_back("spans_sites", list);
    result.spansSites = list;
  }
  if (instance.condition != "quiet") {
    attrs.emplace_back("load", loadGraph_.description);
    attrs.emplace_back("load_bytes", instance.spec->loadBytes);
    attrs.emplace_back("load_gbps", loadGbps_);
  }
  attrs.insert(attrs.end(), outcome_.attributes.begin(), outcome_.attributes.end());
  const auto* records = reinterpret_cast<const output::SampleRecord*>(allSamples.data());
  const auto headline =
      headlineSamples({records, allSamples.size() / sizeof(output::SampleRecord)}, plan.sampleDivisor);
  stats::SiteScopes scopes(run_.siteOfRank, roles_.canaries);
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
  if (plan.batchClockReads > 0) recordBatchFigure({records, allSamples.size() / sizeof(output::SampleRecord)});
  if (result.labelled) attrs.emplace_back("site_scopes", scopeList(result));
  if (instance.condition != "quiet")
    for (const auto& earlier : run_.results)
      if (earlier.caseId == instance.caseId && earlier.replicate == instance.replicate &&
          earlier.condition == "quiet" && earlier.pass == plan.pass && compareWithQuiet(result, earlier)) {
        if (result.scopes.size() == 1 && earlier.scopes.size() == 1) {  // else per scope only
          attrs.emplace_back("impact_mean", result.impactMean);
          attrs.emplace_back("impact_p99", result.impactP99);
        }
        attrs.emplace_back("quiet_index", std::int64_t{earlier.index});
      }
  scopeTable_ = scopeRows(result);
  result.counters = movedKnownCounters({reinterpret_cast<const output::CounterRecord*>(allCounters.data()),
                                        allCounters.size() / sizeof(output::CounterRecord)},
                                       run_.identity.hostOfRank);
  if (plan.part->pairMatrix()) pairMatrix(headline, scopes);
}

// A point-to-point test's batch figure (driver/BatchFigure.hpp), beside its per-sample statistics.
void InstanceExecutor::recordBatchFigure(std::span<const output::SampleRecord> samples) {
  const auto& plan = planned_.plan;
  const auto batch = batchFigure(samples, plan.sampleDivisor, plan.batchClockReads, run_.clockReadNs);
  const double nan = std::nan("");
  const bool bandwidth = plan.metric == suite::Metric::bandwidth;
  attributes_.emplace_back("batch_mean_ns", batch.iterations ? batch.meanNs : nan);
  if (bandwidth) attributes_.emplace_back("batch_gbps", batch.iterations ? batch.gbps : nan);
  attributes_.emplace_back("clock_read_ns", run_.clockReadNs);
  result_.batchMeanNs = batch.iterations ? batch.meanNs : nan;
  result_.batchGbps = batch.iterations && bandwidth ? batch.gbps : nan;
}

// The pair matrix (PlanPart::pairMatrix: all-pairs), and the pairs ranked
// worst first for a follow-up's choice (PlanPart::chooseFollowUp: the serial
// retest): each against the median pair of its own site scope, since a WAN
// pair is slow by nature and must not take every retest slot.
void InstanceExecutor::pairMatrix(std::span<const stats::ScopedSample> headline, stats::SiteScopes& scopes) {
  const auto& plan = planned_.plan;
  const int n = run_.world.size();
  std::map<PairKey, std::vector<double>> perPair;
  std::map<PairKey, double> pairBytes;
  for (const auto& s : headline) {
    perPair[{s.rank, s.peer}].push_back(s.value);
    pairBytes[{s.rank, s.peer}] += s.bytes;
  }
  pairMatrix_.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), std::nan(""));
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
    pairMatrix_[static_cast<std::size_t>(key.a) * n + key.b] = cell;
    if (plan.metric == suite::Metric::latency) pairMatrix_[static_cast<std::size_t>(key.b) * n + key.a] = cell;
    ranked.push_back({median / typical[scopes.indexOf(key.a, key.b)], key});  // larger = worse, for both metrics
  }
  if (!plan.part->followedUp() || agreed_ != passed) return;
  std::sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  // In group indices, like every schedule.
  const auto& canaries = roles_.canaries;
  auto indexOf = [&](int worldRank) {
    return static_cast<std::int32_t>(std::find(canaries.begin(), canaries.end(), worldRank) - canaries.begin());
  };
  std::vector<std::pair<std::int32_t, std::int32_t>> worstFirst;
  for (const auto& [badness, key] : ranked) worstFirst.push_back({indexOf(key.a), indexOf(key.b)});
  followUp_ =
      plan.part->chooseFollowUp(worstFirst, run_.seed ^ stableHash("controls") ^ static_cast<std::uint64_t>(index_));
}

void InstanceExecutor::record(output::Recorder& recorder) {
  output::InstanceRecord r;
  r.group = output::instanceGroupPath(index_);
  r.attributes = std::move(attributes_);
  // `status` goes in last: a group without it was interrupted while being written.
  r.verdict = {{"status", result_.status}, {"error", firstError_}};
  r.samples = samples_->used();
  r.summary = mySummary_;
  // Only in runs with site labels: without them the instance's attributes are its one scope.
  r.withScopes = labelled_;
  r.scopes = scopeTable_;
  r.withPairMatrix = planned_.plan.part->pairMatrix();
  r.pairMatrix = pairMatrix_;
  r.ranks = static_cast<std::size_t>(run_.world.size());
  r.counters = counterRows_;
  r.declaredTables = kind_.tables();
  r.tables = std::move(outcome_.tables);
  if (kindState_)
    for (auto& t : kindState_->tablesSoFar()) r.tables.push_back(std::move(t));
  const auto writeStart = runtime::monotonicNow();
  recorder.instance(r, control_);
  runtime::addWriteNanoseconds(runtime::monotonicNow() - writeStart);
}

// Rank 0's choice for the instance's follow-up, sent to every rank (empty
// unless the plan has one).
void InstanceExecutor::chooseFollowUp() {
  if (!planned_.plan.part->followedUp()) {
    followUp_.clear();
    return;
  }
  std::int64_t count = static_cast<std::int64_t>(followUp_.size());
  run_.comm->broadcast(&count, sizeof count, 0, control_);
  followUp_.resize(static_cast<std::size_t>(count));
  if (count > 0)
    run_.comm->broadcast(followUp_.data(), static_cast<int>(followUp_.size() * sizeof(std::int32_t)), 0, control_);
}

}  // namespace fabscope::driver
