// Two-sided push: the prefill rank sends a small header and then the KV
// (one message per block per layer, one staging buffer, or layer by layer);
// the decode rank has posted receives straight into the blocks it chose (or
// into a staging slot) and verifies every byte when they have landed.
//
// Over a transport that matches in posting order (NCCL) every rank posts in
// one agreed order (KvPushSchedule.hpp: inOrderReceivesOf): prefill ranks
// send in request order, decode ranks post their receives by request index,
// then prefill rank, each only when a lane for that prefill rank is free.
#include <algorithm>

#include "kinds/kvpush/KvPushSchedule.hpp"
#include "kinds/kvpush/KvPushWorkers.hpp"

namespace fabscope::suite::kvpush {
namespace {

using runtime::monotonicNow;

class PushPrefill final : public KvWorker {
 public:
  PushPrefill(RunContext& ctx, const Shape& shape, KvMemory& memory, int prefillIndex)
      : ctx_(ctx),
        s_(shape),
        memory_(memory),
        slots_(laneSlotsOf(shape)),
        me_(prefillIndex),
        placement_(shape.layout.numBlocks, shape.config.blockTokens, placementSeedOf(ctx.seed, ctx.world.rank())),
        lanes_(static_cast<std::size_t>(shape.config.inFlight)),
        sequenceTo_(static_cast<std::size_t>(shape.config.decodeRanks), 0),
        corruptRequest_(corruptedRequestOf(ctx, prefillIndex, shape.config.warmupRequests)) {
    for (auto& lane : lanes_) lane.blockIds.resize(s_.blocks);
    if (s_.config.loop == LoopMode::open)
      arrivals_ = poissonArrivalOffsetsNs(s_.config.totalRequestsPerPrefill(), s_.config.ratePerSecond,
                                          arrivalSeedOf(ctx.seed, me_));
    ctx.transport.reserve(static_cast<int>(lanes_.size()) * slots_.perLane());
  }

  void run() override {
    const int total = s_.config.totalRequestsPerPrefill();
    const auto& deadline = ctx_.deadline;
    auto& t = ctx_.transport;
    const Nanoseconds t0 = monotonicNow();
    int next = 0, nextStart = 0, finished = 0;
    const runtime::watchdog::Watch watch("prefill rank's KV transfers to complete", deadline.at(),
                                         runtime::watchdog::everyRank);
    while (finished < total) {
      for (std::size_t l = 0; l < lanes_.size(); ++l) {
        Lane& lane = lanes_[l];
        if (lane.state == LaneState::idle && next < total) prepare(lane, next++, t0);
        // Starts in request order: a decode rank expects its requests from
        // this rank in that order (tags follow it; NCCL matches by order).
        if (lane.state == LaneState::prepared && lane.index == nextStart && monotonicNow() >= lane.arrival) {
          start(lane, static_cast<int>(l));
          ++nextStart;
        }
        if (lane.state == LaneState::sending && lane.data.advance(t) && t.testSlots(baseOf(l) + LaneSlots::header, 1)) {
          placement_.release(lane.blockIds);
          lane.state = LaneState::idle;
          ++finished;
        }
      }
      runtime::betweenPolls();
      if (deadline.expired()) deadline.fail("prefill rank's KV transfers to complete");
    }
  }

 private:
  enum class LaneState { idle, prepared, sending };
  struct Lane {
    LaneState state = LaneState::idle;
    int index = 0;
    Nanoseconds arrival = 0;
    std::vector<std::uint32_t> blockIds;
    RequestHeader header{};
    SlotCursor data;
  };

  int baseOf(std::size_t lane) const { return static_cast<int>(lane) * slots_.perLane(); }

  // Places and fills the request's blocks: the stand-in for prefill producing
  // its KV. Happens before the request's transfer starts, never inside it.
  void prepare(Lane& lane, int index, Nanoseconds t0) {
    const auto id = requestIdOf(me_, index, s_.config.totalRequestsPerPrefill());
    placement_.place(static_cast<std::uint64_t>(s_.tokens), lane.blockIds);
    const bool corrupt = index == corruptRequest_;
    memory_.fill(lane.blockIds, id,
                 corrupt ? static_cast<std::int64_t>(s_.geometry.poolOffset(0, 0, lane.blockIds[0])) : -1);
    lane.index = index;
    lane.header = {static_cast<std::int64_t>(id), index, 0, 0, 0, 0};
    // Closed loop: the request arrives when its KV is ready. Open loop: at its
    // Poisson time; if that has passed, the lateness is queue wait.
    lane.arrival = s_.config.loop == LoopMode::open ? t0 + arrivals_[static_cast<std::size_t>(index)] : monotonicNow();
    lane.state = LaneState::prepared;
  }

  void postBlocksOfLayer(Lane& lane, int peer, int sequence, std::uint32_t layer, int& slot) {
    const auto& g = s_.geometry;
    const std::byte* pool = memory_.pool();
    for (std::uint32_t plane = 0; plane < g.planes; ++plane)
      for (const auto block : lane.blockIds)
        ctx_.transport.postSend(slot++, peer, dataTagOf(sequence), pool + g.poolOffset(layer, plane, block),
                                g.blockBytes);
  }

  void start(Lane& lane, int laneIndex) {
    auto& t = ctx_.transport;
    const int base = baseOf(static_cast<std::size_t>(laneIndex));
    const int decodeIndex = decodeIndexOf(me_, lane.index, s_.config.decodeRanks);
    const int peer = worldRankOf(ctx_, s_.config.prefillRanks + decodeIndex);
    const int sequence = sequenceTo_[static_cast<std::size_t>(decodeIndex)]++;
    auto& cursor = lane.data;
    cursor.reset(base + slots_.data());
    const Nanoseconds tStart = monotonicNow();
    lane.header.tArrivalGlobal = ctx_.clock.toGlobal(lane.arrival);
    lane.header.tStartGlobal = ctx_.clock.toGlobal(tStart);
    int slot = cursor.base;
    switch (s_.config.strategy) {
      case Strategy::staged: {
        const auto slotIndex = static_cast<std::uint64_t>(laneIndex);
        const auto times = memory_.gather(lane.blockIds, slotIndex);
        lane.header.gatherNs = times.kernelNs;
        lane.header.copyNs = times.copyNs;
        t.postSend(base + LaneSlots::header, peer, headerTagOf(sequence), &lane.header, sizeof lane.header);
        t.postSend(slot++, peer, dataTagOf(sequence), memory_.staging(slotIndex), s_.stagingBytes);
        break;
      }
      case Strategy::perBlock:
        t.postSend(base + LaneSlots::header, peer, headerTagOf(sequence), &lane.header, sizeof lane.header);
        for (std::uint32_t layer = 0; layer < s_.geometry.layers; ++layer)
          postBlocksOfLayer(lane, peer, sequence, layer, slot);
        break;
      case Strategy::layerStream: {
        // Layer 0 is produced before the transfer starts (it is in the fill);
        // every later layer costs compute_per_layer while earlier ones fly.
        t.postSend(base + LaneSlots::header, peer, headerTagOf(sequence), &lane.header, sizeof lane.header);
        const auto compute = computePerLayerNs(s_);
        for (std::uint32_t layer = 0; layer < s_.geometry.layers; ++layer) {
          if (layer > 0 && compute > 0) {
            cursor.posted = slot - cursor.base;
            busyCompute(compute, ctx_.deadline, [&] { (void)cursor.advance(t); });
          }
          postBlocksOfLayer(lane, peer, sequence, layer, slot);
        }
        break;
      }
    }
    cursor.posted = slot - cursor.base;
    lane.state = LaneState::sending;
  }

  RunContext& ctx_;
  const Shape& s_;
  KvMemory& memory_;
  LaneSlots slots_;
  int me_;
  kv::RequestBlockPlacement placement_;
  std::vector<Lane> lanes_;
  std::vector<int> sequenceTo_;  // requests sent so far to each decode rank
  std::vector<std::int64_t> arrivals_;
  int corruptRequest_ = -1;  // the request the self-test spoils, -1: none
};

class PushDecode final : public KvWorker {
 public:
  PushDecode(RunContext& ctx, const Shape& shape, KvMemory& memory, int decodeIndex, DecodeLedger& ledger)
      : ctx_(ctx),
        s_(shape),
        memory_(memory),
        slots_(laneSlotsOf(shape)),
        me_(decodeIndex),
        ledger_(ledger),
        placement_(shape.layout.numBlocks, shape.config.blockTokens, placementSeedOf(ctx.seed, ctx.world.rank())) {
    const auto& c = s_.config;
    peers_.resize(static_cast<std::size_t>(c.prefillRanks));
    for (int p = 0; p < c.prefillRanks; ++p) {
      auto& peer = peers_[static_cast<std::size_t>(p)];
      peer.expected = requestsFromPrefill(p, me_, c.decodeRanks, c.totalRequestsPerPrefill());
      expectedTotal_ += peer.expected.size();
      peer.lanes.resize(static_cast<std::size_t>(c.inFlight));
      for (auto& lane : peer.lanes) lane.blockIds.resize(s_.blocks);
    }
    if (s_.inOrder) inOrder_ = inOrderReceivesOf(me_, c.prefillRanks, c.decodeRanks, c.totalRequestsPerPrefill());
    ctx.transport.reserve(c.prefillRanks * c.inFlight * slots_.perLane());
  }

  void run() override {
    const auto& deadline = ctx_.deadline;
    auto& t = ctx_.transport;
    postReceives();
    std::size_t received = 0;
    const runtime::watchdog::Watch watch("decode rank's KV transfers to arrive", deadline.at(),
                                         runtime::watchdog::everyRank);
    while (received < expectedTotal_) {
      for (std::size_t p = 0; p < peers_.size(); ++p) {
        auto& peer = peers_[p];
        for (std::size_t l = 0; l < peer.lanes.size(); ++l) {
          auto& lane = peer.lanes[l];
          if (!lane.active || !lane.data.advance(t) || !t.testSlots(baseOf(p, l) + LaneSlots::header, 1)) continue;
          complete(p, l, monotonicNow());
          ++received;
          lane.active = false;
          postReceives();
        }
      }
      runtime::betweenPolls();
      if (deadline.expired()) deadline.fail("decode rank's KV transfers to arrive");
    }
  }

 private:
  struct Lane {
    bool active = false;
    int index = 0;
    std::vector<std::uint32_t> blockIds;
    RequestHeader header{};
    SlotCursor data;
  };
  struct Peer {
    std::vector<int> expected;  // request indices of this prefill rank, in send order
    std::size_t nextPost = 0;
    std::vector<Lane> lanes;
  };

  std::size_t stagingSlotOf(std::size_t peer, std::size_t lane) const {
    return peer * static_cast<std::size_t>(s_.config.inFlight) + lane;
  }
  int baseOf(std::size_t peer, std::size_t lane) const {
    return static_cast<int>(stagingSlotOf(peer, lane)) * slots_.perLane();
  }

  // Fills free lanes with the next expected requests. Tag-matching
  // transports: any free lane, each prefill rank's requests in its order.
  // In-order transports: strictly in the agreed order, stopping at the first
  // request whose prefill rank has no free lane yet.
  void postReceives() {
    if (!s_.inOrder) {
      for (std::size_t p = 0; p < peers_.size(); ++p)
        for (std::size_t l = 0; l < peers_[p].lanes.size(); ++l)
          if (!peers_[p].lanes[l].active && peers_[p].nextPost < peers_[p].expected.size()) post(p, l);
      return;
    }
    while (nextInOrder_ < inOrder_.size()) {
      const auto p = static_cast<std::size_t>(inOrder_[nextInOrder_].prefill);
      auto& lanes = peers_[p].lanes;
      const auto free = std::find_if(lanes.begin(), lanes.end(), [](const Lane& l) { return !l.active; });
      if (free == lanes.end()) return;
      const auto l = static_cast<std::size_t>(free - lanes.begin());
      post(p, l);
      ++nextInOrder_;
      // Launch this request's receives as a group of their own (NCCL: the
      // next test launches what was posted; a group completes as a whole), so
      // its completion is not held back by a later request posted with it.
      (void)ctx_.transport.testSlots(baseOf(p, l) + LaneSlots::header, 1);
    }
  }

  // Takes free blocks for the next request from prefill rank p and posts its
  // receives straight into them (staged: into the lane's staging slot).
  void post(std::size_t p, std::size_t l) {
    auto& peer = peers_[p];
    auto& lane = peer.lanes[l];
    auto& t = ctx_.transport;
    const int source = worldRankOf(ctx_, static_cast<int>(p));
    const int sequence = static_cast<int>(peer.nextPost);
    lane.index = peer.expected[peer.nextPost++];
    placement_.place(static_cast<std::uint64_t>(s_.tokens), lane.blockIds);
    const int base = baseOf(p, l);
    const auto& g = s_.geometry;
    t.postRecv(base + LaneSlots::header, source, headerTagOf(sequence), &lane.header, sizeof lane.header);
    int slot = base + slots_.data();
    if (s_.config.strategy == Strategy::staged) {
      t.postRecv(slot++, source, dataTagOf(sequence), memory_.staging(stagingSlotOf(p, l)), s_.stagingBytes);
    } else {
      std::byte* pool = memory_.pool();
      for (std::uint32_t layer = 0; layer < g.layers; ++layer)
        for (std::uint32_t plane = 0; plane < g.planes; ++plane)
          for (const auto block : lane.blockIds)
            t.postRecv(slot++, source, dataTagOf(sequence), pool + g.poolOffset(layer, plane, block), g.blockBytes);
    }
    lane.data.reset(base + slots_.data());
    lane.data.posted = slot - lane.data.base;
    lane.active = true;
  }

  void complete(std::size_t p, std::size_t l, Nanoseconds tLanded) {
    auto& lane = peers_[p].lanes[l];
    ledger_.landed(static_cast<int>(p), lane.index, lane.header, lane.blockIds, stagingSlotOf(p, l), tLanded);
    placement_.release(lane.blockIds);
  }

  RunContext& ctx_;
  const Shape& s_;
  KvMemory& memory_;
  LaneSlots slots_;
  int me_;
  DecodeLedger& ledger_;
  kv::RequestBlockPlacement placement_;
  std::vector<Peer> peers_;
  std::size_t expectedTotal_ = 0;
  std::vector<ExpectedRequest> inOrder_;
  std::size_t nextInOrder_ = 0;
};

}  // namespace

std::unique_ptr<KvWorker> makePushPrefill(RunContext& ctx, const Shape& shape, KvMemory& memory, int prefillIndex) {
  return std::make_unique<PushPrefill>(ctx, shape, memory, prefillIndex);
}

std::unique_ptr<KvWorker> makePushDecode(RunContext& ctx, const Shape& shape, KvMemory& memory, int decodeIndex,
                                         DecodeLedger& ledger) {
  return std::make_unique<PushDecode>(ctx, shape, memory, decodeIndex, ledger);
}

}  // namespace fabscope::suite::kvpush
