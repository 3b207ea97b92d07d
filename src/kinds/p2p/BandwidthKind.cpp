// Unidirectional windowed bandwidth: `window` messages in flight, then a
// short acknowledgement, like osu_bw. One sample = one window.
#include "kinds/Kind.hpp"
#include "kinds/p2p/PointToPoint.hpp"

namespace fabscope::suite {
namespace {

class BandwidthKind final : public PointToPointKind {
 public:
  std::string name() const override { return "bandwidth"; }
  using enum output::AttributeType;
  using enum output::Presence;
  // Its own attributes of /tests/NNNN; the schema's entry is printed from them.
  static constexpr output::DeclaredAttribute attributes_[] = {
      {"batch_mean_ns", real}, {"batch_gbps", real}, {"clock_read_ns", real}, {"receive_slices", integer}};
  output::DeclaredAttributes declaredAttributes() const override { return attributes_; }
  std::string summary() const override { return "one-way streaming bandwidth with a window of messages in flight"; }

 protected:
  Metric metric() const override { return Metric::bandwidth; }
  bool usesWindow() const override { return true; }
  bool oneWay() const override { return true; }

  void measurePair(RunContext& ctx, const RankPair& pair, PairBuffers& b) const override {
    auto& t = ctx.transport;
    const int me = ctx.world.rank();
    const bool sender = pair.initiator == me;
    const int peer = sender ? pair.responder : pair.initiator;
    const auto n = b.sliceBytes;
    const int window = ctx.plan.window;
    const int warmup = ctx.instance.spec->warmup;
    const int total = warmup + ctx.instance.spec->iterations;
    std::int32_t ack = 0;
    for (int i = 0; i < total; ++i) {
      if (sender) {
        const auto t0 = runtime::monotonicNow();
        for (int w = 0; w < window; ++w) t.postSend(w, peer, dataTag, b.send, n);
        t.postRecv(window, peer, ackTag, &ack, sizeof ack);
        t.waitSlots(0, window + 1, ctx.deadline);
        const auto t1 = runtime::monotonicNow();
        if (i >= warmup) ctx.samples.record(me, i - warmup, peer, static_cast<std::int64_t>(n) * window, t0, t1);
      } else {
        for (int w = 0; w < window; ++w)
          t.postRecv(w, peer, dataTag, b.recv + (static_cast<std::size_t>(w) % b.slices) * n, n);
        t.waitSlots(0, window, ctx.deadline);
        t.postSend(window, peer, ackTag, &ack, sizeof ack);
        t.waitSlots(window, 1, ctx.deadline);
      }
    }
  }
};

}  // namespace

std::unique_ptr<Kind> makeBandwidthKind() { return std::make_unique<BandwidthKind>(); }

}  // namespace fabscope::suite
