#pragma once
#include <vector>

#include "runtime/Mpi.hpp"
#include "transport/Transport.hpp"

namespace fabscope::transport {

// MPI point-to-point on a private duplicate of the world communicator, so test
// traffic can never match a control-plane message.
//
// Waits: polled by default (MPI_Test loops that end at the test's deadline, after
// which the run resets the data path and goes on). With blocking waits (scenario
// transports: {mpi: {wait: blocking}}) waitSlots blocks in MPI_Wait, as
// osu_latency does: Open MPI then spins on its progress engine alone, and an
// 8-byte reply over shared memory is seen about 7 % sooner (docs/benchmarks.md,
// "The MPI latency gap, split"). MPI_Wait has no deadline of its own, so the
// watchdog is the bound: a silent peer ends the rank at the deadline plus the
// watchdog's grace, named, with exit code 3, and the run ends instead of going on.
// Messages up to inlineBytes then go as osu_latency's do: MPI_Send (which Open
// MPI sends inline, without a request) and MPI_Recv, the receive posted when it
// is waited for (postRecv only notes it). On the GPU machine the minimal
// ping-pong with MPI_Isend and a pre-posted receive read 1.076-1.091 of MPI_Send
// and MPI_Recv, and fabscope with MPI_Wait alone 1.092. Only small messages:
// every Open MPI transport sends them eagerly, so an MPI_Send never waits for
// its receive to be posted (a rendezvous send would deadlock two ranks that
// both send before they receive, as the bidirectional kind does).
struct MpiSettings;  // MpiTransport.cpp

class MpiTransport final : public Transport {
 public:
  // `settings`: the scenario's (MpiTransport.cpp), read here once.
  MpiTransport(const runtime::Communicator& world, const MpiSettings& settings, const runtime::Deadline& deadline);
  ~MpiTransport() override;

  std::string_view name() const override { return "mpi"; }
  void reserve(int slots) override;
  void postSend(int slot, int peer, int tag, const void* buffer, std::size_t bytes) override;
  void postRecv(int slot, int peer, int tag, void* buffer, std::size_t bytes) override;
  bool testSlots(int first, int count) override;
  void reset(const runtime::Deadline& deadline) override;
  void waitSlots(int first, int count, const runtime::Deadline& deadline) override;
  std::vector<std::pair<std::string, std::string>> describe() const override;
  void startTest(const runtime::Deadline& deadline) override { testDeadline_ = deadline.at(); }

  // With blocking waits, messages of at most this many bytes use MPI_Send and MPI_Recv.
  static constexpr std::size_t inlineBytes = 1024;

 protected:
  int peerOfSlots(int first, int count) const override;

 private:
  void duplicate(MPI_Comm from, const runtime::Deadline& deadline);

  MPI_Comm world_;
  bool blockingWaits_;
  int waitsSinceClock_ = 0;  // blocking waits since the deadline was last looked at
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::vector<MPI_Request> requests_;
  std::vector<int> peers_;  // the rank each slot was last posted to (for the watchdog)
  // A small receive noted by postRecv in blocking mode, posted when it is waited
  // for (MPI_Recv) or tested (MPI_Irecv).
  struct DeferredRecv {
    void* buffer = nullptr;
    int bytes = 0;
    int tag = 0;
    bool pending = false;
  };
  std::vector<DeferredRecv> deferred_;
  // The running test's deadline (startTest): the watchdog's bound for an
  // inline MPI_Send, which has none of its own (an MPI_Send over shared memory
  // was seen to wait for a stopped receiver).
  runtime::Nanoseconds testDeadline_ = 0;
  void postDeferred(int slot);
  void fail(int rc, int peer, const char* call) const;
};

}  // namespace fabscope::transport
