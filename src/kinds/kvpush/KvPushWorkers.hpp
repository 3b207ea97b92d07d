#pragma once
// What the kvpush workers share: the instance's shape, the request header,
// the slot layout of a lane, the completion cursor, the layer-compute stand-in
// and the decode side's ledger (verification, samples, request rows).
//
// Two families of workers: two-sided push (KvPushTwoSided.cpp) and one-sided
// push-put / pull (KvPushOneSided.cpp). Ranks [0, P) of the measuring group
// are prefill workers, [P, P + D) decode workers.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kinds/Kind.hpp"
#include "kinds/kvpush/KvPushConfig.hpp"
#include "kinds/kvpush/KvPushMemory.hpp"
#include "kinds/kvpush/KvRecords.hpp"
#include "kv/KvBlockLayout.hpp"
#include "kv/RequestBlockPlacement.hpp"

namespace fabscope::suite::kvpush {

using runtime::Nanoseconds;

// Travels ahead of (push) or after (push-put) a request's data, or announces
// it (pull), so the decode rank can write the whole request row.
struct RequestHeader {
  std::int64_t requestId;
  std::int64_t index;  // within its prefill rank, warm-up included
  std::int64_t tArrivalGlobal;
  std::int64_t tStartGlobal;
  std::int64_t gatherNs;
  std::int64_t copyNs;  // memory: cuda via host: device -> pinned host at the prefill rank
};

// Everything one instance needs, derived once before the timed part.
struct Shape {
  KvPushConfig config;
  std::int64_t tokens = 0;
  kv::KvBlockLayout layout;
  kernels::KvCopyGeometry geometry;
  std::uint64_t blocks = 0;
  std::uint64_t messages = 0;  // data messages (or puts / gets) per request
  std::int64_t bytes = 0;
  std::uint64_t stagingBytes = 0;
  bool gpuPool = false;     // memory: cuda: the pool is in device memory
  bool pinnedHost = false;  // memory: cuda-host: host pool and staging are pinned
  // Added to the request ids in the rows: a rotated round's requests count
  // from 0 like the first round's, and the rows keep them apart.
  std::uint64_t requestIdBase = 0;
  // Known once the transport is: set by the kind's run().
  bool deviceDirect = false;  // gpuPool and the transport addresses device memory
  bool inOrder = false;       // the transport matches in posting order (NCCL)

  KvMemoryMode memoryMode() const {
    return !gpuPool ? KvMemoryMode::hostPool : deviceDirect ? KvMemoryMode::gpuDirect : KvMemoryMode::gpuViaHost;
  }
};

Shape shapeOf(const scenario::TestInstance& instance);

// Slots of one lane (one request in flight), the same layout for every
// direction: control messages first, then one slot per data operation.
struct LaneSlots {
  static constexpr int header = 0;      // push header / put notification / pull ready
  static constexpr int control = 1;     // put grant / pull block list
  static constexpr int extra = 2;       // put flush / pull release
  static constexpr int layerReady = 3;  // pull layer-stream: + layer (layers 1..L-1)
  int layers = 0;
  int messages = 0;
  int data() const { return layerReady + layers; }
  int perLane() const { return data() + messages; }
};
LaneSlots laneSlotsOf(const Shape& shape);

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
inline int worldRankOf(const RunContext& ctx, int position) {
  return ctx.participants.at(static_cast<std::size_t>(position));
}

std::uint64_t placementSeedOf(std::uint64_t seed, int rank);

// Spins for `duration` as the stand-in for one layer's compute, driving the
// transport meanwhile (as a GPU would keep the NIC busy while computing).
template <typename Progress>
void busyCompute(Nanoseconds duration, const runtime::Deadline& deadline, Progress&& progress) {
  const Nanoseconds until = runtime::monotonicNow() + duration;
  for (;;) {
    progress();
    const auto now = runtime::monotonicNow();
    if (now >= until) return;
    if (deadline.expiredAt(now)) deadline.fail("the layer-stream compute stand-in");
  }
}

inline Nanoseconds computePerLayerNs(const Shape& s) {
  return static_cast<Nanoseconds>(s.config.computePerLayerSeconds * 1e9);
}

// Self-test of the decode side's checker (--self-test kv-corrupt[=P:K]): the
// index of the request (counting warm-up requests from 0) whose one byte prefill
// rank `prefillIndex` flips, or -1 when it spoils none.
int corruptedRequestOf(const RunContext& ctx, int prefillIndex, int warmupRequests);

// The decode side's bookkeeping of completed requests: verifies the blocks,
// records the sample and the request row (rows reserved up front, so
// recording allocates nothing). A round of a rotation appends to the rows of
// the rounds before it.
class DecodeLedger {
 public:
  DecodeLedger(RunContext& ctx, const Shape& shape, KvMemory& memory, std::vector<KvRequestRecord>& rows,
               std::size_t measured);
  // One request's KV is in the pool at tDone.
  void complete(int prefillIndex, int index, const RequestHeader& header, std::span<const std::uint32_t> blockIds,
                Nanoseconds tDone, std::int64_t scatterNs, std::int64_t copyNs);
  // One request's bytes arrived at tLanded: a staged request is first
  // scattered from staging slot `stagingSlot` (its kernel and copy times kept
  // apart), then completed.
  void landed(int prefillIndex, int index, const RequestHeader& header, std::span<const std::uint32_t> blockIds,
              std::size_t stagingSlot, Nanoseconds tLanded);

 private:
  void flagBadData(const std::string& what);

  RunContext& ctx_;
  const Shape& s_;
  KvMemory& memory_;
  std::vector<KvRequestRecord>& rows_;
  char strategy_[16] = {};
  char direction_[16] = {};
  Nanoseconds localMinusGlobal_ = 0;
};

// One rank's part of an instance.
class KvWorker {
 public:
  virtual ~KvWorker() = default;
  virtual void run() = 0;
};

// Two-sided push (KvPushTwoSided.cpp).
std::unique_ptr<KvWorker> makePushPrefill(RunContext& ctx, const Shape& shape, KvMemory& memory, int prefillIndex);
std::unique_ptr<KvWorker> makePushDecode(RunContext& ctx, const Shape& shape, KvMemory& memory, int decodeIndex,
                                         DecodeLedger& ledger);

// One-sided push-put and pull (KvPushOneSided.cpp). `poolRegion` and
// `stagingRegion` name every rank's exposed pool and staging area.
struct KvRegions {
  int pool = -1;
  int staging = -1;
};
std::unique_ptr<KvWorker> makeOneSidedPrefill(RunContext& ctx, const Shape& shape, KvMemory& memory, KvRegions regions,
                                              int prefillIndex);
std::unique_ptr<KvWorker> makeOneSidedDecode(RunContext& ctx, const Shape& shape, KvMemory& memory, KvRegions regions,
                                             int decodeIndex, DecodeLedger& ledger);

// Measured requests decode rank `decodeIndex` receives.
std::size_t measuredRequestsOf(const KvPushConfig& config, int decodeIndex);
// Staging slots of a rank's role: a prefill rank has in_flight lanes, a
// decode rank in_flight per prefill rank.
std::uint64_t stagingSlotsOf(const KvPushConfig& config, bool decode);

}  // namespace fabscope::suite::kvpush
