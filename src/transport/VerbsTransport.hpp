#pragma once
// Raw libibverbs data path: one reliable-connected queue pair per peer, send/
// receive for the slot API, RDMA write for one-sided put and RDMA read for
// one-sided get. Queue-pair
// information travels over MPI. Not yet run on hardware (no RDMA device on
// the machines it was written on); parameter logic is in VerbsParameters.
//
// Verbs has no tag matching: receives from one peer match incoming sends in
// posting order. Tags travel as immediate data and are checked on arrival,
// so a test whose order of posts differs between sender and receiver fails
// loudly instead of mixing up messages.
#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/Mpi.hpp"
#include "transport/Transport.hpp"
#include "transport/VerbsParameters.hpp"
#include "transport/VerbsPostWindow.hpp"

namespace fabscope::transport {

struct VerbsSettings;  // VerbsTransport.cpp

class VerbsTransport final : public Transport {
 public:
  // Collective over `world` (which must outlive the transport). Throws
  // RuntimeFailure on every rank when any rank lacks a usable device.
  // `settings`: the scenario's (VerbsTransport.cpp): its max_rd_atomic further
  // limits RDMA reads in flight.
  VerbsTransport(const runtime::Communicator& world, const VerbsSettings& settings, const runtime::Deadline& deadline);
  ~VerbsTransport() override;
  VerbsTransport(const VerbsTransport&) = delete;
  VerbsTransport& operator=(const VerbsTransport&) = delete;

  std::string_view name() const override { return "verbs"; }
  void reserve(int slots) override;
  void postSend(int slot, int peer, int tag, const void* buffer, std::size_t bytes) override;
  void postRecv(int slot, int peer, int tag, void* buffer, std::size_t bytes) override;
  bool testSlots(int first, int count) override;
  void reset(const runtime::Deadline& deadline) override;
  std::vector<std::pair<std::string, std::string>> describe() const override;

  int exposeRegion(void* base, std::size_t bytes, MemoryKind kind, const runtime::Deadline& deadline) override;
  void withdrawRegion(int region, const runtime::Deadline& deadline) override;
  void postPut(int slot, int peer, int region, std::size_t remoteOffset, const void* local, std::size_t bytes) override;
  void postGet(int slot, int peer, int region, std::size_t remoteOffset, void* local, std::size_t bytes) override;
  void postFlush(int slot, int peer) override;

 protected:
  const char* waitDescription() const override { return "an RDMA transfer to or from a peer rank"; }

 private:
  struct DeviceListDeleter {
    void operator()(ibv_device** l) const noexcept { ibv_free_device_list(l); }
  };
  struct ContextDeleter {
    void operator()(ibv_context* c) const noexcept { ibv_close_device(c); }
  };
  struct PdDeleter {
    void operator()(ibv_pd* p) const noexcept { ibv_dealloc_pd(p); }
  };
  struct CqDeleter {
    void operator()(ibv_cq* c) const noexcept { ibv_destroy_cq(c); }
  };
  struct QpDeleter {
    void operator()(ibv_qp* q) const noexcept { ibv_destroy_qp(q); }
  };
  struct MrDeleter {
    void operator()(ibv_mr* m) const noexcept { ibv_dereg_mr(m); }
  };
  using MrHandle = std::unique_ptr<ibv_mr, MrDeleter>;

  enum class SlotState : std::uint8_t { idle, pending, done };
  struct Slot {
    SlotState state = SlotState::idle;
    int peer = -1;
    std::uint32_t expectedTag = 0;
    bool isReceive = false;
  };
  struct Region {
    MrHandle mr;
    std::vector<std::uint64_t> remoteBase;
    std::vector<std::uint64_t> remoteBytes;
    std::vector<std::uint32_t> remoteKey;
  };

  void openLocal();
  void connectAll(const runtime::Deadline& deadline);
  void bringUp(int peer);
  std::uint32_t localKey(const void* buffer, std::size_t bytes);
  void postSendRequest(int slot, int peer, ibv_send_wr& wr);
  void postWaitingSend(int slot);
  // An RDMA write or read of `bytes` between `local` and `peer`'s region.
  void postRdma(int slot, int peer, int region, std::size_t remoteOffset, const void* local, std::size_t bytes,
                ibv_wr_opcode opcode, const char* operation);
  void drainAfterError(const runtime::Deadline& deadline);
  [[noreturn]] void failCompletion(const ibv_wc& wc);

  // The transport's own duplicate of the world for its control collectives:
  // a collective left unfinished by a missed deadline must not break the
  // matching of the runner's collectives on the world (seen as
  // MPI_ERR_TRUNCATE in the next agreement), and a fresh transport after a
  // missed deadline starts on a clean one.
  runtime::Communicator world_;
  int me_;
  verbs::VerbsOptions options_;
  std::string deviceName_;
  verbs::LinkLayer linkLayer_ = verbs::LinkLayer::infiniband;
  verbs::GidChoice gid_;
  std::unique_ptr<ibv_context, ContextDeleter> context_;
  std::unique_ptr<ibv_pd, PdDeleter> pd_;
  std::unique_ptr<ibv_cq, CqDeleter> cq_;
  std::vector<std::unique_ptr<ibv_qp, QpDeleter>> qps_;  // per peer (self included: a loopback QP)
  std::vector<verbs::QpEndpointInfo> localInfo_;         // per peer
  std::vector<verbs::QpEndpointInfo> remoteInfo_;        // per peer
  std::vector<bool> peerFailed_;
  std::vector<Slot> slots_;
  std::vector<MrHandle> registrations_;  // send/receive buffers, registered on first use
  std::vector<Region> regions_;
  // Send flow control: a work request waits (by slot) until its send queue
  // and the completion queue have room (verbs::PostWindow).
  struct WaitingSend {
    ibv_send_wr wr{};
    ibv_sge sge{};
  };
  std::vector<WaitingSend> waitingSends_;
  verbs::PostWindow window_;
  int deviceMaxInitiatorReads_ = 1;  // ibv_device_attr max_qp_init_rd_atom
  int deviceMaxResponderReads_ = 1;  // ibv_device_attr max_qp_rd_atom
};

}  // namespace fabscope::transport
