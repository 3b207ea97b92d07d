// Incast: many senders stream to one receiver at once (group index 0 receives,
// index 1 is a latency probe when there are enough ranks, the rest send).
// Samples: one per sender per iteration (send window -> receiver's ack: the
// sender's completion time, the headline numbers), the receiver's aggregate
// per iteration (flag incastReceiver), and the probe's ping-pong with the
// receiver while the incast runs (flag latencyProbe: what a latency-sensitive
// flow to the same receiver suffers). Attributes: aggregate GB/s, Jain's
// fairness across senders, probe p50/p99.
//
// The probe ends by the receiver's answer, not by a separate stop message:
// a pong that carries probeStop is the last, so neither side is left with a
// receive posted. That also suits transports that match in posting order
// (NCCL), where a stop receive posted early would take the first pong.
#include <algorithm>
#include <cstring>
#include <map>

#include "kinds/Kind.hpp"
#include "kinds/p2p/PointToPoint.hpp"
#include "runtime/Timestamp.hpp"
#include "scenario/TestSource.hpp"
#include "stats/Statistics.hpp"

namespace fabscope::suite {
namespace {

// Samples beside the headline (auxiliary bits, output::sample_flags): the
// receiver's aggregate per iteration, and the probe's ping-pong during the incast.
namespace incast_flags {
constexpr std::uint32_t receiverAggregate = 1u << 8;
constexpr std::uint32_t latencyProbe = 1u << 9;
}  // namespace incast_flags

constexpr int incastTag = 31, ackTag = 32, pingTag = 33;
// The receiver's last pong carries this value instead of 0.
constexpr std::int32_t probeStop = 1;
constexpr std::int64_t probeBytes = 8;
constexpr int maxProbeSamples = 200000;

// The keys of an incast test, read once at load.
struct IncastConfig final : scenario::KindConfig {
  int window = 8;     // messages in flight per sender
  bool probe = true;  // a latency probe to the receiver (with 3 ranks or more)
  bool corruptForTest = false;
};

class IncastKind final : public Kind {
 public:
  std::string name() const override { return "incast"; }
  using enum output::AttributeType;
  using enum output::Presence;
  // Its own attributes of /tests/NNNN; the schema's entry is printed from them.
  static constexpr output::DeclaredAttribute attributes_[] = {
      {"aggregate_gbps_min", real},
      {"aggregate_gbps_p50", real},
      {"jain_fairness", real},
      {"probe_p50_ns", real, sometimes},
      {"probe_p99_ns", real, sometimes},
      {"probe_rank", integer, sometimes, "with a probe (senders leave one rank free)"},
      {"probe_samples", integer},
      {"receiver_rank", integer},
      {"senders", integer}};
  output::DeclaredAttributes declaredAttributes() const override { return attributes_; }
  std::string summary() const override {
    return "many senders to one receiver: per-sender completion, aggregate GB/s, fairness, latency probe";
  }

  scenario::KindRules rules() const override {
    scenario::KindRules r;
    r.extraKeys = {"window", "probe", corruptForTestKey};
    r.minRanks = 2;
    r.parse = [](const scenario::TestSpec& spec, const scenario::TestSource& source) {
      scenario::ParamReader p(spec, source);
      auto c = std::make_shared<IncastConfig>();
      c->window = static_cast<int>(p.integer("window", 8, 1, 256));
      c->probe = p.choice("probe", {"true", "false"}, "true") == "true";
      c->corruptForTest = p.choice(corruptForTestKey, {"true", "false"}, "false") == "true";
      checkMemoryAndTransport(spec);
      return c;
    };
    return r;
  }

  InstancePlan plan(const scenario::TestInstance& instance, int worldSize) const override {
    const auto& spec = *instance.spec;
    const auto& c = scenario::configOf<IncastConfig>(spec);
    InstancePlan plan;
    plan.metric = Metric::latency;
    plan.pattern = "incast";
    plan.window = c.window;
    const int ranks = measuringRanksOf(spec, worldSize, 2);
    const bool probe = c.probe && ranks >= 3;
    const int senders = ranks - 1 - (probe ? 1 : 0);
    plan.maxSamplesPerRank = std::max<std::int64_t>(spec.iterations, probe ? maxProbeSamples : 0);
    plan.bufferBytesPerRank = instance.bytes * plan.window * std::max(1, senders);
    plan.description = std::to_string(senders) + " senders -> 1 receiver, window " + std::to_string(plan.window) +
                       (probe ? ", with a latency probe to the receiver" : "");
    return plan;
  }

  Outcome run(RunContext& ctx) const override {
    const int index = ctx.group.rank();
    const int n = ctx.group.size();
    const bool probe = scenario::configOf<IncastConfig>(*ctx.instance.spec).probe && n >= 3;
    const int firstSender = probe ? 2 : 1;
    const int receiver = ctx.participants[0];
    if (index == 0)
      receive(ctx, firstSender, probe);
    else if (probe && index == 1)
      runProbe(ctx, receiver);
    else
      send(ctx, receiver);
    Outcome outcome;
    outcome.attributes = summarize(ctx, firstSender, probe);
    return outcome;
  }

 private:
  void send(RunContext& ctx, int receiver) const {
    auto& t = ctx.transport;
    const auto n = static_cast<std::size_t>(ctx.instance.bytes);
    const int window = ctx.plan.window;
    const auto memory = memoryKindOf(ctx.instance.spec->memory);
    std::byte* buffer = ctx.buffers.allocate(n, memory);
    fillPattern(buffer, n, ctx.seed + static_cast<std::uint64_t>(ctx.world.rank()), memory);
    if (scenario::configOf<IncastConfig>(*ctx.instance.spec).corruptForTest ||
        ctx.selfTest.corruptSender == ctx.world.rank())
      corruptOneByte(buffer, n, memory);
    t.reserve(window + 1);
    std::int32_t ack = 0;
    const auto& spec = *ctx.instance.spec;
    const int me = ctx.world.rank();
    ctx.group.barrier(ctx.deadline);
    for (int i = 0; i < spec.warmup + spec.iterations; ++i) {
      const auto t0 = runtime::monotonicNow();
      // The ack answers the window, so it is posted after it (in-order transports pair them otherwise).
      for (int w = 0; w < window; ++w) t.postSend(w, receiver, incastTag, buffer, n);
      t.postRecv(window, receiver, ackTag, &ack, sizeof ack);
      t.waitSlots(0, window + 1, ctx.deadline);
      const auto t1 = runtime::monotonicNow();
      if (i >= spec.warmup)
        ctx.samples.record(me, i - spec.warmup, receiver, static_cast<std::int64_t>(n) * window, t0, t1);
    }
  }

  void receive(RunContext& ctx, int firstSender, bool probe) const {
    auto& t = ctx.transport;
    const auto n = static_cast<std::size_t>(ctx.instance.bytes);
    const int window = ctx.plan.window;
    const int senders = ctx.group.size() - firstSender;
    const auto memory = memoryKindOf(ctx.instance.spec->memory);
    std::byte* buffer =
        ctx.buffers.allocate(n * static_cast<std::size_t>(window) * static_cast<std::size_t>(senders), memory);
    // Slots: [0, senders*window) data, then one ack per sender, then probe ping, pong.
    const int ackBase = senders * window;
    const int pingSlot = ackBase + senders, pongSlot = pingSlot + 1;
    t.reserve(pongSlot + 1);
    std::int32_t ack = 0, ping = 0, pong = 0;
    const int probeRank = probe ? ctx.participants[1] : -1;
    bool probeDone = !probe, pongPending = false, incastDone = false;
    if (probe) t.postRecv(pingSlot, probeRank, pingTag, &ping, sizeof ping);
    // Answers a ping as soon as it is seen, so the probe measures the receiver's
    // link, not our loop; once the incast is over the next answer says stop.
    auto serveProbe = [&] {
      if (probeDone) return;
      if (pongPending && t.testSlots(pongSlot, 1)) pongPending = false;
      if (!pongPending && t.testSlots(pingSlot, 1)) {
        pong = incastDone ? probeStop : 0;
        t.postSend(pongSlot, probeRank, pingTag, &pong, sizeof pong);
        pongPending = true;
        if (incastDone)
          probeDone = true;
        else
          t.postRecv(pingSlot, probeRank, pingTag, &ping, sizeof ping);
      }
    };
    const auto& spec = *ctx.instance.spec;
    const int me = ctx.world.rank();
    ctx.group.barrier(ctx.deadline);
    for (int i = 0; i < spec.warmup + spec.iterations; ++i) {
      const auto t0 = runtime::monotonicNow();
      for (int s = 0; s < senders; ++s)
        for (int w = 0; w < window; ++w)
          t.postRecv(s * window + w, ctx.participants[static_cast<std::size_t>(firstSender + s)], incastTag,
                     buffer + (static_cast<std::size_t>(s) * window + w) * n, n);
      std::vector<bool> acked(static_cast<std::size_t>(senders), false);
      int remaining = senders;
      const runtime::watchdog::Watch watch("incast data from every sender", ctx.deadline.at(),
                                           runtime::watchdog::everyRank);
      while (remaining > 0) {
        for (int s = 0; s < senders; ++s) {
          if (acked[static_cast<std::size_t>(s)] || !t.testSlots(s * window, window)) continue;
          t.postSend(ackBase + s, ctx.participants[static_cast<std::size_t>(firstSender + s)], ackTag, &ack,
                     sizeof ack);
          acked[static_cast<std::size_t>(s)] = true;
          --remaining;
        }
        serveProbe();
        runtime::betweenPolls();
        if (ctx.deadline.expired()) ctx.deadline.fail("incast data from every sender");
      }
      const auto t1 = runtime::monotonicNow();
      t.waitSlots(ackBase, senders, ctx.deadline);
      if (i >= spec.warmup)
        ctx.samples.record(me, i - spec.warmup, -1, static_cast<std::int64_t>(n) * window * senders, t0, t1,
                           incast_flags::receiverAggregate);
    }
    // Verify what the last iteration delivered from every sender.
    for (int s = 0; s < senders && !ctx.verdict.failed(); ++s) {
      const int sender = ctx.participants[static_cast<std::size_t>(firstSender + s)];
      for (int w = 0; w < window; ++w) {
        const auto* slice = buffer + (static_cast<std::size_t>(s) * window + w) * n;
        const auto bad = verifyPattern(slice, n, ctx.seed + static_cast<std::uint64_t>(sender), memory);
        if (bad != n) {
          ctx.verdict.fail(runtime::utcTimestamp(runtime::realtimeNow()) + ": rank " + std::to_string(me) +
                           " (incast receiver): data from rank " + std::to_string(sender) + " wrong at byte " +
                           std::to_string(bad));
          break;
        }
      }
    }
    if (probe) {
      incastDone = true;
      const runtime::watchdog::Watch watch("the latency probe to finish", ctx.deadline.at());
      while (!probeDone) {
        serveProbe();
        runtime::betweenPolls();
        if (ctx.deadline.expired()) ctx.deadline.fail("the latency probe to finish");
      }
      if (pongPending) t.waitSlots(pongSlot, 1, ctx.deadline);
    }
  }

  void runProbe(RunContext& ctx, int receiver) const {
    auto& t = ctx.transport;
    t.reserve(2);
    std::int32_t ping = 0, pong = 0;
    const int me = ctx.world.rank();
    ctx.group.barrier(ctx.deadline);
    int iter = 0;
    while (pong != probeStop) {
      const auto t0 = runtime::monotonicNow();
      t.postRecv(1, receiver, pingTag, &pong, sizeof pong);
      t.postSend(0, receiver, pingTag, &ping, sizeof ping);
      t.waitSlots(0, 2, ctx.deadline);
      const auto t1 = runtime::monotonicNow();
      // The stop answer came after the incast: not a sample under load.
      if (pong != probeStop && !ctx.samples.full())
        ctx.samples.record(me, iter++, receiver, probeBytes, t0, t1, incast_flags::latencyProbe);
    }
  }

  // Rank 0 of the group (the receiver) derives the incast's own numbers.
  output::Attributes summarize(RunContext& ctx, int firstSender, bool probe) const {
    std::vector<int> counts;
    const auto all = ctx.group.gatherBytes(std::as_bytes(ctx.samples.used()), 0, counts, ctx.deadline);
    if (ctx.group.rank() != 0) return {};
    const auto* rows = reinterpret_cast<const output::SampleRecord*>(all.data());
    const std::size_t count = all.size() / sizeof(output::SampleRecord);
    std::map<int, std::pair<double, double>> perSender;  // bytes, ns
    std::vector<double> aggregate, probeLatency;
    for (std::size_t i = 0; i < count; ++i) {
      const auto& s = rows[i];
      const double d = static_cast<double>(s.t_done_ns - s.t_post_ns);
      if (s.flags & incast_flags::receiverAggregate)
        aggregate.push_back(static_cast<double>(s.bytes) / d);
      else if (s.flags & incast_flags::latencyProbe)
        probeLatency.push_back(d / 2);
      else {
        perSender[s.rank].first += static_cast<double>(s.bytes);
        perSender[s.rank].second += d;
      }
    }
    std::vector<double> senderRates;
    for (const auto& [rank, bt] : perSender) senderRates.push_back(bt.first / bt.second);
    const auto agg = stats::summarize(aggregate);
    const auto pr = stats::summarize(probeLatency);
    output::Attributes attributes = {
        {"receiver_rank", std::int64_t{ctx.participants[0]}},
        {"senders", std::int64_t{ctx.group.size() - firstSender}},
        {"aggregate_gbps_p50", agg.p50},
        {"aggregate_gbps_min", agg.min},
        {"jain_fairness", stats::jainFairness(senderRates)},
        {"probe_samples", static_cast<std::int64_t>(pr.count)},
    };
    if (probe) {
      attributes.emplace_back("probe_rank", std::int64_t{ctx.participants[1]});
      attributes.emplace_back("probe_p50_ns", pr.p50);
      attributes.emplace_back("probe_p99_ns", pr.p99);
    }
    return attributes;
  }
};

}  // namespace

std::unique_ptr<Kind> makeIncastKind() { return std::make_unique<IncastKind>(); }

}  // namespace fabscope::suite
