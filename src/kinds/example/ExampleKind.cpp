// The example kind, the template of a new kind family (docs/architecture.md,
// "What each change touches"), small on purpose and run by the tests
// (tests/mpi/example_kind.sh), like IOR's DUMMY backend. A token of the
// instance's size goes round a ring of the group's ranks over the run's
// transport, `iterations` laps after `warmup` laps. Each hop is one sample on
// the sending rank (peer: its successor): the token out and the receiver's
// 4-byte acknowledgement back, one round trip on one clock. The receiver
// acknowledges first and then checks every byte against the lap's pattern
// before it passes the token on. Rank 0 of the group derives the attributes.
#include <algorithm>
#include <map>
#include <vector>

#include "kinds/Kind.hpp"
#include "stats/Statistics.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::suite {
namespace {

constexpr int tokenTag = 41, ackTag = 42;

// What the parse step made of the test's keys (none of its own yet).
struct ExampleConfig final : scenario::KindConfig {};

class ExampleKind final : public Kind {
 public:
  std::string name() const override { return "example"; }
  using enum output::AttributeType;
  using enum output::Presence;
  // Its own attributes of /tests/NNNN; the schema's entry is printed from them.
  static constexpr output::DeclaredAttribute attributes_[] = {
      {"ring_ranks", integer},
      {"hop_p50_ns", real, always, "every hop's samples together: token out, acknowledgement back"},
      {"slowest_hop_rank", integer, always, "the sender of the hop with the highest median"},
      {"slowest_hop_p50_ns", real}};
  output::DeclaredAttributes declaredAttributes() const override { return attributes_; }
  std::string summary() const override { return "a token passed round a ring of ranks (the template of a new kind)"; }

  // Its keys (none of its own here; a kind with keys lists them in extraKeys and
  // reads them with scenario::ParamReader) and what they may be, checked once at
  // load with the test's position; plan and run read the config (configOf).
  scenario::KindRules rules() const override {
    scenario::KindRules r;
    r.minRanks = 2;
    r.parse = [](const scenario::TestSpec& spec, const scenario::TestSource&) {
      const auto where = spec.at + ": test '" + spec.name + "': ";
      if (spec.memory != "host") throw scenario::ScenarioError(where + "kind example passes host memory only");
      if (!transport::transportCapabilities(spec.transport).hostMemory)
        throw scenario::ScenarioError(where + "transport '" + spec.transport + "' moves no host memory, which kind " +
                                      "example passes; use transport: mpi");
      return std::make_shared<const ExampleConfig>();
    };
    return r;
  }

  InstancePlan plan(const scenario::TestInstance& instance, int worldSize) const override {
    const auto& spec = *instance.spec;
    const int ranks = measuringRanksOf(spec, worldSize, 2);
    InstancePlan plan;
    plan.metric = Metric::latency;
    plan.pattern = "ring";
    plan.maxSamplesPerRank = spec.iterations;
    plan.bufferBytesPerRank = 2 * instance.bytes;
    plan.description = "a token round a ring of " + std::to_string(ranks) + " ranks, one sample per hop";
    return plan;
  }

  Outcome run(RunContext& ctx) const override {
    const int n = ctx.group.size();
    const int index = ctx.group.rank();
    const int next = ctx.participants[static_cast<std::size_t>((index + 1) % n)];
    const int previous = ctx.participants[static_cast<std::size_t>((index + n - 1) % n)];
    const auto bytes = static_cast<std::size_t>(ctx.instance.bytes);
    std::byte* token = ctx.buffers.allocate(bytes);
    std::byte* received = ctx.buffers.allocate(bytes);
    const auto& spec = *ctx.instance.spec;
    ctx.group.barrier(ctx.deadline);
    for (int lap = 0; lap < spec.warmup + spec.iterations; ++lap) {
      const auto lapSeed = ctx.seed + static_cast<std::uint64_t>(lap);
      if (index == 0) {
        fillPattern(token, bytes, lapSeed, MemoryKind::host);
        passOn(ctx, token, next, lap);
        receive(ctx, received, previous, lapSeed);
      } else {
        receive(ctx, received, previous, lapSeed);
        passOn(ctx, received, next, lap);
      }
    }
    Outcome outcome;
    outcome.attributes = summarize(ctx);
    return outcome;
  }

 private:
  // One hop out: the token to `next` and its acknowledgement back, timed. With
  // --self-test corrupt-sender=N, rank N flips a byte of every token it passes on.
  static void passOn(RunContext& ctx, std::byte* token, int next, int lap) {
    auto& t = ctx.transport;
    const auto bytes = static_cast<std::size_t>(ctx.instance.bytes);
    if (ctx.selfTest.corruptSender == ctx.world.rank()) corruptOneByte(token, bytes, MemoryKind::host);
    std::int32_t ack = 0;
    t.reserve(2);
    t.postRecv(1, next, ackTag, &ack, sizeof ack);
    const auto t0 = runtime::monotonicNow();
    t.postSend(0, next, tokenTag, token, bytes);
    t.waitSlots(0, 2, ctx.deadline);
    const auto t1 = runtime::monotonicNow();
    const int warmup = ctx.instance.spec->warmup;
    if (lap >= warmup)
      ctx.samples.record(ctx.world.rank(), lap - warmup, next, static_cast<std::int64_t>(bytes), t0, t1);
  }

  // One hop in: the token from `previous`, acknowledged, then every byte checked.
  static void receive(RunContext& ctx, std::byte* token, int previous, std::uint64_t lapSeed) {
    auto& t = ctx.transport;
    const auto bytes = static_cast<std::size_t>(ctx.instance.bytes);
    std::int32_t ack = 0;
    t.reserve(2);
    t.postRecv(0, previous, tokenTag, token, bytes);
    t.waitSlots(0, 1, ctx.deadline);
    t.postSend(1, previous, ackTag, &ack, sizeof ack);
    t.waitSlots(1, 1, ctx.deadline);
    const auto bad = verifyPattern(token, bytes, lapSeed, MemoryKind::host);
    if (bad == bytes) return;
    ctx.verdict.fail("rank " + std::to_string(ctx.world.rank()) + ": the token from rank " + std::to_string(previous) +
                     " is wrong at byte " + std::to_string(bad));
    // Repaired before it goes on, so the next rank's check blames no one for this hop.
    fillPattern(token, bytes, lapSeed, MemoryKind::host);
  }

  // Rank 0 of the group: the hops' medians from every rank's samples.
  static output::Attributes summarize(RunContext& ctx) {
    std::vector<int> counts;
    const auto all = ctx.group.gatherBytes(std::as_bytes(ctx.samples.used()), 0, counts, ctx.deadline);
    if (ctx.group.rank() != 0) return {};
    const auto* rows = reinterpret_cast<const output::SampleRecord*>(all.data());
    const std::size_t count = all.size() / sizeof(output::SampleRecord);
    std::vector<double> every;
    std::map<int, std::vector<double>> bySender;
    for (std::size_t i = 0; i < count; ++i) {
      const double ns = static_cast<double>(rows[i].t_done_ns - rows[i].t_post_ns);
      every.push_back(ns);
      bySender[rows[i].rank].push_back(ns);
    }
    int slowest = -1;
    double slowestP50 = 0;
    for (auto& [rank, hops] : bySender) {
      const double p50 = stats::summarize(hops).p50;
      if (slowest < 0 || p50 > slowestP50) slowest = rank, slowestP50 = p50;
    }
    return {{"ring_ranks", std::int64_t{ctx.group.size()}},
            {"hop_p50_ns", stats::summarize(every).p50},
            {"slowest_hop_rank", std::int64_t{slowest}},
            {"slowest_hop_p50_ns", slowestP50}};
  }
};

}  // namespace

std::unique_ptr<Kind> makeExampleKind() { return std::make_unique<ExampleKind>(); }

}  // namespace fabscope::suite
