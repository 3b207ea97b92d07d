// Ping-pong latency: the initiator sends, the responder echoes; one sample is
// a round trip, reported as half of it (sample_divisor 2), like osu_latency.
#include "kinds/Kind.hpp"
#include "kinds/p2p/PointToPoint.hpp"

namespace fabscope::suite {
namespace {

class LatencyKind final : public PointToPointKind {
 public:
  std::string name() const override { return "latency"; }
  using enum output::AttributeType;
  using enum output::Presence;
  // Its own attributes of /tests/NNNN; the schema's entry is printed from them.
  static constexpr output::DeclaredAttribute attributes_[] = {
      {"batch_mean_ns", real, always,
       "batch_*: each pair's timed loop as one batch (loop time / iterations, the\n"
       "way osu_latency / osu_bw report), clock_read_ns subtracted per clock read;\n"
       "docs/benchmarks.md relates it to the per-sample statistics."},
      {"clock_read_ns", real}};
  output::DeclaredAttributes declaredAttributes() const override { return attributes_; }
  std::string summary() const override { return "ping-pong latency between pairs of ranks (one-way = round trip / 2)"; }

 protected:
  Metric metric() const override { return Metric::latency; }
  int sampleDivisor() const override { return 2; }

  void measurePair(RunContext& ctx, const RankPair& pair, PairBuffers& b) const override {
    auto& t = ctx.transport;
    const int me = ctx.world.rank();
    const bool initiator = pair.initiator == me;
    const int peer = initiator ? pair.responder : pair.initiator;
    const auto n = b.sliceBytes;
    const int warmup = ctx.instance.spec->warmup;
    const int total = warmup + ctx.instance.spec->iterations;
    // The receive for the next message is always posted before that message
    // can arrive, so it never waits in an unexpected queue: the initiator posts
    // it before its ping, the responder right after its reply (a full round
    // trip before the next ping: posting it before the reply put the post on
    // the critical path, about 50 ns of every round trip over MPI).
    t.postRecv(1, peer, dataTag, b.recv, n);
    for (int i = 0; i < total; ++i) {
      if (initiator) {
        const auto t0 = runtime::monotonicNow();
        t.postSend(0, peer, dataTag, b.send, n);
        t.waitSlots(1, 1, ctx.deadline);
        const auto t1 = runtime::monotonicNow();
        t.waitSlots(0, 1, ctx.deadline);
        if (i + 1 < total) t.postRecv(1, peer, dataTag, b.recv, n);
        if (i >= warmup) ctx.samples.record(me, i - warmup, peer, static_cast<std::int64_t>(n), t0, t1);
      } else {
        t.waitSlots(1, 1, ctx.deadline);
        t.postSend(0, peer, dataTag, b.send, n);
        if (i + 1 < total) t.postRecv(1, peer, dataTag, b.recv, n);
        t.waitSlots(0, 1, ctx.deadline);
      }
    }
  }
};

}  // namespace

std::unique_ptr<Kind> makeLatencyKind() { return std::make_unique<LatencyKind>(); }

}  // namespace fabscope::suite
