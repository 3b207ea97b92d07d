// KV-cache transfer between prefill and decode workers (disaggregated
// serving). Ranks [0, P) of the measuring group play prefill workers,
// [P, P + D) decode workers, each one TP shard of its worker. A prefill rank
// produces requests (fills their scattered pool blocks with a per-request
// pattern); their KV crosses to a decode rank, which lands it in its own
// scattered blocks and verifies every byte. One instance = one strategy x one
// direction x one prompt length (KvPushConfig.hpp); the workers are in
// KvPushTwoSided.cpp (push) and KvPushOneSided.cpp (push-put, pull).
#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <thread>

#include "kinds/Kind.hpp"
#include "kinds/kvpush/KvPushConfig.hpp"
#include "kinds/kvpush/KvPushSchedule.hpp"
#include "kinds/kvpush/KvPushWorkers.hpp"
#include "kinds/kvpush/KvRecords.hpp"
#include "scenario/TestSource.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::suite {
namespace {

using namespace kvpush;

// One instance's state on one rank (RunContext::state). Members are destroyed
// in reverse order: the workers before the memory they use, the shape last.
// Kept by the runner after a missed deadline, since transfers may still touch
// the memory.
struct KvRunState final : InstanceState {
  Shape shape;
  // The round being run (ring rotation): its shape (requests per round, id
  // base) and a context whose participants are in that round's role order.
  Shape roundShape;
  std::vector<int> roundOrder;
  std::unique_ptr<RunContext> roundContext;
  std::vector<KvRequestRecord> rows;  // decode ranks: one per measured request
  std::unique_ptr<KvMemory> memory;
  std::unique_ptr<DecodeLedger> ledger;
  std::unique_ptr<KvWorker> worker;
  // The requests measured so far, also after a failure part way.
  std::vector<output::KindTable> tablesSoFar() const override { return {output::KindTable::of("requests", rows)}; }
};

const char* memoryPathOf(const Shape& s) {
  switch (s.memoryMode()) {
    case KvMemoryMode::hostPool:
      return "host";
    case KvMemoryMode::gpuViaHost:
      return "gpu-via-pinned-host";
    case KvMemoryMode::gpuDirect:
      return "gpu-direct";
  }
  return "?";
}

// Whether the scenario's ranks all take part: one-sided regions are exposed
// collectively over every rank of the transport.
bool everyRankMeasures(const scenario::TestSpec& spec, int worldSize) {
  const int used = spec.ranks > 0 ? std::min(spec.ranks, worldSize) : worldSize;
  const bool allCanaries =
      (spec.canaries <= 0 || spec.canaries >= used) && (spec.canaryFraction <= 0 || spec.canaryFraction >= 1);
  return used == worldSize && allCanaries;
}

// A rank without a role in a rotation round waits for the round's end. Where
// waits yield (ranks outnumber the CPUs) it sleeps between polls: six ranks
// yielding on two cores still take a share of the CPUs the measuring pair's
// transfers need. Elsewhere it is the ordinary barrier. Untimed.
void waitOutRound(const RunContext& ctx) {
  if (runtime::waitPolicy() != runtime::WaitPolicy::yield) return ctx.group.barrier(ctx.deadline);
  MPI_Request request;
  runtime::checkMpi(MPI_Ibarrier(ctx.group.handle(), &request), "MPI_Ibarrier");
  for (;;) {
    int done = 0;
    runtime::checkMpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test (the end of a rotation round)");
    if (done) return;
    if (ctx.deadline.expired()) ctx.deadline.fail("the end of a KV rotation round");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// --- The kind --------------------------------------------------------------

class KvPushKind final : public Kind {
 public:
  std::string name() const override { return "kvpush"; }
  using enum output::AttributeType;
  using enum output::Presence;
  // Its own attributes of /tests/NNNN; the schema's entry is printed from them.
  static constexpr output::DeclaredAttribute attributes_[] = {{"block_bytes", integer},
                                                              {"block_tokens", integer},
                                                              {"blocks_per_request", integer},
                                                              {"compute_per_layer_s", real},
                                                              {"copy_ns_mean", real},
                                                              {"decode_ranks", integer},
                                                              {"direction", text},
                                                              {"gather_ns_mean", real},
                                                              {"in_flight", integer},
                                                              {"in_order_posting", integer},
                                                              {"kv_gbps_aggregate", real},
                                                              {"kv_gbps_per_request", real},
                                                              {"kv_layout", text},
                                                              {"loop", text},
                                                              {"memory_path", text},
                                                              {"messages_per_request", integer},
                                                              {"model", text},
                                                              {"one_sided", integer},
                                                              {"pool_blocks", integer},
                                                              {"prefill_ranks", integer},
                                                              {"prompt_tokens", integer},
                                                              {"rate_per_s", real},
                                                              {"requests_measured", integer},
                                                              {"requests_per_prefill", integer},
                                                              {"requests_verified", integer},
                                                              {"role_rotation", text},
                                                              {"rotation_cycles", integer},
                                                              {"rotation_rounds", integer},
                                                              {"scatter_ns_mean", real},
                                                              {"strategy", text},
                                                              {"tp", integer},
                                                              {"warmup_requests", integer}};
  output::DeclaredAttributes declaredAttributes() const override { return attributes_; }
  std::string summary() const override {
    return "KV-cache transfer from prefill to decode ranks (per-block, staged, layer-stream; push, push-put, pull), "
           "every request verified";
  }

  scenario::KindRules rules() const override {
    scenario::KindRules r;
    r.extraKeys = {"model",           "parallel",          "block_tokens", "prompt_tokens", "strategy",
                   "direction",       "prefill_ranks",     "decode_ranks", "loop",          "requests",
                   "warmup_requests", "compute_per_layer", "pool_blocks",  "role_rotation", "rotation_cycles"};
    r.minRanks = 2;
    r.parse = [](const scenario::TestSpec& spec, const scenario::TestSource& source) {
      auto config = std::make_shared<KvPushConfig>(readKvPushConfig(spec, source));
      const KvPushConfig& c = *config;
      const int worldSize = source.worldSize;
      scenario::ParamReader p(spec, source);
      const auto can = transport::transportCapabilities(spec.transport);
      const char* direction = directionName(c.direction);
      // Congestors do not run the kind, so they cannot join the collective
      // exposure of the pools a one-sided direction needs.
      if (isOneSided(c.direction) && hasCongestedCondition(spec))
        p.fail("conditions", std::string("'direction: ") + direction +
                                 "' exposes every rank's KV pool to the "
                                 "others, which takes every rank of the run, and a neighbour condition needs ranks "
                                 "that make the load instead: run it quiet (drop 'conditions'), or measure the push "
                                 "under load with 'direction: push'");
      if ((c.direction == Direction::pull && !can.get) || (c.direction == Direction::pushPut && !can.put))
        p.fail("direction", std::string("'direction: ") + direction + "' needs one-sided " +
                                (c.direction == Direction::pull ? "get" : "put") + ", which transport '" +
                                spec.transport +
                                "' does not offer; use transport: ucx (or verbs), or 'direction: push'");
      if (isOneSided(c.direction) && spec.memory == "cuda")
        p.fail("direction", std::string("'direction: ") + direction +
                                "' runs on host memory only so far (memory: host or cuda-host); memory: cuda takes "
                                "'direction: push'");
      if (isOneSided(c.direction) && !everyRankMeasures(spec, worldSize))
        p.fail("direction", std::string("'direction: ") + direction +
                                "' exposes every rank's KV pool to the others, "
                                "which takes all " +
                                std::to_string(worldSize) +
                                " ranks of the run: drop 'ranks' and "
                                "'roles: {canaries}' from this test (spare ranks stay idle)");
      if (can.inOrder && spec.memory != "cuda")
        p.fail("memory", "kvpush over transport '" + spec.transport +
                             "' keeps its KV in GPU memory: give "
                             "'memory: cuda' (the transport bounces only small host messages, such as the request "
                             "headers, through pinned memory)");
      if (spec.memory == "cuda" && c.strategy != Strategy::staged && !can.deviceMemory)
        p.fail("strategy",
               "kvpush with memory: cuda over transport '" + spec.transport +
                   "' runs the staged strategy "
                   "only (GPU gather, pinned host staging, GPU scatter): per-block and layer-stream messages "
                   "from device memory need a transport that addresses it (transport: " +
                   transport::transportsWith(&transport::TransportCapabilities::deviceMemory) + ")");
      return config;
    };
    return r;
  }

  InstancePlan plan(const scenario::TestInstance& instance, int) const override {
    const Shape s = shapeOf(instance);
    const auto& c = s.config;
    InstancePlan plan;
    plan.metric = Metric::bandwidth;
    plan.pattern = "kv-push";
    plan.oneSided = isOneSided(c.direction);
    // A rotating rank may decode in several rounds: at most every round's requests.
    plan.maxSamplesPerRank =
        static_cast<std::int64_t>(c.prefillRanks) *
        (c.rotation == RoleRotation::ring ? std::int64_t{c.requestsPerRound()} * c.rounds() : std::int64_t{c.requests});
    // The larger of the two roles: pool plus per-lane staging.
    const auto lanes = static_cast<std::int64_t>(c.inFlight) * std::max(1, c.prefillRanks);
    plan.bufferBytesPerRank = static_cast<std::int64_t>(s.layout.poolBytes() + s.stagingBytes * lanes);
    plan.description = std::string(strategyName(c.strategy)) + " " + directionName(c.direction) + ", " + c.model.name +
                       " tp " + std::to_string(c.parallel.tp) + ", " + std::to_string(s.tokens) + "-token prompts (" +
                       std::to_string(s.blocks) + " blocks, " + std::to_string(s.messages) + " messages), " +
                       std::to_string(c.prefillRanks) + " prefill -> " + std::to_string(c.decodeRanks) + " decode, " +
                       (c.loop == LoopMode::closed ? "closed loop, " + std::to_string(c.inFlight) + " in flight"
                                                   : "open loop, " + std::to_string(c.ratePerSecond) + " req/s") +
                       (c.rotation == RoleRotation::ring ? ", roles rotating over " + std::to_string(c.measuringRanks) +
                                                               " ranks in " + std::to_string(c.rounds()) + " rounds"
                                                         : "");
    return plan;
  }

  Outcome run(RunContext& ctx) const override {
    auto* state = &ctx.adopt(std::make_unique<KvRunState>());
    state->shape = shapeOf(ctx.instance);
    Shape& s = state->shape;
    auto& t = ctx.transport;
    s.deviceDirect = s.gpuPool && t.capabilities().deviceMemory;
    // --self-test kv-in-order: post as a transport that matches in posting
    // order (NCCL) needs, over a tag-matching one, so the CPU tests run that
    // bookkeeping (tests/mpi/kv_push.sh).
    s.inOrder = t.capabilities().inOrder || ctx.selfTest.kvInOrder;
    const auto& c = s.config;
    checkTransport(ctx, s);
    const bool oneSided = isOneSided(c.direction);
    const int me = ctx.group.rank();
    const int measuring = static_cast<int>(ctx.participants.size());
    const bool rotating = c.rotation == RoleRotation::ring;
    const int rounds = rotating ? ringRoundsOf(c.prefillRanks, measuring) * c.rotationCycles : 1;
    // Every rank that takes a role in some round holds a pool; a rotating rank
    // decodes in some round, so its staging has the decode side's slots.
    if (rotating || me < c.participants())
      state->memory =
          std::make_unique<KvMemory>(s.memoryMode(), s.geometry, s.blocks, s.stagingBytes,
                                     stagingSlotsOf(c, rotating || me >= c.prefillRanks), ctx.buffers, s.pinnedHost);
    KvRegions regions;
    if (oneSided) regions = exposeRegions(ctx, *state);
    for (int round = 0; round < rounds; ++round) {
      // Roles by position in this round's order: [0, P) prefill, then D decode.
      state->roundShape = s;
      auto& rs = state->roundShape;
      int role = me;
      if (rotating) {
        rs.config.requests = c.requestsPerRound();
        rs.requestIdBase = static_cast<std::uint64_t>(round) * static_cast<std::uint64_t>(c.prefillRanks) *
                           static_cast<std::uint64_t>(rs.config.totalRequestsPerPrefill());
        state->roundOrder.clear();
        for (const int at : rotatedPositionsOf(round, c.prefillRanks, c.decodeRanks, measuring))
          state->roundOrder.push_back(ctx.participants.at(static_cast<std::size_t>(at)));
        state->roundContext = std::make_unique<RunContext>(
            RunContext{ctx.world, ctx.group, state->roundOrder, ctx.transport, ctx.identity, ctx.clock, ctx.instance,
                       ctx.plan, ctx.samples, ctx.buffers, ctx.runCache, ctx.verdict, ctx.state, ctx.deadline, ctx.seed,
                       ctx.caseSeed, ctx.selfTest});
        role = roleInRoundOf(me, round, c.prefillRanks, c.decodeRanks, measuring);
      }
      RunContext& rctx = rotating ? *state->roundContext : ctx;
      const auto& rc = rs.config;
      const bool prefill = role < rc.prefillRanks;
      const bool decode = !prefill && role < rc.participants();
      state->worker.reset();
      state->ledger.reset();
      if (decode)
        state->ledger = std::make_unique<DecodeLedger>(rctx, rs, *state->memory, state->rows,
                                                       measuredRequestsOf(rc, role - rc.prefillRanks));
      if (prefill)
        state->worker = oneSided ? makeOneSidedPrefill(rctx, rs, *state->memory, regions, role)
                                 : makePushPrefill(rctx, rs, *state->memory, role);
      if (decode)
        state->worker =
            oneSided ? makeOneSidedDecode(rctx, rs, *state->memory, regions, role - rc.prefillRanks, *state->ledger)
                     : makePushDecode(rctx, rs, *state->memory, role - rc.prefillRanks, *state->ledger);
      // After a failure the regions stay exposed (withdrawing is collective and
      // the peers may be gone); the transport unmaps them when it closes.
      ctx.group.barrier(ctx.deadline);  // pools allocated everywhere before the first message
      if (state->worker) {
        state->worker->run();
        ctx.group.barrier(ctx.deadline);
      } else {
        waitOutRound(ctx);
      }
    }
    if (oneSided) {
      if (regions.staging >= 0) t.withdrawRegion(regions.staging, ctx.deadline);
      t.withdrawRegion(regions.pool, ctx.deadline);
    }
    Outcome outcome;
    outcome.attributes = attributesOf(ctx, s, state->rows);
    return outcome;
  }

  std::vector<output::KindTable> tables() const override {
    return {output::KindTable::of<KvRequestRecord>("requests")};
  }

 private:
  // The loader refuses what the transport cannot do (the parse step above); this
  // catches a transport opened under another name than the scenario's.
  static void checkTransport(const RunContext& ctx, const Shape& s) {
    const auto& t = ctx.transport;
    const auto& c = s.config;
    const std::string name(t.name());
    if (c.direction == Direction::pull && !t.capabilities().get)
      throw UsageError("kvpush: 'direction: pull' needs one-sided get; transport '" + name + "' has none");
    if (c.direction == Direction::pushPut && !t.capabilities().put)
      throw UsageError("kvpush: 'direction: push-put' needs one-sided put; transport '" + name + "' has none");
    if (isOneSided(c.direction) && ctx.group.size() != ctx.world.size())
      throw UsageError("kvpush: one-sided directions need every rank of the run measuring");
    if (s.memoryMode() == KvMemoryMode::gpuViaHost && c.strategy != Strategy::staged)
      throw UsageError("kvpush: memory: cuda over transport '" + name + "' runs the staged strategy only");
  }

  // Collective over every rank of the transport: the pool, then (staged) the
  // staging area; ranks without a role expose a placeholder.
  static KvRegions exposeRegions(RunContext& ctx, KvRunState& state) {
    auto& t = ctx.transport;
    const bool staged = state.shape.stagingBytes > 0;
    KvRegions regions;
    if (state.memory) {
      const auto kind = state.memory->transportMemory();
      regions.pool = t.exposeRegion(state.memory->pool(), state.memory->poolBytes(), kind, ctx.deadline);
      if (staged)
        regions.staging =
            t.exposeRegion(state.memory->stagingArea(), state.memory->stagingAreaBytes(), kind, ctx.deadline);
    } else {
      constexpr std::size_t placeholder = 64;
      regions.pool =
          t.exposeRegion(ctx.buffers.allocate(placeholder), placeholder, transport::MemoryKind::host, ctx.deadline);
      if (staged)
        regions.staging =
            t.exposeRegion(ctx.buffers.allocate(placeholder), placeholder, transport::MemoryKind::host, ctx.deadline);
    }
    return regions;
  }

  output::Attributes attributesOf(RunContext& ctx, const Shape& s, const std::vector<KvRequestRecord>& rows) const {
    const auto& c = s.config;
    std::int64_t bytes = 0, transferNs = 0, gatherNs = 0, scatterNs = 0, copyNs = 0, verified = 0;
    std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
    for (const auto& r : rows) {
      bytes += r.bytes;
      transferNs += r.t_done_ns - r.t_start_ns;
      gatherNs += r.gather_ns;
      scatterNs += r.scatter_ns;
      copyNs += r.copy_ns;
      verified += r.verified;
      first = std::min(first, r.t_start_ns);
      last = std::max(last, r.t_done_ns);
    }
    const auto& w = ctx.group;
    const auto& d = ctx.deadline;
    const auto requests = w.allreduceSum(static_cast<std::int64_t>(rows.size()), d);
    bytes = w.allreduceSum(bytes, d);
    transferNs = w.allreduceSum(transferNs, d);
    gatherNs = w.allreduceSum(gatherNs, d);
    scatterNs = w.allreduceSum(scatterNs, d);
    copyNs = w.allreduceSum(copyNs, d);
    verified = w.allreduceSum(verified, d);
    first = w.allreduceMin(first, d);
    last = w.allreduceMax(last, d);
    output::Attributes a;
    a.emplace_back("strategy", std::string(strategyName(c.strategy)));
    a.emplace_back("direction", std::string(directionName(c.direction)));
    a.emplace_back("one_sided", std::int64_t{isOneSided(c.direction) ? 1 : 0});
    a.emplace_back("memory_path", std::string(memoryPathOf(s)));
    a.emplace_back("in_order_posting", std::int64_t{s.inOrder ? 1 : 0});
    a.emplace_back("model", c.model.name);
    a.emplace_back("tp", std::int64_t{c.parallel.tp});
    a.emplace_back("kv_layout", s.layout.describe());
    a.emplace_back("block_tokens", std::int64_t{c.blockTokens});
    a.emplace_back("block_bytes", static_cast<std::int64_t>(s.geometry.blockBytes));
    a.emplace_back("pool_blocks", static_cast<std::int64_t>(s.layout.numBlocks));
    a.emplace_back("prompt_tokens", s.tokens);
    a.emplace_back("blocks_per_request", static_cast<std::int64_t>(s.blocks));
    a.emplace_back("messages_per_request", static_cast<std::int64_t>(s.messages));
    a.emplace_back("prefill_ranks", std::int64_t{c.prefillRanks});
    a.emplace_back("decode_ranks", std::int64_t{c.decodeRanks});
    a.emplace_back("loop", std::string(c.loop == LoopMode::closed ? "closed" : "open"));
    a.emplace_back("in_flight", std::int64_t{c.inFlight});
    a.emplace_back("rate_per_s", c.ratePerSecond);
    a.emplace_back("compute_per_layer_s", c.computePerLayerSeconds);
    a.emplace_back("role_rotation", std::string(rotationName(c.rotation)));
    a.emplace_back("rotation_cycles", std::int64_t{c.rotationCycles});
    a.emplace_back("rotation_rounds", std::int64_t{c.rounds()});
    // Per prefill rank and round (the rounds add up to requests_measured).
    a.emplace_back("requests_per_prefill",
                   std::int64_t{c.rotation == RoleRotation::ring ? c.requestsPerRound() : c.requests});
    a.emplace_back("warmup_requests", std::int64_t{c.warmupRequests});
    a.emplace_back("requests_measured", requests);
    a.emplace_back("requests_verified", verified);
    // bytes / ns = GB/s. Aggregate: all measured bytes over the span from the
    // first start to the last completion; per request: mean of its own rate.
    a.emplace_back("kv_gbps_aggregate",
                   last > first ? static_cast<double>(bytes) / static_cast<double>(last - first) : 0.0);
    a.emplace_back("kv_gbps_per_request",
                   transferNs > 0 ? static_cast<double>(bytes) / static_cast<double>(transferNs) : 0.0);
    a.emplace_back("gather_ns_mean", requests ? static_cast<double>(gatherNs) / static_cast<double>(requests) : 0.0);
    a.emplace_back("scatter_ns_mean", requests ? static_cast<double>(scatterNs) / static_cast<double>(requests) : 0.0);
    a.emplace_back("copy_ns_mean", requests ? static_cast<double>(copyNs) / static_cast<double>(requests) : 0.0);
    return a;
  }
};

}  // namespace

std::unique_ptr<Kind> makeKvPushKind() { return std::make_unique<KvPushKind>(); }

}  // namespace fabscope::suite
