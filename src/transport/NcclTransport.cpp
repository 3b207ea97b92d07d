// The nccl transport's entry in the factory's table is compiled in every
// build; the data path only where the build has CUDA and NCCL.
#include "fabscope/BuildConfig.hpp"
#include "transport/TransportEntry.hpp"

#if FABSCOPE_HAVE_NCCL
#include "transport/NcclTransport.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "cuda/CudaApi.hpp"
#include "transport/NcclComm.hpp"
#include "transport/NcclGroupCut.hpp"

namespace fabscope::transport {
namespace {

namespace cu = kernels::cuda;

bool isDeviceAccessible(const void* p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    (void)cudaGetLastError();  // plain host memory on old runtimes: clear the sticky error
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeHost ||
         attributes.type == cudaMemoryTypeManaged;
}

}  // namespace

struct NcclTransport::State {
  struct Operation {
    bool send = false;
    int peer = -1;
    void* buffer = nullptr;      // what NCCL reads or writes
    void* hostTarget = nullptr;  // a bounced receive: where the bytes go at completion
    std::size_t bytes = 0;
  };
  struct Slot {
    std::uint64_t launch = 0;  // 0: nothing posted since the last completion
    bool pending = false;      // posted, not yet launched
    Operation operation;
    int bounce = -1;  // index of the pinned bounce buffer a host-memory message holds
    // The pointer last seen in this slot and whether NCCL can address it:
    // timed loops reuse one buffer, so the CUDA query runs once per buffer.
    const void* classified = nullptr;
    bool classifiedDevice = false;
  };

  int device = 0;
  bool member = false;
  std::optional<runtime::Communicator> members;  // the ranks with a GPU of their own
  std::unique_ptr<NcclComm> comm;
  std::unique_ptr<cu::Stream> stream;
  std::vector<Slot> slots;
  std::vector<int> pendingSlots;            // in posting order
  std::vector<PostedOperation> pendingOps;  // the same, as endOfNcclGroup reads them
  std::vector<std::uint8_t> sentTo;         // scratch for endOfNcclGroup, per NCCL rank
  std::vector<cu::Event> launchEvents;      // ring, indexed by launch number
  // Pinned buffers for host-memory messages (acks, headers): a pool shared by
  // all slots, because a kind may reserve thousands of slots (one per KV
  // block message) of which only a few carry host memory at a time.
  std::vector<cu::PinnedHostBuffer> bounces;
  std::vector<int> freeBounces;
  std::uint64_t launched = 0;
  std::uint64_t completed = 0;  // every launch up to this one has finished
};

NcclTransport::NcclTransport(const runtime::Communicator& world, int localRank, const runtime::Deadline& deadline)
    : world_(world), state_(std::make_unique<State>()) {
  const int devices = cu::deviceCount();
  if (devices == 0) throw RuntimeFailure("transport 'nccl' needs a GPU on every rank; this host has none");
  state_->device = localRank % devices;
  state_->member = localRank < devices;
  cu::setDevice(state_->device);
  state_->members.emplace(world.split(state_->member ? 0 : 1, world.rank(), deadline));
  const auto ranks = world.allgather(state_->member ? state_->members->rank() : -1, deadline);
  ncclRankOf_.assign(ranks.begin(), ranks.end());
  state_->sentTo.assign(static_cast<std::size_t>(world.size()), 0);

  openCommunicator(deadline);
}

int NcclTransport::ncclPeer(int worldRank) const {
  const int peer = ncclRankOf_.at(static_cast<std::size_t>(worldRank));
  if (peer < 0 || !state_->member)
    throw UsageError("NCCL transport: rank " + std::to_string(peer < 0 ? worldRank : world_.rank()) +
                     " has no GPU of its own (more ranks on its host than GPUs), so it has no NCCL path; "
                     "run one measuring rank per GPU");
  return peer;
}

NcclTransport::~NcclTransport() = default;

void NcclTransport::openCommunicator(const runtime::Deadline& deadline) {
  state_->comm.reset();
  state_->stream = std::make_unique<cu::Stream>();
  if (!state_->member) return;
  // A small and a large message both ways with every peer on the bounded
  // setup thread, so NCCL's lazy connection setup (per peer and per channel
  // count) happens there and not in a timed launch that could wait on a lost peer.
  state_->comm = std::make_unique<NcclComm>(*state_->members, state_->device, deadline, [](ncclComm_t c) {
    int ranks = 0, me = 0;
    checkNccl(ncclCommCount(c, &ranks), "ncclCommCount");
    checkNccl(ncclCommUserRank(c, &me), "ncclCommUserRank");
    constexpr std::size_t large = 4u << 20;
    void* scratch = nullptr;
    cudaStream_t s = nullptr;
    if (cudaMalloc(&scratch, 2 * large) != cudaSuccess) throw RuntimeFailure("cudaMalloc (NCCL connection setup)");
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
      cudaFree(scratch);
      throw RuntimeFailure("cudaStreamCreate (NCCL connection setup)");
    }
    ncclResult_t rc = ncclSuccess;
    for (const std::size_t bytes : {std::size_t{1}, large}) {
      rc = ncclGroupStart();
      for (int peer = 0; peer < ranks && rc == ncclSuccess; ++peer) {
        if (peer == me) continue;
        rc = ncclSend(scratch, bytes, ncclInt8, peer, c, s);
        if (rc == ncclSuccess) rc = ncclRecv(static_cast<char*>(scratch) + large, bytes, ncclInt8, peer, c, s);
      }
      const auto end = ncclGroupEnd();
      if (rc == ncclSuccess) rc = end;
      if (rc != ncclSuccess) break;
    }
    const auto synced = cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
    cudaFree(scratch);
    checkNccl(rc, "NCCL connection setup with every peer");
    if (synced != cudaSuccess)
      throw RuntimeFailure(std::string("NCCL connection setup: ") + cudaGetErrorString(synced));
  });
}

void NcclTransport::reserve(int slots) {
  auto& s = *state_;
  if (static_cast<int>(s.slots.size()) >= slots) return;
  s.slots.resize(static_cast<std::size_t>(slots));
  while (static_cast<int>(s.bounces.size()) < std::min(slots, maxBouncedInFlight)) {
    s.freeBounces.push_back(static_cast<int>(s.bounces.size()));
    s.bounces.emplace_back(hostBounceBytes);
  }
  s.pendingSlots.reserve(static_cast<std::size_t>(slots));
  s.pendingOps.reserve(static_cast<std::size_t>(slots));
  // At most one launch per slot can be unfinished, so this many events suffice.
  while (static_cast<int>(s.launchEvents.size()) < slots + 1) s.launchEvents.emplace_back(false);
}

void NcclTransport::postSend(int slot, int peer, int, const void* buffer, std::size_t bytes) {
  auto& s = state_->slots.at(static_cast<std::size_t>(slot));
  State::Operation op{true, ncclPeer(peer), const_cast<void*>(buffer), nullptr, bytes};
  if (buffer != s.classified) {
    s.classified = buffer;
    s.classifiedDevice = isDeviceAccessible(buffer);
  }
  if (!s.classifiedDevice) {
    if (bytes > hostBounceBytes)
      throw UsageError("NCCL transport: a send of " + std::to_string(bytes) +
                       " bytes from pageable host memory; only messages up to " + std::to_string(hostBounceBytes) +
                       " bytes are bounced (use memory: cuda or cuda-host)");
    s.bounce = takeBounce();
    op.buffer = state_->bounces[static_cast<std::size_t>(s.bounce)].data();
    std::memcpy(op.buffer, buffer, bytes);
  }
  s.operation = op;
  s.pending = true;
  state_->pendingSlots.push_back(slot);
  state_->pendingOps.push_back({op.send, op.peer});
}

void NcclTransport::postRecv(int slot, int peer, int, void* buffer, std::size_t bytes) {
  auto& s = state_->slots.at(static_cast<std::size_t>(slot));
  State::Operation op{false, ncclPeer(peer), buffer, nullptr, bytes};
  if (buffer != s.classified) {
    s.classified = buffer;
    s.classifiedDevice = isDeviceAccessible(buffer);
  }
  if (!s.classifiedDevice) {
    if (bytes > hostBounceBytes)
      throw UsageError("NCCL transport: a receive of " + std::to_string(bytes) +
                       " bytes into pageable host memory; only messages up to " + std::to_string(hostBounceBytes) +
                       " bytes are bounced (use memory: cuda or cuda-host)");
    s.bounce = takeBounce();
    op.buffer = state_->bounces[static_cast<std::size_t>(s.bounce)].data();
    op.hostTarget = buffer;
  }
  s.operation = op;
  s.pending = true;
  state_->pendingSlots.push_back(slot);
  state_->pendingOps.push_back({op.send, op.peer});
}

int NcclTransport::takeBounce() {
  auto& free = state_->freeBounces;
  if (free.empty())
    throw UsageError("NCCL transport: more than " + std::to_string(state_->bounces.size()) +
                     " messages from or into pageable host memory in flight; keep bulk data in GPU memory");
  const int index = free.back();
  free.pop_back();
  return index;
}

// Groups are cut by endOfNcclGroup (NcclGroupCut.hpp: why).
void NcclTransport::launchPending() {
  auto& s = *state_;
  if (s.pendingSlots.empty()) return;
  const auto stream = s.stream->get();
  std::size_t begin = 0;
  while (begin < s.pendingSlots.size()) {
    const std::size_t end = endOfNcclGroup(s.pendingOps, begin, s.sentTo);
    checkNccl(ncclGroupStart(), "ncclGroupStart");
    for (std::size_t i = begin; i < end; ++i) {
      auto& op = s.slots[static_cast<std::size_t>(s.pendingSlots[i])].operation;
      const auto rc = op.send ? ncclSend(op.buffer, op.bytes, ncclInt8, op.peer, s.comm->get(), stream)
                              : ncclRecv(op.buffer, op.bytes, ncclInt8, op.peer, s.comm->get(), stream);
      if (rc != ncclSuccess) {
        ncclGroupEnd();
        checkNccl(rc, op.send ? "ncclSend" : "ncclRecv");
      }
    }
    checkNccl(ncclGroupEnd(), "ncclGroupEnd");
    const std::uint64_t launch = ++s.launched;
    s.launchEvents[launch % s.launchEvents.size()].record(*s.stream);
    for (std::size_t i = begin; i < end; ++i) {
      auto& slot = s.slots[static_cast<std::size_t>(s.pendingSlots[i])];
      slot.pending = false;
      slot.launch = launch;
    }
    begin = end;
  }
  s.pendingSlots.clear();
  s.pendingOps.clear();
}

bool NcclTransport::testSlots(int first, int count) {
  auto& s = *state_;
  launchPending();
  // Groups finish in launch order on the one stream.
  while (s.completed < s.launched && s.launchEvents[(s.completed + 1) % s.launchEvents.size()].done()) ++s.completed;
  bool all = true;
  for (int i = first; i < first + count; ++i) {
    auto& slot = s.slots[static_cast<std::size_t>(i)];
    if (slot.launch == 0) continue;
    if (slot.launch > s.completed) {
      all = false;
      continue;
    }
    if (slot.operation.hostTarget) std::memcpy(slot.operation.hostTarget, slot.operation.buffer, slot.operation.bytes);
    if (slot.bounce >= 0) {
      s.freeBounces.push_back(slot.bounce);
      slot.bounce = -1;
    }
    slot.launch = 0;
  }
  if (!all && s.comm) {
    try {
      s.comm->checkAsyncError("NCCL send/receive");
    } catch (const RuntimeFailure& e) {
      reportError({runtime::monotonicNow(), -1, e.what()});
      throw;
    }
  }
  return all;
}

void NcclTransport::reset(const runtime::Deadline& deadline) {
  // Work queued on the stream cannot be cancelled one by one: the communicator
  // is aborted (which ends its kernels) and a new one is created.
  auto& s = *state_;
  if (s.comm) s.comm->markBroken();
  s.comm.reset();
  s.pendingSlots.clear();
  s.pendingOps.clear();
  s.freeBounces.clear();
  for (int i = 0; i < static_cast<int>(s.bounces.size()); ++i) s.freeBounces.push_back(i);
  for (auto& slot : s.slots) {
    slot.launch = 0;
    slot.pending = false;
    slot.bounce = -1;
  }
  s.launched = s.completed = 0;
  openCommunicator(deadline);
}

std::vector<std::pair<std::string, std::string>> NcclTransport::describe() const {
  int version = 0;
  ncclGetVersion(&version);
  const auto info = cu::deviceInfo(state_->device);
  return {{"nccl_version", std::to_string(version)},
          {"gpu", std::to_string(state_->device) + " " + info.name + " " + info.pciBusId}};
}

}  // namespace fabscope::transport

#endif  // FABSCOPE_HAVE_NCCL

namespace fabscope::transport {

#if FABSCOPE_HAVE_NCCL
namespace {
std::unique_ptr<Transport> openNcclTransport(const runtime::Communicator& world, int localRank, const OpenRequest&,
                                             const runtime::Deadline& deadline) {
  return std::make_unique<NcclTransport>(world, localRank, deadline);
}
}  // namespace
#else
constexpr Opener openNcclTransport = nullptr;
#endif

const TransportEntry& ncclTransportEntry() {
  static const TransportEntry entry{
      "nccl",
      FABSCOPE_HAVE_NCCL ? "" : "built without CUDA/NCCL",
      {.hostMemory = false,
       .deviceMemory = true,
       .inOrder = true,
       .collectives = Collectives::device,
       .abortsOnPeerLoss = true,
       .peerLossReport = "NCCL asynchronous error (ncclCommGetAsyncError, non-blocking communicator): raised by "
                         "NCCL's network transports once their own timeouts expire; within a host (NVLink, PCIe "
                         "peer-to-peer, shared memory) a lost peer's operations wait without bound, so the "
                         "survivors' own step deadline (request_timeout) decides"},
      std::nullopt,
      openNcclTransport};
  return entry;
}

}  // namespace fabscope::transport
