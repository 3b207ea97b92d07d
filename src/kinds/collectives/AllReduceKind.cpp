// All-reduce (sum of float32) over the measuring ranks: MPI_Iallreduce on host
// memory, or NCCL on GPU memory (transport: nccl, memory: cuda). Every rank
// records the moment it arrived at each collective and when it left it, so a
// late rank is visible in the file; rank 0 derives per-iteration times on the
// global clock (last exit - first arrival), algbw and busbw = algbw x 2(n-1)/n,
// and which rank arrived last most often (the straggler). Then `iterations`
// more all-reduces launched back to back, timed as one batch (the pipelined
// figure, nccl-tests' convention; docs/benchmarks.md says how they relate).
#include <algorithm>
#include <cmath>
#include <map>

#include "fabscope/BuildConfig.hpp"
#include "kinds/Kind.hpp"
#include "kinds/collectives/AllReduceNccl.hpp"
#include "kinds/collectives/BusFactor.hpp"
#include "kinds/collectives/CollectiveTimes.hpp"
#include "scenario/TestSource.hpp"
#include "stats/Statistics.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::suite {
namespace {

// A test's all-reduce path, chosen at load by what its transport offers.
struct AllReduceConfig final : scenario::KindConfig {
  bool onDevice = false;  // the transport's device collectives (NCCL) on GPU memory; else MPI's on host memory
};

// Element i of rank r's contribution: small integers, so float sums are exact.
inline float contribution(int groupRank, std::size_t i) { return static_cast<float>((groupRank + 1) * (1 + i % 7)); }

class AllReduceKind final : public Kind {
 public:
  std::string name() const override { return "allreduce"; }
  using enum output::AttributeType;
  using enum output::Presence;
  // Its own attributes of /tests/NNNN; the schema's entry is printed from them.
  static constexpr output::DeclaredAttribute attributes_[] = {
      {"algbw_gbps", real},
      {"arrival_spread_p50_ns", real},
      {"arrival_spread_p99_ns", real},
      {"busbw_gbps", real},
      {"collective_p50_ns", real},
      {"collective_p99_ns", real},
      {"pipelined_calls", integer, always,
       "pipelined_*: `pipelined_calls` launched back to back, total time / calls\n"
       "(nccl-tests' default); the others per call (what a decode step waits for).\n"
       "docs/benchmarks.md relates the two."},
      {"pipelined_time_ns", real},
      {"pipelined_algbw_gbps", real},
      {"pipelined_busbw_gbps", real},
      {"straggler_last_fraction", real},
      {"straggler_rank", integer}};
  output::DeclaredAttributes declaredAttributes() const override { return attributes_; }
  std::string summary() const override {
    return "all-reduce (sum, float32) over the measuring ranks: MPI on host memory, NCCL on GPU memory";
  }

  scenario::KindRules rules() const override {
    scenario::KindRules r;
    r.groupRotation = true;  // over the instance's measuring ranks, whichever group they are
    r.minRanks = 1;
    r.parse = [](const scenario::TestSpec& spec, const scenario::TestSource&) {
      const auto collectives = transport::transportCapabilities(spec.transport).collectives;
      if (collectives == transport::Collectives::none)
        throw scenario::ScenarioError(spec.at + ": test '" + spec.name +
                                      "': allreduce runs over transport mpi (host memory) or nccl (memory: cuda)");
      auto c = std::make_shared<AllReduceConfig>();
      c->onDevice = collectives == transport::Collectives::device;
      if (c->onDevice != (spec.memory == "cuda"))
        throw scenario::ScenarioError(spec.at + ": test '" + spec.name +
                                      "': use transport: nccl with memory: cuda, or transport: mpi with memory: host");
      for (auto bytes : spec.sizes)
        if (bytes % 4 != 0)
          throw scenario::ScenarioError(spec.where("sizes") + ": test '" + spec.name +
                                        "': all-reduce sizes must be whole float32 counts (multiples of 4 B), got " +
                                        std::to_string(bytes));
      return c;
    };
    return r;
  }

  bool usesTransport() const override { return false; }

  InstancePlan plan(const scenario::TestInstance& instance, int worldSize) const override {
    const auto& spec = *instance.spec;
    InstancePlan p;
    p.metric = Metric::latency;
    p.pattern = "collective";
    const int ranks = measuringRanksOf(spec, worldSize, 1);
    p.maxSamplesPerRank = spec.iterations;
    p.bufferBytesPerRank = 2 * instance.bytes;
    p.description = (scenario::configOf<AllReduceConfig>(spec).onDevice ? "ncclAllReduce" : "MPI_Allreduce") +
                    std::string(" sum float32 over ") + std::to_string(ranks) + " ranks; busbw = algbw x 2(n-1)/n" +
                    (ranks == 1 ? std::string(" = 0 (one rank: nothing crosses a link)") : std::string());
    return p;
  }

  Outcome run(RunContext& ctx) const override {
    const auto& spec = *ctx.instance.spec;
    const auto bytes = static_cast<std::size_t>(ctx.instance.bytes);
    const std::size_t count = bytes / sizeof(float);
    const int n = ctx.group.size();
    const int me = ctx.world.rank();
    std::vector<float> expected(count);
    const float ranksSum = static_cast<float>(n * (n + 1) / 2);
    for (std::size_t i = 0; i < count; ++i) expected[i] = ranksSum * static_cast<float>(1 + i % 7);

    std::vector<float> result;
    PipelinedBatch pipelined;
    pipelined.calls = std::max(1, spec.iterations);
    if (scenario::configOf<AllReduceConfig>(spec).onDevice) {
      result = runNcclAllReduce(ctx, count, contribution, &pipelined);
    } else {
      // From the arena: a timed-out collective may still use them.
      auto* send = reinterpret_cast<float*>(ctx.buffers.allocate(bytes));
      auto* recv = reinterpret_cast<float*>(ctx.buffers.allocate(bytes));
      for (std::size_t i = 0; i < count; ++i) send[i] = contribution(ctx.group.rank(), i);
      const int total = spec.warmup + spec.iterations;
      for (int it = 0; it < total; ++it) {
        const auto t0 = runtime::monotonicNow();
        MPI_Request r;
        runtime::checkMpi(
            MPI_Iallreduce(send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, ctx.group.handle(), &r),
            "MPI_Iallreduce");
        int done = 0;
        runtime::waitUntil(
            [&] {
              runtime::checkMpi(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test(allreduce)");
              return done != 0;
            },
            ctx.deadline, "an all-reduce with the other ranks", runtime::watchdog::everyRank);
        const auto t1 = runtime::monotonicNow();
        if (it >= spec.warmup) ctx.samples.record(me, it - spec.warmup, -1, static_cast<std::int64_t>(bytes), t0, t1);
      }
      // Back to back: MPI has no stream to queue on, so each rank starts the
      // next call as soon as its part of the last one is done.
      ctx.group.barrier(ctx.deadline);
      pipelined.start_ns = runtime::monotonicNow();
      for (int i = 0; i < pipelined.calls; ++i) {
        MPI_Request r;
        runtime::checkMpi(
            MPI_Iallreduce(send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, ctx.group.handle(), &r),
            "MPI_Iallreduce");
        ctx.group.complete(r, ctx.deadline, "an all-reduce (launched back to back) with the other ranks");
      }
      pipelined.end_ns = runtime::monotonicNow();
      result.assign(recv, recv + count);
    }
    // Self-test of the checker (--self-test corrupt-rank=N, tests/mpi/allreduce.sh):
    // this rank's result is spoiled on purpose, and the check below must catch it.
    if (ctx.selfTest.corruptRank == me && count > 0) result[count / 2] += 1.0f;
    for (std::size_t i = 0; i < count; ++i)
      if (result[i] != expected[i]) {
        ctx.verdict.fail("rank " + std::to_string(me) + ": all-reduce element " + std::to_string(i) + " is " +
                         std::to_string(result[i]) + ", expected " + std::to_string(expected[i]));
        break;
      }
    Outcome outcome;
    outcome.attributes = summarizeOnRank0(ctx, n, bytes, pipelined);
    return outcome;
  }

 private:
  // Per iteration on the global clock: first arrival, last arrival (and who), last exit.
  output::Attributes summarizeOnRank0(RunContext& ctx, int n, std::size_t bytes,
                                      const PipelinedBatch& pipelined) const {
    const double pipelinedNs = pipelinedPerCallNs(
        ctx.group, pipelined, [&](std::int64_t t) { return ctx.clock.toGlobal(t); }, ctx.deadline);
    std::vector<std::int64_t> mine;
    for (const auto& s : ctx.samples.used()) {
      mine.push_back(ctx.clock.toGlobal(s.t_post_ns));
      mine.push_back(ctx.clock.toGlobal(s.t_done_ns));
    }
    const auto stamps = gatherStamps(ctx.group, mine, ctx.deadline);
    if (ctx.group.rank() != 0) return {};
    auto t = collectiveTimes(stamps, ctx.samples.used().size(), 2, 0, 1);
    const auto st = stats::summarize(t.duration);
    const auto late = stats::summarize(t.lateness);
    const double algbw = static_cast<double>(bytes) / st.p50;  // bytes per ns = GB/s
    const double busFactor = allReduceBusFactor(n);            // 0 for one rank (BusFactor.hpp)
    const double pipelinedAlgbw = pipelinedNs > 0 ? static_cast<double>(bytes) / pipelinedNs : 0.0;
    return {
        {"collective_p50_ns", st.p50},
        {"collective_p99_ns", st.p99},
        {"algbw_gbps", algbw},
        {"busbw_gbps", algbw * busFactor},
        {"pipelined_calls", std::int64_t{pipelined.calls}},
        {"pipelined_time_ns", pipelinedNs},
        {"pipelined_algbw_gbps", pipelinedAlgbw},
        {"pipelined_busbw_gbps", pipelinedAlgbw * busFactor},
        {"straggler_rank", std::int64_t{ctx.participants[static_cast<std::size_t>(t.straggler)]}},
        {"straggler_last_fraction", t.stragglerFraction},
        {"arrival_spread_p50_ns", late.p50},
        {"arrival_spread_p99_ns", late.p99},
    };
  }
};

}  // namespace

std::unique_ptr<Kind> makeAllReduceKind() { return std::make_unique<AllReduceKind>(); }

}  // namespace fabscope::suite
