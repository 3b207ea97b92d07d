#pragma once
// UCX (UCP) data path: one context and one worker per rank, tag send/receive
// for the slot API and RMA put and get for one-sided tests. Worker addresses travel
// over MPI once; an endpoint to a peer is created on first use. Endpoints use
// UCP_ERR_HANDLING_MODE_PEER, so a lost peer shows up as an error callback
// that fails every wait on that peer instead of letting it hang.
#include <ucp/api/ucp.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "runtime/Mpi.hpp"
#include "transport/Transport.hpp"

namespace fabscope::transport {

class UcxTransport final : public Transport {
 public:
  // Collective over `world`, which must outlive the transport (reset() and
  // region setup use it as the control plane). `oneSided`: the context asks
  // for UCX's RMA feature (exposeRegion, postPut, postGet); without it UCX
  // picks no lanes for RMA, and a poll progresses one shared-memory transport
  // instead of two (OpenRequest::oneSided).
  UcxTransport(const runtime::Communicator& world, bool oneSided, const runtime::Deadline& deadline);
  ~UcxTransport() override;
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  std::string_view name() const override { return "ucx"; }
  void reserve(int slots) override;
  void postSend(int slot, int peer, int tag, const void* buffer, std::size_t bytes) override;
  void postRecv(int slot, int peer, int tag, void* buffer, std::size_t bytes) override;
  bool testSlots(int first, int count) override;
  // The base class's wait with this transport's poll inlined into the loop:
  // through the virtual testSlots every poll paid a call and a frame (about
  // 50 instructions on top of UCX's own 112 for an empty poll), and
  // the length of an empty poll is how late an arrived message is seen.
  void waitSlots(int first, int count, const runtime::Deadline& deadline) override;
  void reset(const runtime::Deadline& deadline) override;
  void startTest(const runtime::Deadline& deadline) override { testDeadline_ = deadline.at(); }

  std::vector<std::pair<std::string, std::string>> describe() const override;

  int exposeRegion(void* base, std::size_t bytes, MemoryKind kind, const runtime::Deadline& deadline) override;
  void withdrawRegion(int region, const runtime::Deadline& deadline) override;
  void postPut(int slot, int peer, int region, std::size_t remoteOffset, const void* local, std::size_t bytes) override;
  void postGet(int slot, int peer, int region, std::size_t remoteOffset, void* local, std::size_t bytes) override;
  void postFlush(int slot, int peer) override;

 protected:
  const char* waitDescription() const override { return "a UCX transfer to or from a peer rank"; }
  int peerOfSlots(int first, int count) const override;

 private:
  struct ContextDeleter {
    void operator()(ucp_context* c) const noexcept { ucp_cleanup(c); }
  };
  struct WorkerDeleter {
    void operator()(ucp_worker* w) const noexcept { ucp_worker_destroy(w); }
  };

  // One per rank; its address is the error callback's argument, so the vector
  // is sized once in the constructor and never reallocated.
  struct Peer {
    UcxTransport* owner = nullptr;
    int rank = -1;
    std::vector<std::byte> address;  // the peer's worker address
    ucp_ep_h endpoint = nullptr;
    bool failed = false;
    ucs_status_t failure = UCS_OK;
    runtime::Nanoseconds failedAt = 0;
  };

  struct Slot {
    void* request = nullptr;  // UCX request still in flight, or null
    int peer = -1;
  };

  struct Region {
    bool live = false;
    ucp_mem_h memory = nullptr;
    std::vector<std::uint64_t> remoteBase;           // per peer
    std::vector<std::size_t> remoteBytes;            // per peer
    std::vector<std::vector<std::byte>> packedRkey;  // per peer, as received
    std::vector<ucp_rkey_h> rkey;                    // per peer, unpacked on first put
  };

  // Where a put or get of `bytes` at `remoteOffset` of `peer`'s region goes
  // (the peer's rkey is unpacked for its endpoint on first use).
  struct RemoteTarget {
    ucp_ep_h endpoint;
    std::uint64_t address;
    ucp_rkey_h rkey;
  };
  RemoteTarget remoteTarget(int peer, int region, std::size_t remoteOffset, std::size_t bytes, const char* operation);

  static void onEndpointError(void* arg, ucp_ep_h endpoint, ucs_status_t status);

  // The post path (postSend, postRecv, ...) is inline and its failures out of
  // line: it is on the critical path of every latency sample, and the
  // out-of-line versions saved six registers and a frame before their first
  // test (about 20 instructions each).
  ucp_ep_h endpointTo(int peer) {
    ucp_ep_h endpoint = peers_[static_cast<std::size_t>(peer)].endpoint;
    return endpoint ? endpoint : connect(peer);
  }
  ucp_ep_h connect(int peer);  // first use of `peer` (a warm-up iteration)
  void track(int slot, int peer, ucs_status_ptr_t started, const char* operation) {
    Slot& s = slots_[static_cast<std::size_t>(slot)];
    s.peer = peer;
    s.request = nullptr;  // null also when UCX completed the operation in place
    if (UCS_PTR_IS_ERR(started)) [[unlikely]]
      failedToStart(peer, started, operation);
    s.request = started;
  }
  [[noreturn]] void failedToStart(int peer, ucs_status_ptr_t started, const char* operation);
  [[noreturn]] void failSlot(int slot, ucs_status_t status);
  [[noreturn]] void failPeer(int slot);
  void checkSlot(int slot, int peer) const {
    if (peers_[static_cast<std::size_t>(peer)].failed) [[unlikely]]
      refusePost(slot, peer);
  }
  [[noreturn]] void refusePost(int slot, int peer) const;
  bool pollSlots(int first, int count);  // testSlots, inlined into waitSlots' loop
  // Cancels and frees every request still in flight (error and reset paths).
  void abandonPending(const runtime::Deadline& deadline);
  // How long a failed operation's cleanup (abandonPending) may take: UCX
  // cannot cancel sends, puts or gets, and a send to a stopped peer never
  // completes. Past the moment of the failure, and never past the running
  // test's deadline, by at most this grace; its own deadline then passing
  // does not hide the failure that started the cleanup.
  static constexpr double cancelGraceSeconds = 5;
  runtime::Deadline cancelDeadline() const;
  void abandonAfterFailure() noexcept;
  void closeEndpoint(Peer& peer, const runtime::Deadline& deadline);
  // Receives, into scratch memory, what arrived for no receive (at destroy).
  void drainUnexpected(const runtime::Deadline& deadline);
  static constexpr int maxDrainedMessages = 100000;
  void destroyRkeysOf(int peer);
  void waitRequest(void* request, const runtime::Deadline& deadline, const char* what,
                   int peer = runtime::watchdog::noPeer);

  // The transport's own duplicate of the world for its control collectives:
  // a collective left unfinished by a missed deadline must not break the
  // matching of the runner's collectives on the world (seen as
  // MPI_ERR_TRUNCATE in the next agreement), and a fresh transport after a
  // missed deadline starts on a clean one.
  runtime::Communicator world_;
  int me_;
  bool oneSided_;
  std::uint32_t epoch_ = 0;
  // The running test's deadline (startTest); none before the first test.
  runtime::Nanoseconds testDeadline_ = std::numeric_limits<runtime::Nanoseconds>::max();
  std::unique_ptr<ucp_context, ContextDeleter> context_;
  std::unique_ptr<ucp_worker, WorkerDeleter> worker_;
  std::vector<Peer> peers_;
  std::vector<Slot> slots_;
  std::vector<Region> regions_;
};

}  // namespace fabscope::transport
