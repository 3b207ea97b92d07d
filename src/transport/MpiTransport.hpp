#pragma once
#include <vector>

#include "runtime/Mpi.hpp"
#include "transport/Transport.hpp"

namespace fabscope::transport {

// MPI point-to-point on a private duplicate of the world communicator, so test
// traffic can never match a control-plane message.
class MpiTransport final : public Transport {
 public:
  MpiTransport(const runtime::Communicator& world, const runtime::Deadline& deadline);
  ~MpiTransport() override;

  std::string_view name() const override { return "mpi"; }
  void reserve(int slots) override;
  void postSend(int slot, int peer, int tag, const void* buffer, std::size_t bytes) override;
  void postRecv(int slot, int peer, int tag, void* buffer, std::size_t bytes) override;
  bool testSlots(int first, int count) override;
  void reset(const runtime::Deadline& deadline) override;
 protected:
  int peerOfSlots(int first, int count) const override;

 private:
  void duplicate(MPI_Comm from, const runtime::Deadline& deadline);

  MPI_Comm world_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::vector<MPI_Request> requests_;
  std::vector<int> peers_;  // the rank each slot was last posted to (for the watchdog)
};

}  // namespace fabscope::transport
