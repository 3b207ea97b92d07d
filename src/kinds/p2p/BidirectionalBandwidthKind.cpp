// Bidirectional bandwidth: both ranks of a pair send a window to each other at
// once, like osu_bibw; the initiator records bytes of both directions.
#include "kinds/Kind.hpp"
#include "kinds/p2p/PointToPoint.hpp"

namespace fabscope::suite {
namespace {

class BidirectionalBandwidthKind final : public PointToPointKind {
 public:
  std::string name() const override { return "bibw"; }
  using enum output::AttributeType;
  using enum output::Presence;
  // Its own attributes of /tests/NNNN; the schema's entry is printed from them.
  static constexpr output::DeclaredAttribute attributes_[] = {
      {"batch_mean_ns", real}, {"batch_gbps", real}, {"clock_read_ns", real}, {"receive_slices", integer}};
  output::DeclaredAttributes declaredAttributes() const override { return attributes_; }
  std::string summary() const override { return "bidirectional bandwidth: both ranks of a pair stream at once"; }

 protected:
  Metric metric() const override { return Metric::bandwidth; }
  bool usesWindow() const override { return true; }

  void measurePair(RunContext& ctx, const RankPair& pair, PairBuffers& b) const override {
    auto& t = ctx.transport;
    const int me = ctx.world.rank();
    const bool initiator = pair.initiator == me;
    const int peer = initiator ? pair.responder : pair.initiator;
    const auto n = b.sliceBytes;
    const int window = ctx.plan.window;
    const int warmup = ctx.instance.spec->warmup;
    const int total = warmup + ctx.instance.spec->iterations;
    for (int i = 0; i < total; ++i) {
      const auto t0 = runtime::monotonicNow();
      for (int w = 0; w < window; ++w)
        t.postRecv(window + w, peer, dataTag, b.recv + (static_cast<std::size_t>(w) % b.slices) * n, n);
      for (int w = 0; w < window; ++w) t.postSend(w, peer, dataTag, b.send, n);
      t.waitSlots(0, 2 * window, ctx.deadline);
      const auto t1 = runtime::monotonicNow();
      if (initiator && i >= warmup)
        ctx.samples.record(me, i - warmup, peer, 2 * static_cast<std::int64_t>(n) * window, t0, t1);
    }
  }
};

}  // namespace

std::unique_ptr<Kind> makeBidirectionalBandwidthKind() { return std::make_unique<BidirectionalBandwidthKind>(); }

}  // namespace fabscope::suite
