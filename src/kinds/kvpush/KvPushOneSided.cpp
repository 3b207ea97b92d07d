// One-sided kvpush over a transport with put and get (UCX, verbs): every
// rank has exposed its pool and its staging area (KvPushKind.cpp), so
//
//   push-put  the decode rank grants a request's destination (its block ids,
//             or a staging slot) with a small message; the prefill rank writes
//             the KV there with puts (per block, one staging buffer, or layer
//             by layer as layers are produced), flushes, and then sends a
//             small notification carrying the request header;
//   pull      the prefill rank announces a request (header, then its block
//             ids or its staging slot); the decode rank reads the KV with gets
//             (layer-stream: layer l once the prefill rank says it is ready)
//             and then sends a release so the prefill rank may reuse the
//             blocks.
//
// The decode rank verifies every byte as with two-sided push. Transfer time
// runs from the prefill rank's start (before the grant is looked at) to the
// KV being usable at the decode rank, as for push.
#include <algorithm>

#include "kinds/kvpush/KvPushSchedule.hpp"
#include "kinds/kvpush/KvPushWorkers.hpp"

namespace fabscope::suite::kvpush {
namespace {

using runtime::monotonicNow;

// [staging slot, block ids...]: a push-put grant or a pull block list.
std::vector<std::uint32_t> blockListBuffer(std::uint64_t blocks) { return std::vector<std::uint32_t>(1 + blocks); }
std::size_t bytesOf(const std::vector<std::uint32_t>& v) { return v.size() * sizeof(std::uint32_t); }

class OneSidedPrefill final : public KvWorker {
 public:
  OneSidedPrefill(RunContext& ctx, const Shape& shape, KvMemory& memory, KvRegions regions, int prefillIndex)
      : ctx_(ctx),
        s_(shape),
        memory_(memory),
        regions_(regions),
        slots_(laneSlotsOf(shape)),
        me_(prefillIndex),
        put_(shape.config.direction == Direction::pushPut),
        placement_(shape.layout.numBlocks, shape.config.blockTokens, placementSeedOf(ctx.seed, ctx.world.rank())),
        lanes_(static_cast<std::size_t>(shape.config.inFlight)),
        sequenceTo_(static_cast<std::size_t>(shape.config.decodeRanks), 0),
        corruptRequest_(corruptedRequestOf(ctx, prefillIndex, shape.config.warmupRequests)) {
    for (std::size_t l = 0; l < lanes_.size(); ++l) {
      auto& lane = lanes_[l];
      lane.blockIds.resize(s_.blocks);
      lane.list = blockListBuffer(s_.blocks);
      lane.layerNumbers.resize(s_.geometry.layers);
      for (std::uint32_t layer = 0; layer < s_.geometry.layers; ++layer) lane.layerNumbers[layer] = layer;
    }
    if (s_.config.loop == LoopMode::open)
      arrivals_ = poissonArrivalOffsetsNs(s_.config.totalRequestsPerPrefill(), s_.config.ratePerSecond,
                                          arrivalSeedOf(ctx.seed, me_));
    ctx.transport.reserve(static_cast<int>(lanes_.size()) * slots_.perLane());
  }

  void run() override {
    const int total = s_.config.totalRequestsPerPrefill();
    const auto& deadline = ctx_.deadline;
    const Nanoseconds t0 = monotonicNow();
    int next = 0, nextStart = 0, finished = 0;
    const runtime::watchdog::Watch watch("prefill rank's one-sided KV transfers to complete", deadline.at(),
                                         runtime::watchdog::everyRank);
    while (finished < total) {
      for (std::size_t l = 0; l < lanes_.size(); ++l) {
        Lane& lane = lanes_[l];
        if (lane.state == LaneState::idle && next < total) prepare(lane, l, next++, t0);
        if (lane.state == LaneState::prepared && lane.index == nextStart && monotonicNow() >= lane.arrival) {
          start(lane, l);
          ++nextStart;
        }
        if (advance(lane, l)) {
          placement_.release(lane.blockIds);
          lane.state = LaneState::idle;
          ++finished;
        }
      }
      runtime::betweenPolls();
      if (deadline.expired()) deadline.fail("prefill rank's one-sided KV transfers to complete");
    }
  }

 private:
  enum class LaneState { idle, prepared, awaitingGrant, writing, notifying, announced };
  struct Lane {
    LaneState state = LaneState::idle;
    int index = 0;
    int peer = -1;
    int sequence = 0;
    Nanoseconds arrival = 0;
    std::vector<std::uint32_t> blockIds;
    std::vector<std::uint32_t> list;          // push-put: the grant received; pull: the block list sent
    std::vector<std::uint32_t> layerNumbers;  // pull layer-stream: payloads of the "layer ready" messages
    std::uint32_t release = 0;                // pull: the decode rank's release
    RequestHeader header{};
    SlotCursor data;
  };

  int baseOf(std::size_t lane) const { return static_cast<int>(lane) * slots_.perLane(); }
  bool done(std::size_t lane, int slot) { return ctx_.transport.testSlots(baseOf(lane) + slot, 1); }

  void prepare(Lane& lane, std::size_t l, int index, Nanoseconds t0) {
    const auto id = requestIdOf(me_, index, s_.config.totalRequestsPerPrefill());
    placement_.place(static_cast<std::uint64_t>(s_.tokens), lane.blockIds);
    const bool corrupt = index == corruptRequest_;
    memory_.fill(lane.blockIds, id,
                 corrupt ? static_cast<std::int64_t>(s_.geometry.poolOffset(0, 0, lane.blockIds[0])) : -1);
    lane.index = index;
    lane.header = {static_cast<std::int64_t>(id), index, 0, 0, 0, 0};
    // Requests are prepared in index order, so sequences per decode rank
    // follow the order the decode rank expects them in.
    const int decodeIndex = decodeIndexOf(me_, index, s_.config.decodeRanks);
    lane.peer = worldRankOf(ctx_, s_.config.prefillRanks + decodeIndex);
    lane.sequence = sequenceTo_[static_cast<std::size_t>(decodeIndex)]++;
    if (put_)  // the grant may come any time before the request starts
      ctx_.transport.postRecv(baseOf(l) + LaneSlots::control, lane.peer, controlTagOf(lane.sequence), lane.list.data(),
                              bytesOf(lane.list));
    lane.arrival = s_.config.loop == LoopMode::open ? t0 + arrivals_[static_cast<std::size_t>(index)] : monotonicNow();
    lane.state = LaneState::prepared;
  }

  void start(Lane& lane, std::size_t l) {
    const Nanoseconds tStart = monotonicNow();
    lane.header.tArrivalGlobal = ctx_.clock.toGlobal(lane.arrival);
    lane.header.tStartGlobal = ctx_.clock.toGlobal(tStart);
    if (s_.config.strategy == Strategy::staged) {
      const auto times = memory_.gather(lane.blockIds, l);
      lane.header.gatherNs = times.kernelNs;
      lane.header.copyNs = times.copyNs;
    }
    lane.data.reset(baseOf(l) + slots_.data());
    if (put_) {
      lane.state = LaneState::awaitingGrant;
      return;
    }
    announce(lane, l);
  }

  // pull: header and block list; layer-stream: then "layer l ready" as each
  // later layer is produced. The release comes once the decode rank has read.
  void announce(Lane& lane, std::size_t l) {
    auto& t = ctx_.transport;
    const int base = baseOf(l);
    lane.list[0] = static_cast<std::uint32_t>(l);
    std::copy(lane.blockIds.begin(), lane.blockIds.end(), lane.list.begin() + 1);
    t.postRecv(base + LaneSlots::extra, lane.peer, releaseTagOf(lane.sequence), &lane.release, sizeof lane.release);
    t.postSend(base + LaneSlots::header, lane.peer, headerTagOf(lane.sequence), &lane.header, sizeof lane.header);
    t.postSend(base + LaneSlots::control, lane.peer, controlTagOf(lane.sequence), lane.list.data(), bytesOf(lane.list));
    if (s_.config.strategy == Strategy::layerStream) {
      const auto compute = computePerLayerNs(s_);
      for (std::uint32_t layer = 1; layer < s_.geometry.layers; ++layer) {
        if (compute > 0) busyCompute(compute, ctx_.deadline, [&] { (void)t.testSlots(base, slots_.data()); });
        t.postSend(base + LaneSlots::layerReady + static_cast<int>(layer), lane.peer, dataTagOf(lane.sequence),
                   &lane.layerNumbers[layer], sizeof(std::uint32_t));
      }
    }
    lane.state = LaneState::announced;
  }

  void putLayer(Lane& lane, std::uint32_t layer, int& slot) {
    const auto& g = s_.geometry;
    const std::byte* pool = memory_.pool();
    for (std::uint32_t plane = 0; plane < g.planes; ++plane)
      for (std::size_t i = 0; i < lane.blockIds.size(); ++i)
        ctx_.transport.postPut(slot++, lane.peer, regions_.pool, g.poolOffset(layer, plane, lane.list[1 + i]),
                               pool + g.poolOffset(layer, plane, lane.blockIds[i]), g.blockBytes);
  }

  // push-put, once the grant is in: the writes, then a flush.
  void write(Lane& lane, std::size_t l) {
    auto& t = ctx_.transport;
    auto& cursor = lane.data;
    int slot = cursor.base;
    switch (s_.config.strategy) {
      case Strategy::staged:
        t.postPut(slot++, lane.peer, regions_.staging, std::uint64_t{lane.list[0]} * s_.stagingBytes,
                  memory_.staging(l), s_.stagingBytes);
        break;
      case Strategy::perBlock:
        for (std::uint32_t layer = 0; layer < s_.geometry.layers; ++layer) putLayer(lane, layer, slot);
        break;
      case Strategy::layerStream: {
        const auto compute = computePerLayerNs(s_);
        for (std::uint32_t layer = 0; layer < s_.geometry.layers; ++layer) {
          if (layer > 0 && compute > 0) {
            cursor.posted = slot - cursor.base;
            busyCompute(compute, ctx_.deadline, [&] { (void)cursor.advance(t); });
          }
          putLayer(lane, layer, slot);
        }
        break;
      }
    }
    cursor.posted = slot - cursor.base;
    t.postFlush(baseOf(l) + LaneSlots::extra, lane.peer);
    lane.state = LaneState::writing;
  }

  // Moves the lane on; true when its request is finished.
  bool advance(Lane& lane, std::size_t l) {
    auto& t = ctx_.transport;
    switch (lane.state) {
      case LaneState::idle:
      case LaneState::prepared:
        return false;
      case LaneState::awaitingGrant:
        if (done(l, LaneSlots::control)) write(lane, l);
        return false;
      case LaneState::writing:
        if (lane.data.advance(t) && done(l, LaneSlots::extra)) {
          // Every put has landed: tell the decode rank.
          t.postSend(baseOf(l) + LaneSlots::header, lane.peer, headerTagOf(lane.sequence), &lane.header,
                     sizeof lane.header);
          lane.state = LaneState::notifying;
        }
        return false;
      case LaneState::notifying:
        return done(l, LaneSlots::header);
      case LaneState::announced:
        // The release arrives after the decode rank's gets, so it also means
        // every send of the announcement has been matched.
        return t.testSlots(baseOf(l), slots_.data());
    }
    return false;
  }

  RunContext& ctx_;
  const Shape& s_;
  KvMemory& memory_;
  KvRegions regions_;
  LaneSlots slots_;
  int me_;
  bool put_;
  kv::RequestBlockPlacement placement_;
  std::vector<Lane> lanes_;
  std::vector<int> sequenceTo_;
  std::vector<std::int64_t> arrivals_;
  int corruptRequest_ = -1;  // the request the self-test spoils, -1: none
};

class OneSidedDecode final : public KvWorker {
 public:
  OneSidedDecode(RunContext& ctx, const Shape& shape, KvMemory& memory, KvRegions regions, int decodeIndex,
                 DecodeLedger& ledger)
      : ctx_(ctx),
        s_(shape),
        memory_(memory),
        regions_(regions),
        slots_(laneSlotsOf(shape)),
        me_(decodeIndex),
        put_(shape.config.direction == Direction::pushPut),
        ledger_(ledger),
        placement_(shape.layout.numBlocks, shape.config.blockTokens, placementSeedOf(ctx.seed, ctx.world.rank())) {
    const auto& c = s_.config;
    peers_.resize(static_cast<std::size_t>(c.prefillRanks));
    for (int p = 0; p < c.prefillRanks; ++p) {
      auto& peer = peers_[static_cast<std::size_t>(p)];
      peer.expected = requestsFromPrefill(p, me_, c.decodeRanks, c.totalRequestsPerPrefill());
      expectedTotal_ += peer.expected.size();
      peer.lanes.resize(static_cast<std::size_t>(c.inFlight));
      for (auto& lane : peer.lanes) {
        lane.blockIds.resize(s_.blocks);
        lane.list = blockListBuffer(s_.blocks);
        lane.layerNumbers.resize(s_.geometry.layers);
      }
    }
    ctx.transport.reserve(c.prefillRanks * c.inFlight * slots_.perLane());
  }

  void run() override {
    const auto& deadline = ctx_.deadline;
    for (std::size_t p = 0; p < peers_.size(); ++p)
      for (std::size_t l = 0; l < peers_[p].lanes.size(); ++l) postNext(p, l);
    std::size_t received = 0;
    const runtime::watchdog::Watch watch("decode rank's one-sided KV transfers to complete", deadline.at(),
                                         runtime::watchdog::everyRank);
    while (received < expectedTotal_) {
      for (std::size_t p = 0; p < peers_.size(); ++p)
        for (std::size_t l = 0; l < peers_[p].lanes.size(); ++l)
          if (advance(p, l)) {
            ++received;
            postNext(p, l);
          }
      runtime::betweenPolls();
      if (deadline.expired()) deadline.fail("decode rank's one-sided KV transfers to complete");
    }
  }

 private:
  enum class LaneState { idle, waiting, reading, releasing };
  struct Lane {
    LaneState state = LaneState::idle;
    int index = 0;
    int sequence = 0;
    std::uint32_t nextLayer = 0;  // pull layer-stream: the next layer to read
    std::vector<std::uint32_t> blockIds;
    std::vector<std::uint32_t> list;  // push-put: the grant sent; pull: the prefill rank's block list
    std::vector<std::uint32_t> layerNumbers;
    std::uint32_t release = 1;
    RequestHeader header{};
    SlotCursor data;
  };
  struct Peer {
    std::vector<int> expected;
    std::size_t nextPost = 0;
    std::vector<Lane> lanes;
  };

  std::size_t stagingSlotOf(std::size_t peer, std::size_t lane) const {
    return peer * static_cast<std::size_t>(s_.config.inFlight) + lane;
  }
  int baseOf(std::size_t peer, std::size_t lane) const {
    return static_cast<int>(stagingSlotOf(peer, lane)) * slots_.perLane();
  }
  bool done(std::size_t p, std::size_t l, int slot) { return ctx_.transport.testSlots(baseOf(p, l) + slot, 1); }

  // Takes blocks for the next request from prefill rank p. push-put: grants
  // them (or the lane's staging slot) and waits for the notification; pull:
  // waits for the announcement (and, layer-stream, the layer messages).
  void postNext(std::size_t p, std::size_t l) {
    auto& peer = peers_[p];
    auto& lane = peer.lanes[l];
    lane.state = LaneState::idle;
    if (peer.nextPost >= peer.expected.size()) return;
    auto& t = ctx_.transport;
    const int source = worldRankOf(ctx_, static_cast<int>(p));
    const int base = baseOf(p, l);
    lane.sequence = static_cast<int>(peer.nextPost);
    lane.index = peer.expected[peer.nextPost++];
    placement_.place(static_cast<std::uint64_t>(s_.tokens), lane.blockIds);
    t.postRecv(base + LaneSlots::header, source, headerTagOf(lane.sequence), &lane.header, sizeof lane.header);
    if (put_) {
      lane.list[0] = static_cast<std::uint32_t>(stagingSlotOf(p, l));
      std::copy(lane.blockIds.begin(), lane.blockIds.end(), lane.list.begin() + 1);
      t.postSend(base + LaneSlots::control, source, controlTagOf(lane.sequence), lane.list.data(), bytesOf(lane.list));
    } else {
      t.postRecv(base + LaneSlots::control, source, controlTagOf(lane.sequence), lane.list.data(), bytesOf(lane.list));
      for (int layer = 1; layer < slots_.layers; ++layer)
        t.postRecv(base + LaneSlots::layerReady + layer, source, dataTagOf(lane.sequence),
                   &lane.layerNumbers[static_cast<std::size_t>(layer)], sizeof(std::uint32_t));
    }
    lane.data.reset(base + slots_.data());
    lane.state = LaneState::waiting;
  }

  void getLayer(std::size_t p, Lane& lane, std::uint32_t layer) {
    const auto& g = s_.geometry;
    const int source = worldRankOf(ctx_, static_cast<int>(p));
    std::byte* pool = memory_.pool();
    int slot = lane.data.base + lane.data.posted;
    for (std::uint32_t plane = 0; plane < g.planes; ++plane)
      for (std::size_t i = 0; i < lane.blockIds.size(); ++i)
        ctx_.transport.postGet(slot++, source, regions_.pool, g.poolOffset(layer, plane, lane.list[1 + i]),
                               pool + g.poolOffset(layer, plane, lane.blockIds[i]), g.blockBytes);
    lane.data.posted = slot - lane.data.base;
  }

  // pull, once the announcement is in: the reads that are possible now.
  void startReading(std::size_t p, std::size_t l) {
    auto& lane = peers_[p].lanes[l];
    switch (s_.config.strategy) {
      case Strategy::staged:
        ctx_.transport.postGet(lane.data.base, worldRankOf(ctx_, static_cast<int>(p)), regions_.staging,
                               std::uint64_t{lane.list[0]} * s_.stagingBytes, memory_.staging(stagingSlotOf(p, l)),
                               s_.stagingBytes);
        lane.data.posted = 1;
        lane.nextLayer = s_.geometry.layers;
        break;
      case Strategy::perBlock:
        for (std::uint32_t layer = 0; layer < s_.geometry.layers; ++layer) getLayer(p, lane, layer);
        lane.nextLayer = s_.geometry.layers;
        break;
      case Strategy::layerStream:
        getLayer(p, lane, 0);  // layer 0 is ready when announced
        lane.nextLayer = 1;
        break;
    }
    lane.state = LaneState::reading;
  }

  // Moves the lane on; true when its request has been completed and the lane
  // may take the next one.
  bool advance(std::size_t p, std::size_t l) {
    auto& lane = peers_[p].lanes[l];
    auto& t = ctx_.transport;
    switch (lane.state) {
      case LaneState::idle:
        return false;
      case LaneState::waiting:
        if (put_) {
          if (done(p, l, LaneSlots::header) && done(p, l, LaneSlots::control)) {
            complete(p, l, monotonicNow());
            return true;
          }
        } else if (done(p, l, LaneSlots::header) && done(p, l, LaneSlots::control)) {
          startReading(p, l);
        }
        return false;
      case LaneState::reading:
        while (lane.nextLayer < s_.geometry.layers &&
               done(p, l, LaneSlots::layerReady + static_cast<int>(lane.nextLayer)))
          getLayer(p, lane, lane.nextLayer++);
        if (lane.nextLayer == s_.geometry.layers && lane.data.advance(t)) {
          const Nanoseconds tLanded = monotonicNow();
          // Read: the prefill rank may reuse its blocks and staging slot.
          t.postSend(baseOf(p, l) + LaneSlots::extra, worldRankOf(ctx_, static_cast<int>(p)),
                     releaseTagOf(lane.sequence), &lane.release, sizeof lane.release);
          complete(p, l, tLanded);
          lane.state = LaneState::releasing;
        }
        return false;
      case LaneState::releasing:
        return done(p, l, LaneSlots::extra);
    }
    return false;
  }

  void complete(std::size_t p, std::size_t l, Nanoseconds tLanded) {
    auto& lane = peers_[p].lanes[l];
    ledger_.landed(static_cast<int>(p), lane.index, lane.header, lane.blockIds, stagingSlotOf(p, l), tLanded);
    placement_.release(lane.blockIds);
  }

  RunContext& ctx_;
  const Shape& s_;
  KvMemory& memory_;
  KvRegions regions_;
  LaneSlots slots_;
  int me_;
  bool put_;
  DecodeLedger& ledger_;
  kv::RequestBlockPlacement placement_;
  std::vector<Peer> peers_;
  std::size_t expectedTotal_ = 0;
};

}  // namespace

std::unique_ptr<KvWorker> makeOneSidedPrefill(RunContext& ctx, const Shape& shape, KvMemory& memory, KvRegions regions,
                                              int prefillIndex) {
  return std::make_unique<OneSidedPrefill>(ctx, shape, memory, regions, prefillIndex);
}

std::unique_ptr<KvWorker> makeOneSidedDecode(RunContext& ctx, const Shape& shape, KvMemory& memory, KvRegions regions,
                                             int decodeIndex, DecodeLedger& ledger) {
  return std::make_unique<OneSidedDecode>(ctx, shape, memory, regions, decodeIndex, ledger);
}

}  // namespace fabscope::suite::kvpush
