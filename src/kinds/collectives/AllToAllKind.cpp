// MoE expert-parallel all-to-all: each measuring rank routes its
// tokens to the ranks holding their top-k experts (MoeRouting), the dispatch
// sends one copy per (token, rank) with MPI_Ialltoallv, the combine returns
// one result per copy the same way. Every copy carries a 16-byte header and a
// payload derived from it, checked after the timed loop. Per iteration every
// rank stamps its arrival, the end of its dispatch and the end of its combine;
// rank 0 derives each phase's time on the global clock (last exit - first
// arrival), algbw and busbw (nccl-tests' all-to-all convention), the load
// imbalance and the straggler. Then `iterations` dispatches, and as many
// combines, launched back to back, each phase timed as one batch (the
// pipelined figure, nccl-tests' convention). Host memory over MPI
// (MPI_Ialltoallv), GPU memory over NCCL (grouped ncclSend/ncclRecv): both
// move the blocks of one ExchangeLayout (AllToAllExchange).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>

#include "kinds/Kind.hpp"
#include "kinds/collectives/AllToAllConfig.hpp"
#include "kinds/collectives/AllToAllExchange.hpp"
#include "kinds/collectives/AllToAllRecords.hpp"
#include "kinds/collectives/BusFactor.hpp"
#include "kinds/collectives/CollectiveTimes.hpp"
#include "kinds/collectives/MoeExchange.hpp"
#include "scenario/TestSource.hpp"
#include "stats/Statistics.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::suite {
namespace {

using moe::AllToAllConfig;

std::string exponentText(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

class AllToAllKind final : public Kind {
 public:
  std::string name() const override { return "alltoall"; }
  using enum output::AttributeType;
  using enum output::Presence;
  // Its own attributes of /tests/NNNN; the schema's entry is printed from them.
  static constexpr output::DeclaredAttribute attributes_[] = {{"arrival_spread_p50_ns", real},
                                                              {"arrival_spread_p99_ns", real},
                                                              {"collective_p50_ns", real},
                                                              {"collective_p99_ns", real},
                                                              {"combine_algbw_gbps", real},
                                                              {"combine_busbw_gbps", real},
                                                              {"combine_p50_ns", real},
                                                              {"combine_p99_ns", real},
                                                              {"combine_pipelined_ns", real},
                                                              {"combine_pipelined_algbw_gbps", real},
                                                              {"combine_pipelined_busbw_gbps", real},
                                                              {"combine_token_bytes", integer},
                                                              {"copies_per_token", real},
                                                              {"dispatch_algbw_gbps", real},
                                                              {"dispatch_busbw_gbps", real},
                                                              {"dispatch_p50_ns", real},
                                                              {"dispatch_p99_ns", real},
                                                              {"dispatch_pipelined_ns", real},
                                                              {"dispatch_pipelined_algbw_gbps", real},
                                                              {"dispatch_pipelined_busbw_gbps", real},
                                                              {"pipelined_calls", integer},
                                                              {"dispatch_token_bytes", integer},
                                                              {"experts", integer},
                                                              {"load_imbalance", real},
                                                              {"model", text},
                                                              {"popularity", text},
                                                              {"send_imbalance", real},
                                                              {"straggler_last_fraction", real},
                                                              {"straggler_rank", integer},
                                                              {"tokens_per_rank", integer},
                                                              {"top_k", integer},
                                                              {"zipf_exponent", real}};
  output::DeclaredAttributes declaredAttributes() const override { return attributes_; }
  std::string summary() const override {
    return "MoE all-to-all: dispatch tokens to the ranks of their top-k experts, combine the results back "
           "(MPI on host memory), every byte verified";
  }

  scenario::KindRules rules() const override {
    scenario::KindRules r;
    r.groupRotation = true;  // over the instance's measuring ranks, whichever group they are
    r.extraKeys = {"model", "experts", "top_k", "routing", "token_bytes"};
    r.minRanks = 2;
    r.parse = [](const scenario::TestSpec& spec, const scenario::TestSource& source) {
      const auto collectives = transport::transportCapabilities(spec.transport).collectives;
      const bool onHost = collectives == transport::Collectives::host && spec.memory == "host";
      const bool onDevice = collectives == transport::Collectives::device && spec.memory == "cuda";
      if (!onHost && !onDevice)
        throw scenario::ScenarioError(spec.at + ": test '" + spec.name +
                                      "': alltoall runs over transport mpi on memory: host, or transport nccl on "
                                      "memory: cuda");
      auto c = std::make_shared<AllToAllConfig>(moe::readAllToAllConfig(spec, source));
      c->onDevice = onDevice;
      return c;
    };
    return r;
  }

  bool usesTransport() const override { return false; }

  InstancePlan plan(const scenario::TestInstance& instance, int worldSize) const override {
    const auto& spec = *instance.spec;
    const auto& c = scenario::configOf<AllToAllConfig>(spec);
    const auto tokens = moe::tokensOf(c, instance.bytes, spec);
    InstancePlan p;
    p.metric = Metric::latency;
    p.pattern = "collective";
    const int ranks = measuringRanksOf(spec, worldSize, 2);
    p.maxSamplesPerRank = 3 * static_cast<std::int64_t>(spec.iterations);
    // The most a rank can hold: its copies out (one per rank at most per token),
    // every rank's copies in, and the same again as combine results.
    const std::int64_t out = tokens * std::min(c.routing.topK, ranks), in = tokens * ranks;
    p.bufferBytesPerRank = (out + in) * (c.dispatchTokenBytes + c.combineTokenBytes);
    p.description =
        std::string("MoE dispatch + combine (") + (c.onDevice ? "ncclSend/ncclRecv" : "MPI_Ialltoallv") + ") over " +
        std::to_string(ranks) + " ranks: " + std::to_string(tokens) + " tokens/rank to top-" +
        std::to_string(c.routing.topK) + " of " + std::to_string(c.routing.experts) + " experts (" +
        moe::popularityName(c.routing.popularity) +
        (c.routing.popularity == moe::Popularity::zipf ? " s=" + exponentText(c.routing.zipfExponent) : "") + "), " +
        c.sizeSource + "; busbw = algbw x (n-1)/n";
    return p;
  }

  Outcome run(RunContext& ctx) const override {
    const auto& spec = *ctx.instance.spec;
    const auto& c = scenario::configOf<AllToAllConfig>(spec);
    const auto tokens = moe::tokensOf(c, ctx.instance.bytes, spec);
    const int g = ctx.group.rank(), me = ctx.world.rank();
    const auto D = c.dispatchTokenBytes, C = c.combineTokenBytes;

    // Routing, counts, buffers and copies, before the timed loop (MoeExchange);
    // the blocks move over NCCL on GPU memory or MPI on host memory.
    moe::MoeExchange exchange(c.routing, D, C, tokens, ctx.group, ctx.buffers, ctx.caseSeed, ctx.deadline,
                              [&](const ExchangeLayout& d, const ExchangeLayout& cb, const AllToAllHostBuffers& host) {
                                return c.onDevice ? makeNcclAllToAll(ctx, d, cb, host)
                                                  : makeMpiAllToAll(ctx.group, ctx.deadline, d, cb, host);
                              });
    const auto& dispatch = exchange.dispatchLayout();
    const auto& combine = exchange.combineLayout();
    const auto& sendCopies = exchange.sendCopies();
    const auto& recvCopies = exchange.recvCopies();

    const auto self = static_cast<std::size_t>(g);
    const std::int64_t dispatchNet = exchange.dispatchNetBytes();
    const std::int64_t combineNet = exchange.combineNetBytes();
    const int total = spec.warmup + spec.iterations;
    for (int it = 0; it < total; ++it) {
      const auto t0 = runtime::monotonicNow();
      exchange.dispatch();
      const auto t1 = runtime::monotonicNow();
      exchange.combine();
      const auto t2 = runtime::monotonicNow();
      if (it < spec.warmup) continue;
      const int i = it - spec.warmup;
      ctx.samples.record(me, i, -1, dispatchNet + combineNet, t0, t2);
      ctx.samples.record(me, i, -1, dispatchNet, t0, t1, moe::sample_flags::dispatchPhase);
      ctx.samples.record(me, i, -1, combineNet, t1, t2, moe::sample_flags::combinePhase);
    }
    // The pipelined figure: each phase's calls back to back, from a barrier.
    // They leave the same data in the inbound buffers, checked below.
    PipelinedBatch dispatchBatch, combineBatch;
    dispatchBatch.calls = combineBatch.calls = std::max(1, spec.iterations);
    for (auto [phase, batch] :
         {std::pair{AllToAllPhase::dispatch, &dispatchBatch}, std::pair{AllToAllPhase::combine, &combineBatch}}) {
      ctx.group.barrier(ctx.deadline);
      batch->start_ns = runtime::monotonicNow();
      exchange.batch(phase, batch->calls);
      batch->end_ns = runtime::monotonicNow();
    }

    // Self-test of the checks (--self-test corrupt-rank=N, tests/mpi/alltoall.sh):
    // this rank's inbound dispatch is spoiled on purpose, and the check must catch it.
    const std::string problem = exchange.verify(ctx.selfTest.corruptRank == me);
    if (!problem.empty()) ctx.verdict.fail("rank " + std::to_string(me) + ": all-to-all " + problem);

    moe::AllToAllRankRecord row{};
    row.rank = me;
    row.tokens = tokens;
    row.dispatch_copies_local = sendCopies[self];
    row.dispatch_copies_sent =
        std::accumulate(sendCopies.begin(), sendCopies.end(), std::int64_t{0}) - sendCopies[self];
    row.dispatch_bytes_sent = dispatchNet;
    row.dispatch_bytes_received = dispatch.recvBytes - recvCopies[self] * D;
    row.combine_bytes_sent = combineNet;
    row.combine_bytes_received = combine.recvBytes - sendCopies[self] * C;
    row.verified = problem.empty() ? 1 : 0;

    Outcome outcome;
    outcome.attributes = summarizeOnRank0(ctx, c, tokens, dispatch, recvCopies, dispatchBatch, combineBatch);
    outcome.tables.push_back(output::KindTable::of("alltoall_ranks", std::vector{row}));
    return outcome;
  }

  std::vector<output::KindTable> tables() const override {
    return {output::KindTable::of<moe::AllToAllRankRecord>("alltoall_ranks")};
  }

 private:
  output::Attributes summarizeOnRank0(RunContext& ctx, const AllToAllConfig& c, std::int64_t tokens,
                                      const ExchangeLayout& dispatch, const std::vector<std::int64_t>& recvCopies,
                                      const PipelinedBatch& dispatchBatch, const PipelinedBatch& combineBatch) const {
    auto toGlobal = [&](std::int64_t t) { return ctx.clock.toGlobal(t); };
    const double dispatchPipelinedNs = pipelinedPerCallNs(ctx.group, dispatchBatch, toGlobal, ctx.deadline);
    const double combinePipelinedNs = pipelinedPerCallNs(ctx.group, combineBatch, toGlobal, ctx.deadline);
    // Load per rank: copies held (its experts' work) and sent, self included.
    const std::int64_t held = std::accumulate(recvCopies.begin(), recvCopies.end(), std::int64_t{0});
    const auto heldAll = ctx.group.allgather(held, ctx.deadline);
    const auto sentAll = ctx.group.allgather(dispatch.sendBytes / c.dispatchTokenBytes, ctx.deadline);
    // Stamps per measured iteration: arrival, end of dispatch, end of combine.
    std::vector<std::int64_t> mine;
    for (const auto& s : ctx.samples.used())
      if (s.flags == 0) {
        mine.push_back(ctx.clock.toGlobal(s.t_post_ns));
        mine.push_back(0);
        mine.push_back(ctx.clock.toGlobal(s.t_done_ns));
      } else if (s.flags & moe::sample_flags::dispatchPhase) {
        mine[mine.size() - 2] = ctx.clock.toGlobal(s.t_done_ns);
      }
    const auto stamps = gatherStamps(ctx.group, mine, ctx.deadline);
    if (ctx.group.rank() != 0) return {};
    const int n = ctx.group.size();
    const std::size_t iterations = mine.size() / 3;
    auto dispatchT = collectiveTimes(stamps, iterations, 3, 0, 1);
    auto combineT = collectiveTimes(stamps, iterations, 3, 1, 2);
    auto roundT = collectiveTimes(stamps, iterations, 3, 0, 2);
    const auto d = stats::summarize(dispatchT.duration), cb = stats::summarize(combineT.duration),
               round = stats::summarize(roundT.duration), late = stats::summarize(roundT.lateness);
    auto mean = [](const std::vector<std::int64_t>& v) {
      return static_cast<double>(std::accumulate(v.begin(), v.end(), std::int64_t{0})) / static_cast<double>(v.size());
    };
    auto maxOf = [](const std::vector<std::int64_t>& v) {
      return static_cast<double>(*std::max_element(v.begin(), v.end()));
    };
    // nccl-tests' all-to-all: algbw = bytes a rank sends (its own share
    // included) / time; busbw = algbw x (n-1)/n, the share that crosses.
    const double copiesSentMean = mean(sentAll);
    const double dispatchAlgbw = copiesSentMean * static_cast<double>(c.dispatchTokenBytes) / d.p50;
    const double combineAlgbw = copiesSentMean * static_cast<double>(c.combineTokenBytes) / cb.p50;
    const double busFactor = allToAllBusFactor(n);
    auto algbwOf = [&](std::int64_t tokenBytes, double ns) {
      return ns > 0 ? copiesSentMean * static_cast<double>(tokenBytes) / ns : 0.0;
    };
    const double dispatchPipelinedAlgbw = algbwOf(c.dispatchTokenBytes, dispatchPipelinedNs);
    const double combinePipelinedAlgbw = algbwOf(c.combineTokenBytes, combinePipelinedNs);
    return {
        {"model", c.modelName},
        {"tokens_per_rank", tokens},
        {"experts", std::int64_t{c.routing.experts}},
        {"top_k", std::int64_t{c.routing.topK}},
        {"popularity", std::string(moe::popularityName(c.routing.popularity))},
        {"zipf_exponent", c.routing.popularity == moe::Popularity::zipf ? c.routing.zipfExponent : 0.0},
        {"dispatch_token_bytes", c.dispatchTokenBytes},
        {"combine_token_bytes", c.combineTokenBytes},
        {"copies_per_token", tokens > 0 ? copiesSentMean / static_cast<double>(tokens) : 0.0},
        {"collective_p50_ns", round.p50},
        {"collective_p99_ns", round.p99},
        {"dispatch_p50_ns", d.p50},
        {"dispatch_p99_ns", d.p99},
        {"combine_p50_ns", cb.p50},
        {"combine_p99_ns", cb.p99},
        {"dispatch_algbw_gbps", dispatchAlgbw},
        {"dispatch_busbw_gbps", dispatchAlgbw * busFactor},
        {"combine_algbw_gbps", combineAlgbw},
        {"combine_busbw_gbps", combineAlgbw * busFactor},
        {"pipelined_calls", std::int64_t{dispatchBatch.calls}},
        {"dispatch_pipelined_ns", dispatchPipelinedNs},
        {"combine_pipelined_ns", combinePipelinedNs},
        {"dispatch_pipelined_algbw_gbps", dispatchPipelinedAlgbw},
        {"dispatch_pipelined_busbw_gbps", dispatchPipelinedAlgbw * busFactor},
        {"combine_pipelined_algbw_gbps", combinePipelinedAlgbw},
        {"combine_pipelined_busbw_gbps", combinePipelinedAlgbw * busFactor},
        {"load_imbalance", mean(heldAll) > 0 ? maxOf(heldAll) / mean(heldAll) : 1.0},
        {"send_imbalance", copiesSentMean > 0 ? maxOf(sentAll) / copiesSentMean : 1.0},
        {"straggler_rank", std::int64_t{ctx.participants[static_cast<std::size_t>(roundT.straggler)]}},
        {"straggler_last_fraction", roundT.stragglerFraction},
        {"arrival_spread_p50_ns", late.p50},
        {"arrival_spread_p99_ns", late.p99},
    };
  }
};

}  // namespace

std::unique_ptr<Kind> makeAllToAllKind() { return std::make_unique<AllToAllKind>(); }

}  // namespace fabscope::suite
