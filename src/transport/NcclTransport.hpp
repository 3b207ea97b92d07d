#pragma once
// GPU-to-GPU send/receive over NCCL (one rank per GPU). NCCL has no tags and
// no independent progress per message: messages between two ranks match in
// posting order per direction, and sizes must agree on both sides. Operations
// posted before the next test are launched together as NCCL groups (so a
// send and a receive posted together never wait on each other; see
// launchPending for where a group is cut), and groups run in launch order on
// one stream; its capability `inOrder` says so to the kinds, which post in
// causal order: a receive that answers sends is posted after them. Host buffers (small control messages such as acks
// and headers) are bounced through a small pool of pinned buffers. Compiled only with NCCL.
//
// NCCL allows one rank per GPU in a communicator, so only the first
// (device count) ranks of each host join it; the others (e.g. congestor ranks
// that run a host<->GPU copy load on the same GPUs) have no NCCL path, and a
// transfer addressed to or from them is a usage error.
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/Mpi.hpp"
#include "transport/Transport.hpp"

namespace fabscope::transport {

class NcclTransport final : public Transport {
 public:
  // Largest host buffer a slot bounces; larger messages must be in GPU memory.
  static constexpr std::size_t hostBounceBytes = 64 * 1024;
  // Host-memory messages in flight at once (each holds one pinned bounce buffer).
  static constexpr int maxBouncedInFlight = 64;

  NcclTransport(const runtime::Communicator& world, int localRank, const runtime::Deadline& deadline);
  ~NcclTransport() override;

  std::string_view name() const override { return "nccl"; }
  void reserve(int slots) override;
  void postSend(int slot, int peer, int tag, const void* buffer, std::size_t bytes) override;
  void postRecv(int slot, int peer, int tag, void* buffer, std::size_t bytes) override;
  bool testSlots(int first, int count) override;
  void reset(const runtime::Deadline& deadline) override;
  std::vector<std::pair<std::string, std::string>> describe() const override;

 protected:
  const char* waitDescription() const override { return "an NCCL send/receive to or from a peer GPU"; }

 private:
  struct State;
  void launchPending();
  int takeBounce();
  void openCommunicator(const runtime::Deadline& deadline);
  int ncclPeer(int worldRank) const;

  const runtime::Communicator& world_;
  std::unique_ptr<State> state_;
  std::vector<int> ncclRankOf_;  // world rank -> rank in the NCCL communicator, -1: not a member
};

}  // namespace fabscope::transport
