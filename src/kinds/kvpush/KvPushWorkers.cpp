#include "kinds/kvpush/KvPushWorkers.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "host/KvPattern.hpp"
#include "kinds/kvpush/KvPushSchedule.hpp"
#include "memory/MemoryKinds.hpp"

namespace fabscope::suite::kvpush {

Shape shapeOf(const scenario::TestInstance& instance) {
  Shape s;
  s.config = scenario::configOf<KvPushConfig>(*instance.spec);
  s.tokens = promptTokensForBytes(s.config, instance.bytes);
  const auto poolBlocks = s.config.poolBlocks ? s.config.poolBlocks : poolBlocksNeeded(s.config, s.tokens);
  s.layout = layoutOf(s.config, poolBlocks);
  s.geometry = s.layout.copyGeometry();
  s.blocks = blocksForTokens(s.config, s.tokens);
  s.messages = messagesPerRequest(s.config, s.tokens);
  s.bytes = instance.bytes;
  s.stagingBytes =
      s.config.strategy == Strategy::staged ? s.geometry.stagingBytes(s.blocks, s.geometry.allLayers()) : 0;
  const auto memory = memory::memoryKindOps(instance.spec->memory).kind;
  s.gpuPool = memory == transport::MemoryKind::cuda;
  s.pinnedHost = memory == transport::MemoryKind::cudaHost;
  return s;
}

LaneSlots laneSlotsOf(const Shape& shape) {
  LaneSlots l;
  const bool layerReadyMessages =
      shape.config.direction == Direction::pull && shape.config.strategy == Strategy::layerStream;
  l.layers = layerReadyMessages ? static_cast<int>(shape.geometry.layers) : 0;
  l.messages = static_cast<int>(shape.messages);
  return l;
}

std::uint64_t placementSeedOf(std::uint64_t seed, int rank) {
  return kernels::mix64(seed * 0x2545F4914F6CDD1Dull + static_cast<std::uint64_t>(rank) + 17);
}

int corruptedRequestOf(const RunContext& ctx, int prefillIndex, int warmupRequests) {
  const auto& hook = ctx.selfTest;
  if (!hook.kvCorrupt || prefillIndex != hook.kvCorruptPrefill) return -1;
  return hook.kvCorruptRequest < 0 ? warmupRequests : hook.kvCorruptRequest;
}

std::size_t measuredRequestsOf(const KvPushConfig& c, int decodeIndex) {
  std::size_t measured = 0;
  for (int p = 0; p < c.prefillRanks; ++p)
    for (const int k : requestsFromPrefill(p, decodeIndex, c.decodeRanks, c.totalRequestsPerPrefill()))
      if (k >= c.warmupRequests) ++measured;
  return measured;
}

std::uint64_t stagingSlotsOf(const KvPushConfig& c, bool decode) {
  return static_cast<std::uint64_t>(c.inFlight) * static_cast<std::uint64_t>(decode ? c.prefillRanks : 1);
}

DecodeLedger::DecodeLedger(RunContext& ctx, const Shape& shape, KvMemory& memory, std::vector<KvRequestRecord>& rows,
                           std::size_t measured)
    : ctx_(ctx), s_(shape), memory_(memory), rows_(rows) {
  rows_.reserve(rows_.size() + measured);
  std::snprintf(strategy_, sizeof strategy_, "%s", strategyName(s_.config.strategy));
  std::snprintf(direction_, sizeof direction_, "%s", directionName(s_.config.direction));
  localMinusGlobal_ = -ctx.clock.toGlobal(0);
}

void DecodeLedger::landed(int prefillIndex, int index, const RequestHeader& header,
                          std::span<const std::uint32_t> blockIds, std::size_t stagingSlot, Nanoseconds tLanded) {
  Nanoseconds tDone = tLanded;
  std::int64_t scatterNs = 0;
  std::int64_t copyNs = header.copyNs;
  if (s_.config.strategy == Strategy::staged) {
    const auto times = memory_.scatter(stagingSlot, blockIds);
    tDone = runtime::monotonicNow();
    scatterNs = times.kernelNs;
    copyNs += times.copyNs;
  }
  complete(prefillIndex, index, header, blockIds, tDone, scatterNs, copyNs);
}

void DecodeLedger::complete(int prefillIndex, int index, const RequestHeader& header,
                            std::span<const std::uint32_t> blockIds, Nanoseconds tDone, std::int64_t scatterNs,
                            std::int64_t copyNs) {
  const int prefillRank = worldRankOf(ctx_, prefillIndex);
  const auto expectedId = requestIdOf(prefillIndex, index, s_.config.totalRequestsPerPrefill());
  bool verified = false;
  if (header.requestId != static_cast<std::int64_t>(expectedId)) {
    flagBadData("request header from prefill rank " + std::to_string(prefillRank) + " names request " +
                std::to_string(header.requestId) + ", expected " + std::to_string(expectedId));
  } else {
    const auto bad = memory_.verify(blockIds, expectedId);
    verified = !bad.found;
    if (bad.found)
      flagBadData("request " + std::to_string(expectedId) + " from prefill rank " + std::to_string(prefillRank) + " (" +
                  strategy_ + ", " + direction_ + "): " + bad.describe());
  }
  if (index < s_.config.warmupRequests) return;
  const Nanoseconds tPostLocal = header.tStartGlobal + localMinusGlobal_;
  ctx_.samples.record(ctx_.world.rank(), static_cast<std::int32_t>(rows_.size()), prefillRank, s_.bytes, tPostLocal,
                      tDone, verified ? 0u : output::sample_flags::dataCheckFailed);
  KvRequestRecord row{};
  row.request_id = static_cast<std::int64_t>(expectedId + s_.requestIdBase);
  row.prefill_rank = prefillRank;
  row.decode_rank = ctx_.world.rank();
  row.bytes = s_.bytes;
  row.blocks = static_cast<std::int64_t>(s_.blocks);
  row.messages = static_cast<std::int64_t>(s_.messages);
  row.t_arrival_ns = header.tArrivalGlobal;
  row.t_start_ns = header.tStartGlobal;
  row.t_done_ns = ctx_.clock.toGlobal(tDone);
  row.gather_ns = header.gatherNs;
  row.scatter_ns = scatterNs;
  row.copy_ns = copyNs;
  std::memcpy(row.strategy, strategy_, sizeof row.strategy);
  std::memcpy(row.direction, direction_, sizeof row.direction);
  row.verified = verified ? 1 : 0;
  rows_.push_back(row);  // capacity reserved in the constructor: no allocation
}

void DecodeLedger::flagBadData(const std::string& what) {
  ctx_.verdict.fail("rank " + std::to_string(ctx_.world.rank()) + ": " + what);
}

}  // namespace fabscope::suite::kvpush
