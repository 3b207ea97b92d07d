// KV-cache push between prefill and decode workers (disaggregated serving).
// Ranks [0, P) play prefill workers, [P, P + D) decode workers, each one TP
// shard of its worker. A prefill rank produces requests (fills their scattered
// pool blocks with a per-request pattern) and pushes their KV to a decode
// rank, which lands it in its own scattered blocks and verifies every byte.
// One instance = one strategy x one prompt length (KvPushConfig.hpp).
//
// Each request is preceded by a small header message carrying its id and its
// arrival and start times on the global clock, so the decode rank can write
// the whole request row and sample itself.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>

#include "host/KvFillVerifyHost.hpp"
#include "host/KvGatherScatterHost.hpp"
#include "host/KvPattern.hpp"
#include "kv/RequestBlockPlacement.hpp"
#include "output/KvRecords.hpp"
#include "suite/KvPushConfig.hpp"
#include "suite/KvPushGpu.hpp"
#include "suite/KvPushSchedule.hpp"
#include "suite/Kinds.hpp"
#include "transport/HostBuffer.hpp"

namespace fabscope::suite {
namespace {

using namespace kvpush;
using runtime::Nanoseconds;
using runtime::monotonicNow;

struct RequestHeader {
  std::int64_t requestId;
  std::int64_t index;           // within its prefill rank, warm-up included
  std::int64_t tArrivalGlobal;
  std::int64_t tStartGlobal;
  std::int64_t gatherNs;
  std::int64_t copyNs;          // memory: cuda: device -> pinned host at the prefill rank
};

// Host memory for pools and staging buffers: pageable, or pinned (cudaHostAlloc)
// for the GPU memory kinds so host<->device copies run at full speed.
class HostBytes {
 public:
  HostBytes() = default;
  HostBytes(std::size_t bytes, bool pinned) {
    if (pinned) {
      pinned_ = std::make_unique<PinnedStaging>(bytes);
      data_ = pinned_->data();
    } else {
      pageable_ = transport::HostBuffer(bytes);
      data_ = pageable_.data();
    }
  }
  std::byte* data() const { return data_; }

 private:
  transport::HostBuffer pageable_;
  std::unique_ptr<PinnedStaging> pinned_;
  std::byte* data_ = nullptr;
};

// Everything one instance needs, derived once before the timed part.
struct Shape {
  KvPushConfig config;
  std::int64_t tokens = 0;
  kv::KvBlockLayout layout;
  kernels::KvCopyGeometry geometry;
  std::uint64_t blocks = 0;
  std::uint64_t messages = 0;  // data messages per request
  std::int64_t bytes = 0;
  std::uint64_t stagingBytes = 0;
  int slotsPerLane = 0;  // header + data messages
  bool gpuPool = false;     // memory: cuda: the pool is in device memory
  bool pinnedHost = false;  // memory: cuda or cuda-host: host buffers are pinned
};

Shape shapeOf(const scenario::TestInstance& instance, const std::string& file, int worldSize) {
  Shape s;
  s.config = readKvPushConfig(*instance.spec, file, worldSize);
  s.tokens = promptTokensForBytes(s.config, instance.bytes);
  const auto poolBlocks = s.config.poolBlocks ? s.config.poolBlocks : poolBlocksNeeded(s.config, s.tokens);
  s.layout = layoutOf(s.config, poolBlocks);
  s.geometry = s.layout.copyGeometry();
  s.blocks = blocksForTokens(s.config, s.tokens);
  s.messages = messagesPerRequest(s.config, s.tokens);
  s.bytes = instance.bytes;
  s.stagingBytes = s.config.strategy == Strategy::staged ? s.geometry.stagingBytes(s.blocks, s.geometry.allLayers()) : 0;
  s.slotsPerLane = static_cast<int>(1 + s.messages);
  s.gpuPool = instance.spec->memory == "cuda";
  s.pinnedHost = instance.spec->memory != "host";
  return s;
}

// A GPU copy or kernel that takes this long is hung, not slow.
constexpr std::chrono::nanoseconds gpuTimeout = std::chrono::seconds(30);

std::uint64_t placementSeedOf(std::uint64_t seed, int rank) {
  return kernels::mix64(seed * 0x2545F4914F6CDD1Dull + static_cast<std::uint64_t>(rank) + 17);
}

// Operations of one request complete roughly in posting order, so a cursor
// tests the first unfinished chunk only: one poll costs O(chunk), not O(all
// messages of the request) (20480 for a 2048-token Llama-3-70B request).
struct SlotCursor {
  static constexpr int chunk = 64;
  int base = 0;
  int posted = 0;  // slots [base, base + posted) hold operations
  int done = 0;    // the first `done` of them have completed

  void reset(int first) { base = first, posted = 0, done = 0; }
  // True when every posted operation has completed.
  bool advance(transport::Transport& t) {
    while (done < posted) {
      const int n = std::min(chunk, posted - done);
      if (!t.testSlots(base + done, n)) return false;
      done += n;
    }
    return true;
  }
};

// World rank (what the transport addresses) of the measuring rank at `position`.
int worldRankOf(const RunContext& ctx, int position) {
  return ctx.participants.at(static_cast<std::size_t>(position));
}

// Spins for `duration` as the stand-in for one layer's compute, driving the
// transport meanwhile (as a GPU would keep the NIC busy while computing).
template <typename Progress>
void busyCompute(Nanoseconds duration, const runtime::Deadline& deadline, Progress&& progress) {
  const Nanoseconds until = monotonicNow() + duration;
  for (;;) {
    progress();
    const auto now = monotonicNow();
    if (now >= until) return;
    if (deadline.expiredAt(now)) deadline.fail("the layer-stream compute stand-in");
  }
}

// --- Prefill side ----------------------------------------------------------

class PrefillWorker {
 public:
  PrefillWorker(RunContext& ctx, const Shape& shape, int prefillIndex)
      : ctx_(ctx), s_(shape), me_(prefillIndex),
        pool_(shape.gpuPool ? 0 : shape.layout.poolBytes(), shape.pinnedHost),
        placement_(shape.layout.numBlocks, shape.config.blockTokens, placementSeedOf(ctx.seed, ctx.world.rank())),
        lanes_(static_cast<std::size_t>(shape.config.inFlight)),
        sequenceTo_(static_cast<std::size_t>(shape.config.decodeRanks), 0) {
    const int total = s_.config.totalRequestsPerPrefill();
    for (auto& lane : lanes_) {
      lane.blockIds.resize(s_.blocks);
      if (s_.stagingBytes) lane.staging = HostBytes(s_.stagingBytes, s_.pinnedHost);
    }
    if (s_.gpuPool) gpu_ = std::make_unique<GpuKvPool>(s_.geometry, s_.blocks, s_.stagingBytes, gpuTimeout);
    if (s_.config.loop == LoopMode::open)
      arrivals_ = poissonArrivalOffsetsNs(total, s_.config.ratePerSecond, arrivalSeedOf(ctx.seed, me_));
    const char* corrupt = std::getenv("FABSCOPE_KV_CORRUPT_FOR_TEST");
    corruptFirstRequest_ = corrupt && std::string(corrupt) == "1" && me_ == 0;
    ctx.transport.reserve(static_cast<int>(lanes_.size()) * s_.slotsPerLane);
  }

  void run() {
    const int total = s_.config.totalRequestsPerPrefill();
    const auto& deadline = ctx_.deadline;
    const Nanoseconds t0 = monotonicNow();
    int next = 0, nextStart = 0, finished = 0;
    while (finished < total) {
      for (std::size_t l = 0; l < lanes_.size(); ++l) {
        Lane& lane = lanes_[l];
        if (lane.state == LaneState::idle && next < total) prepare(lane, next++, t0);
        // Starts in request order: a decode rank expects its requests from
        // this rank in that order (tags follow it).
        if (lane.state == LaneState::prepared && lane.index == nextStart && monotonicNow() >= lane.arrival) {
          start(lane, static_cast<int>(l));
          ++nextStart;
        }
        if (lane.state == LaneState::sending && lane.slots.advance(ctx_.transport)) {
          placement_.release(lane.blockIds);
          lane.state = LaneState::idle;
          ++finished;
        }
      }
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
    HostBytes staging;
    RequestHeader header{};
    SlotCursor slots;
  };

  int baseOf(std::size_t lane) const { return static_cast<int>(lane) * s_.slotsPerLane; }

  // Places and fills the request's blocks: the stand-in for prefill producing
  // its KV. Happens before the request's transfer starts, never inside it.
  void prepare(Lane& lane, int index, Nanoseconds t0) {
    const auto id = requestIdOf(me_, index, s_.config.totalRequestsPerPrefill());
    placement_.place(static_cast<std::uint64_t>(s_.tokens), lane.blockIds);
    // Self-test of the decode side's checker: one flipped byte.
    const bool corrupt = corruptFirstRequest_ && index == s_.config.warmupRequests;
    const auto corruptAt = static_cast<std::int64_t>(s_.geometry.poolOffset(0, 0, lane.blockIds[0]));
    if (gpu_) {
      gpu_->fill(lane.blockIds, id, corrupt ? corruptAt : -1);
    } else {
      kernels::fillKvBlocksHost(pool_.data(), s_.geometry, lane.blockIds, id, s_.geometry.allLayers());
      if (corrupt) pool_.data()[corruptAt] ^= std::byte{0x5A};
    }
    lane.index = index;
    lane.header = {static_cast<std::int64_t>(id), index, 0, 0, 0, 0};
    // Closed loop: the request arrives when its KV is ready. Open loop: at its
    // Poisson time; if that has passed, the lateness is queue wait.
    lane.arrival = s_.config.loop == LoopMode::open ? t0 + arrivals_[static_cast<std::size_t>(index)] : monotonicNow();
    lane.state = LaneState::prepared;
  }

  void start(Lane& lane, int laneIndex) {
    auto& t = ctx_.transport;
    const int base = baseOf(static_cast<std::size_t>(laneIndex));
    const int decodeIndex = decodeIndexOf(me_, lane.index, s_.config.decodeRanks);
    const int peer = worldRankOf(ctx_, s_.config.prefillRanks + decodeIndex);
    const int sequence = sequenceTo_[static_cast<std::size_t>(decodeIndex)]++;
    const auto& g = s_.geometry;
    const auto range = g.allLayers();
    const std::byte* pool = pool_.data();
    auto& cursor = lane.slots;
    cursor.reset(base);
    const Nanoseconds tStart = monotonicNow();
    lane.header.tArrivalGlobal = ctx_.clock.toGlobal(lane.arrival);
    lane.header.tStartGlobal = ctx_.clock.toGlobal(tStart);
    int slot = base + 1;
    switch (s_.config.strategy) {
      case Strategy::staged: {
        if (gpu_) {
          const auto times = gpu_->gatherToHost(lane.blockIds, lane.staging.data());
          lane.header.gatherNs = times.kernelNs;
          lane.header.copyNs = times.copyNs;
        } else {
          kernels::gatherKvBlocksHost(pool, lane.staging.data(), g, lane.blockIds, range);
          lane.header.gatherNs = monotonicNow() - tStart;
        }
        t.postSend(base, peer, headerTagOf(sequence), &lane.header, sizeof lane.header);
        t.postSend(slot++, peer, dataTagOf(sequence), lane.staging.data(), s_.stagingBytes);
        break;
      }
      case Strategy::perBlock: {
        t.postSend(base, peer, headerTagOf(sequence), &lane.header, sizeof lane.header);
        for (std::uint32_t layer = 0; layer < g.layers; ++layer)
          for (std::uint32_t plane = 0; plane < g.planes; ++plane)
            for (const auto block : lane.blockIds)
              t.postSend(slot++, peer, dataTagOf(sequence), pool + g.poolOffset(layer, plane, block), g.blockBytes);
        break;
      }
      case Strategy::layerStream: {
        // Layer 0 is produced before the transfer starts (it is in the fill);
        // every later layer costs compute_per_layer while earlier ones fly.
        t.postSend(base, peer, headerTagOf(sequence), &lane.header, sizeof lane.header);
        const auto compute = static_cast<Nanoseconds>(s_.config.computePerLayerSeconds * 1e9);
        for (std::uint32_t layer = 0; layer < g.layers; ++layer) {
          if (layer > 0 && compute > 0) {
            cursor.posted = slot - base;
            busyCompute(compute, ctx_.deadline, [&] { (void)cursor.advance(t); });
          }
          for (std::uint32_t plane = 0; plane < g.planes; ++plane)
            for (const auto block : lane.blockIds)
              t.postSend(slot++, peer, dataTagOf(sequence), pool + g.poolOffset(layer, plane, block), g.blockBytes);
        }
        break;
      }
    }
    cursor.posted = slot - base;
    lane.state = LaneState::sending;
  }

  RunContext& ctx_;
  const Shape& s_;
  int me_;
  HostBytes pool_;
  std::unique_ptr<GpuKvPool> gpu_;
  kv::RequestBlockPlacement placement_;
  std::vector<Lane> lanes_;
  std::vector<int> sequenceTo_;  // requests sent so far to each decode rank
  std::vector<std::int64_t> arrivals_;
  bool corruptFirstRequest_ = false;
};

// --- Decode side -----------------------------------------------------------

class DecodeWorker {
 public:
  DecodeWorker(RunContext& ctx, const Shape& shape, int decodeIndex, std::vector<output::KvRequestRecord>& rows)
      : ctx_(ctx), s_(shape), me_(decodeIndex), rows_(rows),
        pool_(shape.gpuPool ? 0 : shape.layout.poolBytes(), shape.pinnedHost),
        placement_(shape.layout.numBlocks, shape.config.blockTokens, placementSeedOf(ctx.seed, ctx.world.rank())) {
    const int total = s_.config.totalRequestsPerPrefill();
    const int inFlight = s_.config.inFlight;
    peers_.resize(static_cast<std::size_t>(s_.config.prefillRanks));
    std::size_t measured = 0;
    for (int p = 0; p < s_.config.prefillRanks; ++p) {
      auto& peer = peers_[static_cast<std::size_t>(p)];
      peer.expected = requestsFromPrefill(p, me_, s_.config.decodeRanks, total);
      expectedTotal_ += peer.expected.size();
      for (const int k : peer.expected)
        if (k >= s_.config.warmupRequests) ++measured;
      peer.lanes.resize(static_cast<std::size_t>(inFlight));
      for (auto& lane : peer.lanes) {
        lane.blockIds.resize(s_.blocks);
        if (s_.stagingBytes) lane.staging = HostBytes(s_.stagingBytes, s_.pinnedHost);
      }
    }
    if (s_.gpuPool) gpu_ = std::make_unique<GpuKvPool>(s_.geometry, s_.blocks, s_.stagingBytes, gpuTimeout);
    rows_.clear();
    rows_.reserve(measured);
    std::snprintf(strategy_, sizeof strategy_, "%s", strategyName(s_.config.strategy));
    localMinusGlobal_ = -ctx.clock.toGlobal(0);
    ctx.transport.reserve(s_.config.prefillRanks * inFlight * s_.slotsPerLane);
  }

  void run() {
    const auto& deadline = ctx_.deadline;
    for (std::size_t p = 0; p < peers_.size(); ++p)
      for (std::size_t l = 0; l < peers_[p].lanes.size(); ++l) postNext(p, l);
    std::size_t received = 0;
    while (received < expectedTotal_) {
      for (std::size_t p = 0; p < peers_.size(); ++p) {
        auto& peer = peers_[p];
        for (std::size_t l = 0; l < peer.lanes.size(); ++l) {
          auto& lane = peer.lanes[l];
          if (!lane.active || !lane.slots.advance(ctx_.transport)) continue;
          complete(p, lane, monotonicNow());
          ++received;
          postNext(p, l);
        }
      }
      if (deadline.expired()) deadline.fail("decode rank's KV transfers to arrive");
    }
  }

 private:
  struct Lane {
    bool active = false;
    int sequence = 0;
    int index = 0;
    std::vector<std::uint32_t> blockIds;
    HostBytes staging;
    RequestHeader header{};
    SlotCursor slots;
  };
  struct Peer {
    std::vector<int> expected;  // request indices of this prefill rank, in send order
    std::size_t nextPost = 0;
    std::vector<Lane> lanes;
  };

  int baseOf(std::size_t peer, std::size_t lane) const {
    return static_cast<int>((peer * static_cast<std::size_t>(s_.config.inFlight) + lane) *
                            static_cast<std::size_t>(s_.slotsPerLane));
  }

  // Takes free blocks for the next request from prefill rank p and posts its
  // receives straight into them (staged: into the lane's staging buffer).
  void postNext(std::size_t p, std::size_t l) {
    auto& peer = peers_[p];
    auto& lane = peer.lanes[l];
    lane.active = false;
    if (peer.nextPost >= peer.expected.size()) return;
    auto& t = ctx_.transport;
    const int source = worldRankOf(ctx_, static_cast<int>(p));
    lane.sequence = static_cast<int>(peer.nextPost);
    lane.index = peer.expected[peer.nextPost++];
    placement_.place(static_cast<std::uint64_t>(s_.tokens), lane.blockIds);
    const int base = baseOf(p, l);
    const auto& g = s_.geometry;
    std::byte* pool = pool_.data();
    t.postRecv(base, source, headerTagOf(lane.sequence), &lane.header, sizeof lane.header);
    int slot = base + 1;
    if (s_.config.strategy == Strategy::staged) {
      t.postRecv(slot++, source, dataTagOf(lane.sequence), lane.staging.data(), s_.stagingBytes);
    } else {
      for (std::uint32_t layer = 0; layer < g.layers; ++layer)
        for (std::uint32_t plane = 0; plane < g.planes; ++plane)
          for (const auto block : lane.blockIds)
            t.postRecv(slot++, source, dataTagOf(lane.sequence), pool + g.poolOffset(layer, plane, block), g.blockBytes);
    }
    lane.slots.reset(base);
    lane.slots.posted = slot - base;
    lane.active = true;
  }

  void complete(std::size_t p, Lane& lane, Nanoseconds tLanded) {
    const auto& g = s_.geometry;
    Nanoseconds tDone = tLanded;
    Nanoseconds scatterNs = 0;
    Nanoseconds copyNs = lane.header.copyNs;
    if (gpu_) {
      const auto times = gpu_->scatterFromHost(lane.staging.data(), lane.blockIds);
      tDone = monotonicNow();
      scatterNs = times.kernelNs;
      copyNs += times.copyNs;
    } else if (s_.config.strategy == Strategy::staged) {
      kernels::scatterKvBlocksHost(lane.staging.data(), pool_.data(), g, lane.blockIds, g.allLayers());
      tDone = monotonicNow();
      scatterNs = tDone - tLanded;
    }
    const int prefillIndex = static_cast<int>(p);
    const int prefillRank = worldRankOf(ctx_, prefillIndex);
    const auto expectedId = requestIdOf(prefillIndex, lane.index, s_.config.totalRequestsPerPrefill());
    bool verified = false;
    if (lane.header.requestId != static_cast<std::int64_t>(expectedId)) {
      flagBadData("request header from prefill rank " + std::to_string(prefillRank) + " names request " +
                  std::to_string(lane.header.requestId) + ", expected " + std::to_string(expectedId));
    } else {
      const auto bad = gpu_ ? gpu_->verify(lane.blockIds, expectedId)
                            : kernels::verifyKvBlocksHost(pool_.data(), g, lane.blockIds, expectedId, g.allLayers());
      verified = !bad.found;
      if (bad.found)
        flagBadData("request " + std::to_string(expectedId) + " from prefill rank " + std::to_string(prefillRank) +
                    " (" + strategy_ + "): " + bad.describe());
    }
    placement_.release(lane.blockIds);
    if (lane.index < s_.config.warmupRequests) return;
    const Nanoseconds tPostLocal = lane.header.tStartGlobal + localMinusGlobal_;
    ctx_.samples.record(ctx_.world.rank(), static_cast<std::int32_t>(rows_.size()), prefillRank, s_.bytes, tPostLocal,
                        tDone, verified ? 0u : output::sample_flags::dataCheckFailed);
    output::KvRequestRecord row{};
    row.request_id = static_cast<std::int64_t>(expectedId);
    row.prefill_rank = prefillRank;
    row.decode_rank = ctx_.world.rank();
    row.bytes = s_.bytes;
    row.blocks = static_cast<std::int64_t>(s_.blocks);
    row.messages = static_cast<std::int64_t>(s_.messages);
    row.t_arrival_ns = lane.header.tArrivalGlobal;
    row.t_start_ns = lane.header.tStartGlobal;
    row.t_done_ns = ctx_.clock.toGlobal(tDone);
    row.gather_ns = lane.header.gatherNs;
    row.scatter_ns = scatterNs;
    row.copy_ns = copyNs;
    std::memcpy(row.strategy, strategy_, sizeof row.strategy);
    row.verified = verified ? 1 : 0;
    rows_.push_back(row);  // capacity reserved in the constructor: no allocation
  }

  void flagBadData(const std::string& what) {
    if (ctx_.dataCheckFailed) return;
    ctx_.dataCheckFailed = true;
    ctx_.dataCheckMessage = "rank " + std::to_string(ctx_.world.rank()) + ": " + what;
  }

  RunContext& ctx_;
  const Shape& s_;
  int me_;
  std::vector<output::KvRequestRecord>& rows_;
  HostBytes pool_;
  std::unique_ptr<GpuKvPool> gpu_;
  kv::RequestBlockPlacement placement_;
  std::vector<Peer> peers_;
  std::size_t expectedTotal_ = 0;
  char strategy_[16] = {};
  Nanoseconds localMinusGlobal_ = 0;
};

// --- The kind --------------------------------------------------------------

class KvPushTest final : public TestKind {
 public:
  std::string name() const override { return "kvpush"; }
  std::string summary() const override {
    return "KV-cache push from prefill to decode ranks (per-block, staged, layer-stream), every request verified";
  }

  scenario::KindRules rules() const override {
    scenario::KindRules r;
    r.extraKeys = {"model", "parallel", "block_tokens", "prompt_tokens", "strategy", "direction", "prefill_ranks",
                   "decode_ranks", "loop", "requests", "warmup_requests", "compute_per_layer", "pool_blocks"};
    r.minRanks = 2;
    r.validate = [](const scenario::TestSpec& spec, const std::string& file, int worldSize) {
      (void)readKvPushConfig(spec, file, worldSize);
      scenario::ParamReader p(spec, file);
      if (spec.conditions != std::vector<std::string>{"quiet"})
        p.fail("conditions", "kvpush runs under 'quiet' only so far: its ranks are prefill and decode workers, "
                             "none is free to make neighbour traffic");
      if (spec.memory == "cuda" && p.choice("strategy", {"per-block", "staged", "layer-stream"}, "per-block") != "staged")
        p.fail("strategy", "kvpush with memory: cuda runs the staged strategy only (GPU gather, pinned host staging, "
                           "GPU scatter): per-block messages from device memory need a CUDA-aware transport");
    };
    return r;
  }

  InstancePlan plan(const scenario::TestInstance& instance, const std::string& scenarioFile,
                    int worldSize) const override {
    const Shape s = shapeOf(instance, scenarioFile, worldSize);
    const auto& c = s.config;
    InstancePlan plan;
    plan.metric = Metric::bandwidth;
    plan.pattern = "kv-push";
    plan.maxSamplesPerRank = static_cast<std::int64_t>(c.prefillRanks) * c.requests;
    // The larger of the two roles: pool plus per-lane staging.
    const auto lanes = static_cast<std::int64_t>(c.inFlight) * std::max(1, c.prefillRanks);
    plan.bufferBytesPerRank = static_cast<std::int64_t>(s.layout.poolBytes() + s.stagingBytes * lanes);
    plan.description = std::string(strategyName(c.strategy)) + " push, " + c.model.name + " tp " +
                       std::to_string(c.parallel.tp) + ", " + std::to_string(s.tokens) + "-token prompts (" +
                       std::to_string(s.blocks) + " blocks, " + std::to_string(s.messages) + " messages), " +
                       std::to_string(c.prefillRanks) + " prefill -> " + std::to_string(c.decodeRanks) + " decode, " +
                       (c.loop == LoopMode::closed ? "closed loop, " + std::to_string(c.inFlight) + " in flight"
                                                   : "open loop, " + std::to_string(c.ratePerSecond) + " req/s");
    return plan;
  }

  void run(RunContext& ctx) const override {
    const Shape s = shapeOf(ctx.instance, ctx.instance.spec->name, ctx.world.size());
    const auto& c = s.config;
    // Roles by position among the measuring ranks: [0, P) prefill, then D decode.
    const int me = ctx.group.rank();
    lastRequests_.clear();
    std::unique_ptr<PrefillWorker> prefill;
    std::unique_ptr<DecodeWorker> decode;
    if (me < c.prefillRanks) prefill = std::make_unique<PrefillWorker>(ctx, s, me);
    else if (me < c.participants()) decode = std::make_unique<DecodeWorker>(ctx, s, me - c.prefillRanks, lastRequests_);
    try {
      ctx.group.barrier(ctx.deadline);  // pools allocated everywhere before the first message
      if (prefill) prefill->run();
      if (decode) decode->run();
      ctx.group.barrier(ctx.deadline);
    } catch (...) {
      // Sends may still be in flight from these buffers (the runner's reset
      // cancels receives only): keep them mapped for the rest of the run.
      if (prefill) abandoned_.emplace_back(std::move(prefill));
      if (decode) abandoned_.emplace_back(std::move(decode));
      throw;
    }
    recordAttributes(ctx, s);
  }

  void writeExtra(RunContext& ctx, output::ResultFile& file, const std::string& group,
                  const runtime::Deadline& deadline) const override {
    (void)ctx;
    file.writeTable<output::KvRequestRecord>(group + "/requests", lastRequests_, deadline);
    lastRequests_.clear();  // a rank left out of the next instance must not write these again
  }

 private:
  void recordAttributes(RunContext& ctx, const Shape& s) const {
    const auto& c = s.config;
    std::int64_t bytes = 0, transferNs = 0, gatherNs = 0, scatterNs = 0, copyNs = 0, verified = 0;
    std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
    for (const auto& r : lastRequests_) {
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
    const auto requests = w.allreduceSum(static_cast<std::int64_t>(lastRequests_.size()), d);
    bytes = w.allreduceSum(bytes, d);
    transferNs = w.allreduceSum(transferNs, d);
    gatherNs = w.allreduceSum(gatherNs, d);
    scatterNs = w.allreduceSum(scatterNs, d);
    copyNs = w.allreduceSum(copyNs, d);
    verified = w.allreduceSum(verified, d);
    first = w.allreduceMin(first, d);
    last = w.allreduceMax(last, d);
    auto& a = ctx.attributes;
    a.emplace_back("strategy", std::string(strategyName(c.strategy)));
    a.emplace_back("direction", std::string("push"));
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
    a.emplace_back("requests_per_prefill", std::int64_t{c.requests});
    a.emplace_back("warmup_requests", std::int64_t{c.warmupRequests});
    a.emplace_back("requests_measured", requests);
    a.emplace_back("requests_verified", verified);
    // bytes / ns = GB/s. Aggregate: all measured bytes over the span from the
    // first start to the last completion; per request: mean of its own rate.
    a.emplace_back("kv_gbps_aggregate", last > first ? static_cast<double>(bytes) / static_cast<double>(last - first) : 0.0);
    a.emplace_back("kv_gbps_per_request", transferNs > 0 ? static_cast<double>(bytes) / static_cast<double>(transferNs) : 0.0);
    a.emplace_back("gather_ns_mean", requests ? static_cast<double>(gatherNs) / static_cast<double>(requests) : 0.0);
    a.emplace_back("scatter_ns_mean", requests ? static_cast<double>(scatterNs) / static_cast<double>(requests) : 0.0);
    a.emplace_back("copy_ns_mean", requests ? static_cast<double>(copyNs) / static_cast<double>(requests) : 0.0);
  }

  // The decode rank's request rows between run() and writeExtra(). The runner
  // runs one instance at a time on one kind object, so this is never shared.
  mutable std::vector<output::KvRequestRecord> lastRequests_;
  // Buffers of instances that failed mid-transfer (see run()).
  mutable std::vector<std::shared_ptr<void>> abandoned_;
};

}  // namespace

std::unique_ptr<TestKind> makeKvPushTest() { return std::make_unique<KvPushTest>(); }

}  // namespace fabscope::suite
