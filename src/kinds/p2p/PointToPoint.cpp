#include "kinds/p2p/PointToPoint.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "fabscope/BuildConfig.hpp"
#include "runtime/Clock.hpp"
#include "runtime/Timestamp.hpp"
#include "scenario/TestSource.hpp"
#include "scenario/Units.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::suite {
namespace {

// Receive buffers beyond this are reused slice by slice (window x size can be large).
constexpr std::size_t maxReceiveBytes = 64u << 20;

std::uint64_t patternSeed(std::uint64_t runSeed, int sender) {
  return runSeed * 1315423911u + static_cast<std::uint64_t>(sender) + 1;
}

scenario::ScenarioError memoryError(const scenario::TestSpec& spec, const std::string& why) {
  return scenario::ScenarioError(spec.where("memory") + ": test '" + spec.name + "': " + why);
}

}  // namespace

void checkMemoryAndTransport(const scenario::TestSpec& spec) {
  const auto caps = transport::transportCapabilities(spec.transport);
  if (spec.memory != "host" && !FABSCOPE_HAVE_CUDA)
    throw memoryError(spec, "memory '" + spec.memory + "' needs a build with CUDA; use memory: host");
  if (spec.memory == "cuda" && !caps.deviceMemory)
    throw memoryError(spec, "memory 'cuda' over transport '" + spec.transport +
                                "': that transport cannot "
                                "move GPU memory here (not CUDA-aware); use transport: " +
                                transport::transportsWith(&transport::TransportCapabilities::deviceMemory));
  if (spec.memory == "host" && !caps.hostMemory)
    throw memoryError(spec, "transport '" + spec.transport +
                                "' moves GPU-addressable memory only; use memory: cuda "
                                "(device) or cuda-host (pinned)");
}

scenario::KindRules PointToPointKind::rules() const {
  scenario::KindRules r;
  r.extraKeys = {"pattern", "all_pairs", "sampling", "hierarchical", corruptForTestKey};
  if (usesWindow()) r.extraKeys.insert(r.extraKeys.end(), {"window", "receive_buffers"});
  r.minRanks = 2;
  r.parse = [this](const scenario::TestSpec& spec, const scenario::TestSource& source) {
    scenario::ParamReader p(spec, source);
    checkMemoryAndTransport(spec);
    auto c = std::make_shared<PointToPointConfig>();
    c->pattern = patternFromName(p.choice("pattern", patternNames(), "pairs"));
    c->corruptForTest = p.choice(corruptForTestKey, {"true", "false"}, "false") == "true";
    c->window = usesWindow() ? static_cast<int>(p.integer("window", defaultWindow, 1, 1024)) : 1;
    c->oneReceiveBuffer = usesWindow() && p.choice("receive_buffers", {"distinct", "one"}, "distinct") == "one";
    auto ap = p.mapping("all_pairs", {"mode", "retest_worst"});
    c->serial = ap.choice("mode", {"parallel", "serial"}, "parallel") == "serial";
    c->retestWorst = static_cast<int>(ap.integer("retest_worst", 3, 0, 1'000'000));
    auto sampling = p.mapping("sampling", {"draws", "seed"});
    c->patternOptions.draws = static_cast<int>(sampling.integer("draws", 4, 1, 100'000));
    c->patternOptions.seed = static_cast<std::uint64_t>(sampling.integer("seed", 1, 0, INT64_MAX));
    auto h = p.mapping("hierarchical", {"group"});
    c->patternOptions.groupByLeaf = h.choice("group", {"leaf", "node"}, "leaf") == "leaf";
    c->patternOptions.bothDirections = oneWay();
    return c;
  };
  return r;
}

namespace {

// Before a retested pair's second visit: wait until kRevisitGapNs has passed
// since its first visit ended on this rank's clock (both its ranks do; the
// measurement's own handshake lines them up again).
void waitOutRevisitGap(const std::vector<std::pair<RankPair, runtime::Nanoseconds>>& firstVisitEnded,
                       const RankPair& pair) {
  for (const auto& [visited, ended] : firstVisitEnded) {
    if (!(visited == pair)) continue;
    const runtime::Nanoseconds left = ended + kRevisitGapNs - runtime::monotonicNow();
    if (left > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(left));
    return;
  }
}

// The pattern's rounds and pass in `part` and `plan`, and the plan's
// description of them. The pattern's parameters only (one-way kinds:
// bothDirections, set by parse): counting its rounds generates them once, one
// round at a time (time O(pairs), memory O(ranks)); no rank holds them all.
std::string planRounds(const PointToPointConfig& c, const std::shared_ptr<RankLayout>& layout, int ranks,
                       InstancePlan& plan, PairPlan& part) {
  std::string detail;
  const auto roundsText = [&] { return std::to_string(part.rounds.rounds()) + " rounds"; };
  switch (c.pattern) {
    case Pattern::pairs:
      part.rounds = PairRounds::ofPattern(Pattern::pairs, layout, c.patternOptions);
      plan.pass = "parallel";
      detail = "pairs i<->i+" + std::to_string(ranks / 2) + ", " + std::to_string(ranks / 2) + " pairs at once";
      break;
    case Pattern::allPairs: {
      part.rounds = PairRounds::ofPattern(Pattern::allPairs, layout, c.patternOptions, c.serial);
      part.allPairs = true;
      if (c.serial) {
        plan.pass = "serial";
        detail = "all-pairs, one pair at a time (" + roundsText() + ")";
      } else {
        plan.pass = "parallel";
        part.retestWorst = c.retestWorst;
        detail = "all-pairs, " + roundsText() + ", every rank busy";
        if (part.retestWorst > 0) detail += "; then the " + std::to_string(part.retestWorst) + " worst pairs serially";
      }
      break;
    }
    default: {
      part.rounds = PairRounds::ofPattern(c.pattern, layout, c.patternOptions);
      plan.pass = "parallel";
      const std::string draws = std::to_string(c.patternOptions.draws);
      const std::string seed = ", seed " + std::to_string(c.patternOptions.seed);
      switch (c.pattern) {
        case Pattern::rails:
          detail = "rails: all-pairs within each local rank across " + std::to_string(layout->nodes()) + " nodes";
          break;
        case Pattern::crossRail:
          detail = "cross-rail: " + draws + " random matchings across nodes and rails" + seed;
          break;
        case Pattern::ring:
          detail = "ring: " + draws + " random rings" + seed;
          break;
        case Pattern::bisection:
          detail = "bisection: " + draws + " random splits in two halves" + seed;
          break;
        default:
          detail = std::string("hierarchical: all-pairs within each ") +
                   (c.patternOptions.groupByLeaf ? "leaf" : "node") + ", then " + draws +
                   " random matchings between them" + seed;
      }
      detail += ", " + roundsText();
    }
  }
  return detail;
}

}  // namespace

InstancePlan PointToPointKind::plan(const scenario::TestInstance& instance, int worldSize) const {
  // Without hosts every rank is a node of its own, unlabelled.
  return planOn(instance, WorldLayout::uniform(worldSize, 1, 0, 0));
}

InstancePlan PointToPointKind::planOn(const scenario::TestInstance& instance, const WorldLayout& world) const {
  const auto& spec = *instance.spec;
  const auto& c = scenario::configOf<PointToPointConfig>(spec);
  InstancePlan plan;
  plan.metric = metric();
  plan.sampleDivisor = sampleDivisor();
  plan.window = c.window;
  plan.pattern = patternName(c.pattern);
  plan.batchClockReads = 2;  // t0 and t1 of every iteration (measurePair of each kind)
  auto pairs = std::make_unique<PairPlan>();
  auto& part = *pairs;
  plan.part.reset(std::move(pairs));
  const int ranks = measuringRanksOf(spec, world.size(), 2);
  const bool followsTopology = c.pattern != Pattern::pairs && c.pattern != Pattern::allPairs;
  // The measuring ranks in role order, as the run will pick them: spread and
  // packed depend on the hosts only; a random placement on the run's seed,
  // unknown here, so a pattern that follows the topology cannot use it.
  if (followsTopology && spec.placement == "random")
    throw scenario::ScenarioError(spec.where("roles") + ": test '" + spec.name + "': pattern '" + plan.pattern +
                                  "' follows the topology and needs the measuring ranks known at load; placement "
                                  "random is drawn at run time (use placement: spread or packed)");
  const auto roles = assignRoles(roleSpecOf(spec), world.hostOfRank, 2, hasCongestedCondition(spec), 0);
  auto layout = std::make_shared<RankLayout>(groupLayout(world, roles.canaries));
  if (layout->size() != ranks) *layout = RankLayout::uniform(ranks, 1);  // roles and count disagree: no levels
  const auto unfit = patternUnfit(c.pattern, *layout, c.patternOptions);
  if (!unfit.empty()) throw scenario::ScenarioError(spec.where("pattern") + ": test '" + spec.name + "': " + unfit);
  const std::string detail = planRounds(c, layout, ranks, plan, part);
  plan.maxSamplesPerRank = part.rounds.busiestRankRounds() * spec.iterations;
  const auto receive =
      c.oneReceiveBuffer
          ? static_cast<std::size_t>(instance.bytes)
          : std::min<std::size_t>(static_cast<std::size_t>(instance.bytes) * static_cast<std::size_t>(plan.window),
                                  std::max<std::size_t>(maxReceiveBytes, static_cast<std::size_t>(instance.bytes)));
  plan.bufferBytesPerRank = instance.bytes + static_cast<std::int64_t>(receive);
  plan.description = detail + (usesWindow() ? ", window " + std::to_string(plan.window) : "");
  return plan;
}

Outcome PointToPointKind::run(RunContext& ctx) const {
  const int me = ctx.world.rank();
  const auto bytes = static_cast<std::size_t>(ctx.instance.bytes);
  PairBuffers buffers;
  buffers.sliceBytes = bytes;
  const std::size_t wanted = bytes * static_cast<std::size_t>(ctx.plan.window);
  const bool oneBuffer = scenario::configOf<PointToPointConfig>(*ctx.instance.spec).oneReceiveBuffer;
  buffers.slices = oneBuffer                                    ? 1
                   : wanted <= std::max(maxReceiveBytes, bytes) ? static_cast<std::size_t>(ctx.plan.window)
                                                                : std::max<std::size_t>(1, maxReceiveBytes / bytes);
  // This rank's rounds only (O(own pairs)), generated from the plan's
  // parameters; in group indices, and the transport needs world ranks.
  const auto& pairPlan = pairPlanOf(ctx.plan);
  auto mine = pairPlan.rounds.roundsOf(ctx.group.rank());
  std::vector<bool> controlPair(mine.size(), false);
  for (std::size_t i = 0; i < mine.size(); ++i)
    controlPair[i] = std::find(pairPlan.controlPairs.begin(), pairPlan.controlPairs.end(), mine[i].second) !=
                     pairPlan.controlPairs.end();
  const std::vector<bool> secondVisit = secondVisits(mine, pairPlan.revisitedPairs);
  std::vector<std::pair<RankPair, runtime::Nanoseconds>> firstVisitEnded;
  const auto mineInGroup = mine;
  for (auto& [round, pair] : mine)
    pair = {ctx.participants[static_cast<std::size_t>(pair.initiator)],
            ctx.participants[static_cast<std::size_t>(pair.responder)]};
  const auto memory = memoryKindOf(ctx.instance.spec->memory);
  if (!mine.empty()) {
    buffers.send = ctx.buffers.allocate(bytes, memory);
    buffers.recvBytes = bytes * buffers.slices;
    buffers.recv = ctx.buffers.allocate(buffers.recvBytes, memory);
    fillPattern(buffers.send, bytes, patternSeed(ctx.seed, me), memory);
    if (scenario::configOf<PointToPointConfig>(*ctx.instance.spec).corruptForTest || ctx.selfTest.corruptSender == me)
      corruptOneByte(buffers.send, bytes, memory);
  }
  ctx.transport.reserve(2 * ctx.plan.window + 2);

  std::size_t next = 0;
  const RankLayout* layout = pairPlan.rounds.layout();
  for (int round = 0; round < static_cast<int>(pairPlan.rounds.rounds()); ++round) {
    // Everyone starts a round together, so pairs of one round overlap fully.
    ctx.group.barrier(ctx.deadline);
    if (next < mine.size() && mine[next].first == round) {
      const RankPair pair = mine[next].second;
      const bool control = controlPair[next];
      const bool revisit = secondVisit[next];
      const RankPair groupPair = mineInGroup[next++].second;
      const int peer = pair.initiator == me ? pair.responder : pair.initiator;
      if (revisit) waitOutRevisitGap(firstVisitEnded, groupPair);
      zeroBuffer(buffers.recv, buffers.recvBytes, memory);
      const std::size_t firstSample = ctx.samples.count();
      measurePair(ctx, pair, buffers);
      if (control) ctx.samples.flagSince(firstSample, output::sample_flags::controlPair);
      if (revisit) ctx.samples.flagSince(firstSample, output::sample_flags::retestSecondVisit);
      if (!pairPlan.revisitedPairs.empty() && !revisit)
        firstVisitEnded.emplace_back(groupPair, runtime::monotonicNow());
      if (layout)
        ctx.samples.levelSince(firstSample,
                               static_cast<std::uint8_t>(levelOf(*layout, groupPair.initiator, groupPair.responder)));
      // The bytes of the last timed iteration are still in the receive slices.
      const bool received = !oneWay() || pair.responder == me;
      if (received) {
        for (std::size_t s = 0; s < buffers.slices && s < static_cast<std::size_t>(ctx.plan.window); ++s) {
          const auto* slice = buffers.recv + s * bytes;
          const auto bad = verifyPattern(slice, bytes, patternSeed(ctx.seed, peer), memory);
          if (bad != bytes && !ctx.verdict.failed()) {
            ctx.verdict.fail(runtime::utcTimestamp(runtime::realtimeNow()) + ": rank " + std::to_string(me) +
                             ": data from rank " + std::to_string(peer) + " wrong at byte " + std::to_string(bad) +
                             " of message slot " + std::to_string(s));
          }
        }
      }
    }
  }
  ctx.group.barrier(ctx.deadline);
  Outcome outcome;
  // Where a window's messages landed: the cache behaviour, and so the
  // bandwidth, depends on it (osu_bw and ucx_perftest use one buffer).
  if (usesWindow()) outcome.attributes.emplace_back("receive_slices", static_cast<std::int64_t>(buffers.slices));
  return outcome;
}

}  // namespace fabscope::suite
