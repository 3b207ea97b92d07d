// The serving mix in one instance: disjoint roles as in a
// disaggregated deployment (MixConfig.hpp) run the four traffic classes of
// LLM serving, each alone first (isolated phase: one class after the other,
// the other ranks waiting at a barrier), then all at once (together phase),
// with the same operation counts; per class and phase p50/p99/mean, and
// inflation = together / isolated.
//
// Why one thread per rank with interleaved non-blocking progress (not a thread
// per class): fabscope runs MPI at thread level SINGLE (runtime/Mpi.cpp: higher
// levels cost every message in Open MPI), so only the main thread may call MPI.
// Each rank has one role, as one GPU does in a disaggregated deployment: a
// prefill rank pushes KV, a front-end rank carries API traffic, and a decode
// rank runs its token steps (TP all-reduce, then the MoE dispatch + combine,
// one after the other as the layers of one step do) while its KV receives,
// posted up front, complete underneath; its waits poll them (MPI_Testsome), so
// they progress and are noticed between and during steps.
//
// Reused, not copied: the all-to-all is moe::MoeExchange (the alltoall kind's),
// the KV schedule and Poisson arrivals are kvpush's (KvPushSchedule), the KV
// payload is the all-to-all's self-describing copy (header + derived bytes,
// checked byte for byte), the API traffic is api::runApiGroup (the api kind's).
// Every wait is bounded by the instance's deadline.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>
#include <thread>

#include "kinds/Kind.hpp"
#include "kinds/api/ApiTraffic.hpp"
#include "kinds/collectives/CollectiveTimes.hpp"
#include "kinds/collectives/MoeExchange.hpp"
#include "kinds/kvpush/KvPushSchedule.hpp"
#include "kinds/mix/MixConfig.hpp"
#include "kinds/mix/MixRecords.hpp"
#include "runtime/NumberText.hpp"
#include "scenario/TestSource.hpp"
#include "stats/Statistics.hpp"

namespace fabscope::suite {
namespace {

using mix::MixConfig;
using mix::Role;
using mix::TrafficClass;

constexpr int kKvTag = 0x6d78;                 // "mx": KV pushes, prefill -> decode, on the group
constexpr std::int32_t kKvMagic = 0x4b56505a;  // "KVPZ" in a KV push's header
constexpr std::size_t kHeader = sizeof(moe::TokenHeader);

std::uint32_t flagsOf(TrafficClass c, bool together) {
  return ((static_cast<std::uint32_t>(c) + 1u) << mix::sample_flags::classShift) |
         (together ? mix::sample_flags::together : 0u);
}

inline float contribution(int tpRank, std::size_t i) { return static_cast<float>((tpRank + 1) * (1 + i % 7)); }

// What one rank's run of the classes found wrong: per class, the first problem
// ("" = nothing), so a failure of one class never hides another's.
struct Checks {
  std::int64_t verified[mix::kClassCount] = {};
  std::int64_t failed[mix::kClassCount] = {};
  std::string firstProblem[mix::kClassCount];
  void fail(TrafficClass c, std::string what, std::int64_t count = 1) {
    failed[static_cast<int>(c)] += count;
    if (firstProblem[static_cast<int>(c)].empty()) firstProblem[static_cast<int>(c)] = std::move(what);
  }
  std::string problems() const {
    std::string all;
    for (const auto& p : firstProblem)
      if (!p.empty()) all += (all.empty() ? "" : "; ") + p;
    return all;
  }
};

// A rank's part of the mix: its communicators, buffers and schedules, made
// once before the phases (nothing is allocated in a timed loop).
class MixRank {
 public:
  MixRank(RunContext& ctx, const MixConfig& c)
      : ctx_(ctx),
        c_(c),
        g_(ctx.group.rank()),
        me_(ctx.world.rank()),
        role_(c.roles.roleOf(ctx.group.rank())),
        roleComm_(ctx.group.split(static_cast<int>(role_), g_, ctx.deadline)),
        tpComm_(ctx.group.split(role_ == Role::decode ? c.roles.tpGroupOf(g_) : 1'000'000 + static_cast<int>(role_), g_,
                                ctx.deadline)) {
    const int P = c.roles.prefill, D = c.roles.decode;
    if (role_ == Role::decode) {
      if (c.has(TrafficClass::allreduce)) {
        count_ = static_cast<std::size_t>(c.allreduceBytes) / sizeof(float);
        send_ = reinterpret_cast<float*>(ctx.buffers.allocate(count_ * sizeof(float)));
        recv_ = reinterpret_cast<float*>(ctx.buffers.allocate(count_ * sizeof(float)));
        for (std::size_t i = 0; i < count_; ++i) send_[i] = contribution(tpComm_.rank(), i);
      }
      if (c.has(TrafficClass::alltoall))
        exchange_ = std::make_unique<moe::MoeExchange>(
            c.routing, c.dispatchTokenBytes, c.combineTokenBytes, c.decodeBatch, roleComm_, ctx.buffers, ctx.caseSeed,
            ctx.deadline, [&](const ExchangeLayout& d, const ExchangeLayout& cb, const AllToAllHostBuffers& host) {
              return makeMpiAllToAll(roleComm_, ctx.deadline, d, cb, host);
            });
      if (c.has(TrafficClass::kvpush)) {
        const int d = g_ - P;
        for (int p = 0; p < P; ++p)
          for (const int j : kvpush::requestsFromPrefill(p, d, D, c.kvRequests)) expected_.push_back({p, j});
        kvIn_ = ctx.buffers.allocate(
            std::max<std::size_t>(1, expected_.size() * static_cast<std::size_t>(c.kvBytesPerRequest)));
        kvRequests_.resize(expected_.size());
        kvIndices_.resize(expected_.size());
      }
    } else if (role_ == Role::prefill && c.has(TrafficClass::kvpush)) {
      kvOut_ =
          ctx.buffers.allocate(static_cast<std::size_t>(c.kvRequests) * static_cast<std::size_t>(c.kvBytesPerRequest));
      for (int j = 0; j < c.kvRequests; ++j)
        moe::writeCopy(kvOut_ + static_cast<std::size_t>(j) * static_cast<std::size_t>(c.kvBytesPerRequest),
                       {g_, j, P + kvpush::decodeIndexOf(g_, j, D), kKvMagic}, c.kvBytesPerRequest);
      arrivals_ =
          kvpush::poissonArrivalOffsetsNs(c.kvRequests, c.kvRatePerSecond, kvpush::arrivalSeedOf(ctx.caseSeed, g_));
      kvRequests_.resize(static_cast<std::size_t>(c.kvRequests));
      kvIndices_.resize(static_cast<std::size_t>(c.kvRequests));
      kvSendDone_.resize(static_cast<std::size_t>(c.kvRequests));
    }
    if (role_ == Role::frontend)
      for (int i = 0; i < c.roles.frontend; ++i)
        frontendRanks_.push_back(ctx.participants[static_cast<std::size_t>(c.roles.prefill + c.roles.decode + i)]);
  }

  // The isolated phase runs `only`; the together phase every class of the role.
  void runPhase(bool together, const TrafficClass* only) {
    const auto runs = [&](TrafficClass k) { return c_.has(k) && (together || *only == k); };
    switch (role_) {
      case Role::decode:
        decodeSteps(together, runs(TrafficClass::allreduce), runs(TrafficClass::alltoall), runs(TrafficClass::kvpush));
        break;
      case Role::prefill:
        if (runs(TrafficClass::kvpush)) pushKv(together);
        break;
      case Role::frontend:
        if (runs(TrafficClass::api)) frontEnd(together);
        break;
      case Role::idle:
        break;
    }
    waitForAll("the other mix ranks to end the phase");
  }

  // Every rank of the group here (a non-blocking barrier). Used after the
  // set-up (so no rank still fills its buffers while the first class is
  // measured) and at the end of each phase. A rank waiting here is done with
  // its part (or has none): it sleeps between polls rather than yielding, so
  // on an oversubscribed host the ranks still measuring have the CPUs (an
  // isolated class is then alone on the machine as well as on the network).
  // Nothing of it is timed.
  void waitForAll(const char* what) {
    MPI_Request r;
    runtime::checkMpi(MPI_Ibarrier(ctx_.group.handle(), &r), "MPI_Ibarrier(mix)");
    int done = 0;
    runtime::waitUntil(
        [&] {
          runtime::checkMpi(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test(mix barrier)");
          if (!done) std::this_thread::sleep_for(std::chrono::microseconds(500));
          return done != 0;
        },
        ctx_.deadline, what);
  }

  Checks& checks() { return checks_; }

 private:
  // Decode: token steps at the cadence; KV receives complete underneath.
  void decodeSteps(bool together, bool allreduce, bool alltoall, bool kv) {
    if (kv) postKvReceives();
    const bool steps = allreduce || alltoall;
    const std::int64_t interval = static_cast<std::int64_t>(c_.stepIntervalSeconds * 1e9);
    const int total = steps ? ctx_.instance.spec->warmup + ctx_.instance.spec->iterations : 0;
    // One step schedule for every decode rank, on the global clock (as one
    // scheduler drives the ranks of a TP group in lockstep): the latest
    // arrival + 2 ms. A start from each rank's own exit of the phase barrier
    // would skew the partners by their wake-up times (milliseconds on a loaded
    // host) in every step, and the all-reduce would measure that skew.
    const std::int64_t offset = ctx_.clock.toGlobal(0);  // global - local
    const std::int64_t start =
        steps ? roleComm_.allreduceMax(runtime::monotonicNow() + offset, ctx_.deadline) + 2'000'000 - offset : 0;
    for (int it = 0; it < total; ++it) {
      const std::int64_t due = start + it * interval;
      runtime::waitUntil(
          [&] {
            pollKv(together);
            return runtime::monotonicNow() >= due;
          },
          ctx_.deadline, "the next token step");
      const bool measured = it >= ctx_.instance.spec->warmup;
      const int i = it - ctx_.instance.spec->warmup;
      if (allreduce) {
        const auto t0 = runtime::monotonicNow();
        MPI_Request r;
        runtime::checkMpi(
            MPI_Iallreduce(send_, recv_, static_cast<int>(count_), MPI_FLOAT, MPI_SUM, tpComm_.handle(), &r),
            "MPI_Iallreduce(mix)");
        int done = 0;
        runtime::waitUntil(
            [&] {
              runtime::checkMpi(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test(mix allreduce)");
              if (!done) pollKv(together);
              return done != 0;
            },
            ctx_.deadline, "a TP all-reduce with the other decode ranks");
        const auto t1 = runtime::monotonicNow();
        if (measured)
          ctx_.samples.record(me_, i, -1, c_.allreduceBytes, t0, t1, flagsOf(TrafficClass::allreduce, together));
      }
      if (alltoall) {
        const auto t0 = runtime::monotonicNow();
        exchange_->dispatch();
        exchange_->combine();
        const auto t1 = runtime::monotonicNow();
        if (measured)
          ctx_.samples.record(me_, i, -1, exchange_->dispatchNetBytes() + exchange_->combineNetBytes(), t0, t1,
                              flagsOf(TrafficClass::alltoall, together));
      }
    }
    if (kv)
      runtime::waitUntil(
          [&] {
            pollKv(together);
            return kvOpen_ == 0;
          },
          ctx_.deadline, "the KV pushes from the prefill ranks");
    // The checks, after the timed loop.
    if (allreduce) {
      // Self-test of the check (--self-test corrupt-rank=N, tests/mpi/mix.sh).
      if (ctx_.selfTest.corruptRank == me_ && count_ > 0) recv_[count_ / 2] += 1.0f;
      const int n = tpComm_.size();
      const float ranksSum = static_cast<float>(n * (n + 1) / 2);
      bool ok = true;
      for (std::size_t k = 0; k < count_ && ok; ++k)
        if (recv_[k] != ranksSum * static_cast<float>(1 + k % 7)) {
          ok = false;
          checks_.fail(TrafficClass::allreduce, "rank " + std::to_string(me_) + ": TP all-reduce element " +
                                                    std::to_string(k) + " is " + std::to_string(recv_[k]));
        }
      if (ok) ++checks_.verified[static_cast<int>(TrafficClass::allreduce)];
    }
    if (alltoall) {
      const auto problem = exchange_->verify(ctx_.selfTest.corruptRank == me_);
      if (problem.empty())
        ++checks_.verified[static_cast<int>(TrafficClass::alltoall)];
      else
        checks_.fail(TrafficClass::alltoall, "rank " + std::to_string(me_) + ": MoE all-to-all " + problem);
    }
    if (kv) checkKv();
  }

  void postKvReceives() {
    const auto bytes = static_cast<std::size_t>(c_.kvBytesPerRequest);
    std::memset(kvIn_, 0, expected_.size() * bytes);
    for (std::size_t k = 0; k < expected_.size(); ++k)
      runtime::checkMpi(MPI_Irecv(kvIn_ + k * bytes, static_cast<int>(bytes), MPI_BYTE, expected_[k].prefill, kKvTag,
                                  ctx_.group.handle(), &kvRequests_[k]),
                        "MPI_Irecv(mix KV)");
    kvOpen_ = static_cast<int>(expected_.size());
  }

  // Tests the open KV operations (receives on decode, sends on prefill) and
  // drives MPI's progress; on prefill, stamps the sends that completed.
  void pollKv(bool together) {
    if (kvOpen_ == 0) return;
    int outCount = 0;
    runtime::checkMpi(MPI_Testsome(static_cast<int>(kvRequests_.size()), kvRequests_.data(), &outCount,
                                   kvIndices_.data(), MPI_STATUSES_IGNORE),
                      "MPI_Testsome(mix KV)");
    if (outCount == MPI_UNDEFINED || outCount == 0) return;
    kvOpen_ -= outCount;
    if (role_ != Role::prefill) return;
    const auto now = runtime::monotonicNow();
    for (int k = 0; k < outCount; ++k) {
      const int j = kvIndices_[static_cast<std::size_t>(k)];
      ctx_.samples.record(
          me_, j,
          ctx_.participants[static_cast<std::size_t>(c_.roles.prefill + kvpush::decodeIndexOf(g_, j, c_.roles.decode))],
          c_.kvBytesPerRequest, kvSendDone_[static_cast<std::size_t>(j)], now, flagsOf(TrafficClass::kvpush, together));
    }
  }

  void checkKv() {
    const auto bytes = c_.kvBytesPerRequest;
    const int d = g_ - c_.roles.prefill;
    if (ctx_.selfTest.corruptRank == me_ && !expected_.empty()) kvIn_[bytes - 1] ^= std::byte{0x5a};
    for (std::size_t k = 0; k < expected_.size(); ++k) {
      const auto problem =
          moe::checkCopy(kvIn_ + k * static_cast<std::size_t>(bytes),
                         {expected_[k].prefill, expected_[k].index, c_.roles.prefill + d, kKvMagic}, bytes);
      if (problem.empty())
        ++checks_.verified[static_cast<int>(TrafficClass::kvpush)];
      else
        checks_.fail(TrafficClass::kvpush, "rank " + std::to_string(me_) + ": KV push " + problem);
    }
  }

  // Prefill: open-loop Poisson arrivals; a request's push starts at its
  // arrival (kvSendDone_ holds the arrival until the sample is recorded) and
  // is measured arrival -> send complete.
  void pushKv(bool together) {
    const auto bytes = static_cast<std::size_t>(c_.kvBytesPerRequest);
    const auto start = runtime::monotonicNow();
    kvOpen_ = 0;
    std::fill(kvRequests_.begin(), kvRequests_.end(), MPI_REQUEST_NULL);
    for (int j = 0; j < c_.kvRequests; ++j) {
      const std::int64_t due = start + arrivals_[static_cast<std::size_t>(j)];
      runtime::waitUntil(
          [&] {
            pollKv(together);
            return runtime::monotonicNow() >= due;
          },
          ctx_.deadline, "the next KV request's arrival");
      kvSendDone_[static_cast<std::size_t>(j)] = due;
      const int dest = c_.roles.prefill + kvpush::decodeIndexOf(g_, j, c_.roles.decode);
      runtime::checkMpi(MPI_Isend(kvOut_ + static_cast<std::size_t>(j) * bytes, static_cast<int>(bytes), MPI_BYTE, dest,
                                  kKvTag, ctx_.group.handle(), &kvRequests_[static_cast<std::size_t>(j)]),
                        "MPI_Isend(mix KV)");
      ++kvOpen_;
    }
    // The decode ranks check the bytes (checkKv).
    runtime::waitUntil(
        [&] {
          pollKv(together);
          return kvOpen_ == 0;
        },
        ctx_.deadline, "the KV pushes to the decode ranks");
  }

  // Front end: the api kind's traffic among the front-end ranks.
  void frontEnd(bool together) {
    const auto from = ctx_.samples.count();
    auto run = api::runApiGroup(c_.api, roleComm_, frontendRanks_, me_, ctx_.identity, ctx_.caseSeed, ctx_.samples,
                                ctx_.clock, ctx_.deadline, ctx_.selfTest);
    ctx_.samples.flagSince(from, flagsOf(TrafficClass::api, together));
    if (roleComm_.rank() == 0) {
      checks_.verified[static_cast<int>(TrafficClass::api)] += run.ok;
      if (run.measured > run.ok)
        checks_.fail(TrafficClass::api,
                     std::to_string(run.measured - run.ok) + " of " + std::to_string(run.measured) +
                         " api requests failed, by server: " + run.errorsByServer,
                     run.measured - run.ok);
      if (run.warmupFailed > 0)
        checks_.fail(TrafficClass::api,
                     std::to_string(run.warmupFailed) +
                         " warm-up api requests failed their data check (not measured, but checked), by server: " +
                         run.warmupErrorsByServer,
                     run.warmupFailed);
    }
    apiRows_.insert(apiRows_.end(), run.rows.begin(), run.rows.end());
    apiInterface_ = run.address.interface;
  }

 public:
  std::vector<api::ApiRequestRecord> apiRows_;
  std::string apiInterface_;

 private:
  RunContext& ctx_;
  const MixConfig& c_;
  const int g_, me_;
  const Role role_;
  runtime::Communicator roleComm_, tpComm_;
  std::size_t count_ = 0;
  float *send_ = nullptr, *recv_ = nullptr;
  std::unique_ptr<moe::MoeExchange> exchange_;
  std::vector<kvpush::ExpectedRequest> expected_;
  std::byte *kvIn_ = nullptr, *kvOut_ = nullptr;
  std::vector<MPI_Request> kvRequests_;
  std::vector<int> kvIndices_;
  std::vector<std::int64_t> kvSendDone_, arrivals_;
  int kvOpen_ = 0;
  std::vector<int> frontendRanks_;
  Checks checks_;
};

using runtime::numberText;

class MixKind final : public Kind {
 public:
  std::string name() const override { return "mix"; }
  using enum output::AttributeType;
  using enum output::Presence;
  // Its own attributes of /tests/NNNN; the schema's entry is printed from them.
  static constexpr output::DeclaredAttribute attributes_[] = {
      {"model", text},
      {"classes", text},
      {"prefill_ranks", integer},
      {"decode_ranks", integer},
      {"frontend_ranks", integer},
      {"tp", integer},
      {"decode_batch", integer},
      {"step_interval_s", real},
      {"allreduce_bytes", integer},
      {"allreduce_size_formula", text},
      {"kv_bytes_per_request", integer},
      {"kv_size_formula", text},
      {"kv_rate_per_s", real},
      {"kv_requests_per_prefill", integer},
      {"baseline_phase", text},
      {"experts", integer, sometimes, "models with experts (the all-to-all class)"},
      {"top_k", integer, sometimes},
      {"inflation_mean_allreduce", real, sometimes, "together / isolated per class, for the classes the mix runs"},
      {"inflation_p99_allreduce", real, sometimes},
      {"inflation_mean_alltoall", real, sometimes},
      {"inflation_p99_alltoall", real, sometimes},
      {"inflation_mean_kvpush", real, sometimes},
      {"inflation_p99_kvpush", real, sometimes},
      {"inflation_mean_api", real, sometimes},
      {"inflation_p99_api", real, sometimes}};
  output::DeclaredAttributes declaredAttributes() const override { return attributes_; }
  std::string summary() const override {
    return "the serving mix: TP all-reduce and MoE all-to-all on decode ranks, KV pushes prefill -> decode, API "
           "traffic on front-end ranks; each class alone, then all together; inflation per class";
  }

  scenario::KindRules rules() const override {
    scenario::KindRules r;
    r.extraKeys = {"model", "layout", "classes", "step_interval", "decode_batch", "kv",
                   // the api class: the api kind's keys
                   "clients", "rate", "max_in_flight", "requests", "warmup_requests", "request_bytes", "chunks",
                   "service_time", "chunk_interval", "request_timeout", "max_connections", "interface", "network"};
    r.minRanks = 2;
    r.parse = [](const scenario::TestSpec& spec, const scenario::TestSource& source) {
      if (spec.transport != "mpi" || spec.memory != "host")
        throw scenario::ScenarioError(spec.where(spec.transport != "mpi" ? "transport" : "memory") + ": test '" +
                                      spec.name +
                                      "' (mix) runs over MPI on host memory so far (GPU memory over "
                                      "NCCL is not built for the mix yet)");
      if (hasCongestedCondition(spec))
        throw scenario::ScenarioError(spec.where("conditions") + ": test '" + spec.name +
                                      "' (mix): the mix is its own congestion (isolated vs together); leave "
                                      "'conditions' out");
      return std::make_shared<MixConfig>(mix::readMixConfig(spec, source));
    };
    return r;
  }

  bool usesTransport() const override { return false; }

  InstancePlan plan(const scenario::TestInstance& instance, int worldSize) const override {
    const auto& spec = *instance.spec;
    const auto& c = scenario::configOf<MixConfig>(spec);
    const int ranks = measuringRanksOf(spec, worldSize, 2);
    if (c.roles.used() > ranks)
      throw scenario::ScenarioError(spec.where("layout") + ": test '" + spec.name + "' (mix): the layout needs " +
                                    std::to_string(c.roles.used()) + " ranks, the run has " + std::to_string(ranks));
    InstancePlan p;
    p.metric = Metric::latency;
    p.pattern = "serving-mix";
    const std::int64_t steps = spec.iterations;
    p.maxSamplesPerRank =
        2 * (2 * steps + c.kvRequests + static_cast<std::int64_t>(c.api.requests) * (2 + c.api.chunks));
    const std::int64_t kvIn =
        (static_cast<std::int64_t>(c.roles.prefill) * c.kvRequests + c.roles.decode - 1) / std::max(1, c.roles.decode) +
        1;
    const std::int64_t moeBytes = c.has(TrafficClass::alltoall)
                                      ? c.decodeBatch * (std::min(c.routing.topK, c.roles.decode) + c.roles.decode) *
                                            (c.dispatchTokenBytes + c.combineTokenBytes)
                                      : 0;
    p.bufferBytesPerRank =
        std::max({2 * c.allreduceBytes + moeBytes + kvIn * c.kvBytesPerRequest,
                  static_cast<std::int64_t>(c.kvRequests) * c.kvBytesPerRequest, std::int64_t{1} << 20});
    std::string classes;
    for (int k = 0; k < mix::kClassCount; ++k)
      if (c.has(static_cast<TrafficClass>(k)))
        classes += (classes.empty() ? "" : ", ") + std::string(mix::className(static_cast<TrafficClass>(k)));
    p.description = "serving mix of " + c.modelName + " (" + classes + "): " + std::to_string(c.roles.prefill) +
                    " prefill, " + std::to_string(c.roles.decode) + " decode in TP groups of " +
                    std::to_string(c.roles.tp) + ", " + std::to_string(c.roles.frontend) + " front-end ranks; " +
                    std::to_string(steps) + " token steps every " + numberText(c.stepIntervalSeconds * 1e3) +
                    " ms; each class isolated, then together";
    return p;
  }

  Outcome run(RunContext& ctx) const override {
    const auto& c = scenario::configOf<MixConfig>(*ctx.instance.spec);
    MixRank rank(ctx, c);
    rank.waitForAll("the other mix ranks to set up");
    for (int k = 0; k < mix::kClassCount; ++k) {
      const auto cls = static_cast<TrafficClass>(k);
      if (c.has(cls)) rank.runPhase(false, &cls);
    }
    rank.runPhase(true, nullptr);

    const auto& checks = rank.checks();
    if (const auto problems = checks.problems(); !problems.empty()) ctx.verdict.fail(problems);
    Outcome outcome;
    auto rows = summarize(ctx, c, checks);
    if (ctx.group.rank() == 0) {
      outcome.attributes = attributesOf(c, rows);
      outcome.tables.push_back(output::KindTable::of("mix_classes", rows));
    }
    outcome.tables.push_back(output::KindTable::of("api_requests", rank.apiRows_));
    return outcome;
  }

  std::vector<output::KindTable> tables() const override {
    return {output::KindTable::of<mix::MixClassRecord>("mix_classes"),
            output::KindTable::of<api::ApiRequestRecord>("api_requests")};
  }

 private:
  // Per class and phase over every rank's samples (headline ones: the api's
  // first-byte and gap samples are left out): gathered to group rank 0.
  std::vector<mix::MixClassRecord> summarize(RunContext& ctx, const MixConfig& c, const Checks& checks) const {
    // Per sample: class-phase key, duration, start and end on the global clock, bytes.
    std::vector<std::int64_t> mine;
    for (const auto& s : ctx.samples.used()) {
      const auto cls = (s.flags & mix::sample_flags::classMask) >> mix::sample_flags::classShift;
      if (cls == 0 || (s.flags & output::sample_flags::auxiliaryMask)) continue;
      const bool together = (s.flags & mix::sample_flags::together) != 0;
      const std::int64_t key = static_cast<std::int64_t>(cls - 1) * 2 + (together ? 1 : 0);
      mine.insert(mine.end(), {key, s.t_done_ns - s.t_post_ns, ctx.clock.toGlobal(s.t_post_ns),
                               ctx.clock.toGlobal(s.t_done_ns), s.bytes, static_cast<std::int64_t>(ctx.world.rank())});
    }
    for (int k = 0; k < mix::kClassCount; ++k)
      mine.insert(mine.end(), {-1, k, checks.verified[k], checks.failed[k], 0, 0});
    const auto all = gatherStamps(ctx.group, mine, ctx.deadline);
    if (ctx.group.rank() != 0) return {};
    struct Acc {
      std::vector<double> durations;
      std::int64_t first = INT64_MAX, last = INT64_MIN, bytes = 0;
      std::map<std::int64_t, int> ranks;
    };
    std::map<std::int64_t, Acc> acc;
    std::int64_t verified[mix::kClassCount] = {}, failed[mix::kClassCount] = {};
    for (const auto& v : all)
      for (std::size_t i = 0; i + 6 <= v.size(); i += 6) {
        if (v[i] < 0) {
          verified[v[i + 1]] += v[i + 2];
          failed[v[i + 1]] += v[i + 3];
          continue;
        }
        auto& a = acc[v[i]];
        a.durations.push_back(static_cast<double>(v[i + 1]));
        a.first = std::min(a.first, v[i + 2]);
        a.last = std::max(a.last, v[i + 3]);
        a.bytes = std::max(a.bytes, v[i + 4]);
        a.ranks[v[i + 5]] = 1;
      }
    std::vector<mix::MixClassRecord> rows;
    for (int k = 0; k < mix::kClassCount; ++k) {
      if (!c.has(static_cast<TrafficClass>(k))) continue;
      mix::MixClassRecord iso{};
      for (int phase = 0; phase < 2; ++phase) {
        mix::MixClassRecord row{};
        output::setText(row.traffic_class, mix::className(static_cast<TrafficClass>(k)));
        output::setText(row.phase, phase ? "together" : "isolated");
        row.inflation_mean = row.inflation_p99 = std::nan("");
        const auto it = acc.find(k * 2 + phase);
        if (it != acc.end() && !it->second.durations.empty()) {
          auto& a = it->second;
          const auto st = stats::summarize(a.durations);
          row.ranks = static_cast<std::int32_t>(a.ranks.size());
          row.samples = static_cast<std::int64_t>(a.durations.size());
          row.bytes = a.bytes;
          row.mean_ns = st.mean;
          row.p50_ns = st.p50;
          row.p99_ns = st.p99;
          row.max_ns = st.max;
          row.span_ns = a.last - a.first;
        }
        if (phase == 0) {
          iso = row;
        } else if (iso.samples > 0 && row.samples > 0) {
          row.inflation_mean = row.mean_ns / iso.mean_ns;
          row.inflation_p99 = row.p99_ns / iso.p99_ns;
        }
        // The checks of both phases, counted on the together row.
        if (phase == 1) {
          row.verified = verified[k];
          row.failed = failed[k];
        }
        rows.push_back(row);
      }
    }
    for (const auto& r : rows)
      if (std::string(r.phase) == "together")
        std::printf(
            "mix %-9s isolated p50 %.3f ms p99 %.3f ms | together p50 %.3f ms p99 %.3f ms | inflation mean x%.2f p99 "
            "x%.2f\n",
            r.traffic_class, rowOf(rows, r.traffic_class, "isolated").p50_ns / 1e6,
            rowOf(rows, r.traffic_class, "isolated").p99_ns / 1e6, r.p50_ns / 1e6, r.p99_ns / 1e6, r.inflation_mean,
            r.inflation_p99);
    std::fflush(stdout);
    return rows;
  }

  static const mix::MixClassRecord& rowOf(const std::vector<mix::MixClassRecord>& rows, const char* cls,
                                          const char* phase) {
    for (const auto& r : rows)
      if (std::string(r.traffic_class) == cls && std::string(r.phase) == phase) return r;
    return rows.front();
  }

  output::Attributes attributesOf(const MixConfig& c, const std::vector<mix::MixClassRecord>& rows) const {
    std::string classes;
    for (int k = 0; k < mix::kClassCount; ++k)
      if (c.has(static_cast<TrafficClass>(k)))
        classes += (classes.empty() ? "" : ",") + std::string(mix::className(static_cast<TrafficClass>(k)));
    output::Attributes a = {
        {"model", c.modelName},
        {"classes", classes},
        {"prefill_ranks", std::int64_t{c.roles.prefill}},
        {"decode_ranks", std::int64_t{c.roles.decode}},
        {"tp", std::int64_t{c.roles.tp}},
        {"frontend_ranks", std::int64_t{c.roles.frontend}},
        {"step_interval_s", c.stepIntervalSeconds},
        {"decode_batch", c.decodeBatch},
        {"allreduce_bytes", c.allreduceBytes},
        {"allreduce_size_formula", c.allreduceFormula},
        {"kv_bytes_per_request", c.kvBytesPerRequest},
        {"kv_size_formula", c.kvFormula},
        {"kv_rate_per_s", c.kvRatePerSecond},
        {"kv_requests_per_prefill", std::int64_t{c.kvRequests}},
        {"baseline_phase", std::string("isolated")},
    };
    if (c.has(TrafficClass::alltoall)) {
      a.push_back({"experts", std::int64_t{c.routing.experts}});
      a.push_back({"top_k", std::int64_t{c.routing.topK}});
    }
    for (const auto& r : rows)
      if (std::string(r.phase) == "together") {
        a.push_back({std::string("inflation_mean_") + r.traffic_class, r.inflation_mean});
        a.push_back({std::string("inflation_p99_") + r.traffic_class, r.inflation_p99});
      }
    return a;
  }
};

}  // namespace

std::unique_ptr<Kind> makeMixKind() { return std::make_unique<MixKind>(); }

}  // namespace fabscope::suite
