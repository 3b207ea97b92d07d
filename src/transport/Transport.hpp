#pragma once
// The data plane tests measure through. MPI stays the control plane; a
// transport only moves bytes between ranks. Operations live in caller-chosen
// slots of a pool reserved before the timed loop, so posting and completing
// never allocate.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/Deadline.hpp"

namespace fabscope::transport {

enum class MemoryKind { host, cuda, cudaHost };

// A transport's own collective library, for kinds that bring their own data
// path (all-reduce, all-to-all): MPI's on host memory, NCCL's on GPU memory.
enum class Collectives { none, host, device };

// What a transport can do, declared once per transport in the table of
// TransportFactory.cpp and known by name before anything is opened: the
// scenario loader and the kinds decide by these (before opening:
// transportCapabilities(name); once open: Transport::capabilities()), never by
// a transport's name.
struct TransportCapabilities {
  bool hostMemory = true;     // test buffers may be in host memory (NCCL: GPU-addressable only)
  bool deviceMemory = false;  // transfer buffers may be in GPU memory
  // Messages between two ranks match in posting order only, per direction,
  // with tags ignored and sizes equal on both sides (NCCL): a kind must then
  // post the same sequence on both sides of every pair.
  bool inOrder = false;
  bool put = false;  // exposeRegion / postPut / postFlush
  bool get = false;  // exposeRegion / postGet / postFlush
  Collectives collectives = Collectives::none;
  // The data path carries on when a peer dies and says so (fault drills).
  bool survivesPeerLoss = false;
  // It does not carry on, but each survivor can abort its communicator alone,
  // without the lost peer (ncclCommAbort): a fault drill over it detects the
  // loss and aborts, with nothing re-routed.
  bool abortsOnPeerLoss = false;
  // How the transport reports a lost peer, for the result file; empty: it does not.
  std::string_view peerLossReport = {};
};

struct TransportError {
  runtime::Nanoseconds at;  // monotonic clock when it was noticed
  int peer;                 // -1 if not tied to one peer
  std::string message;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string_view name() const = 0;

  // Makes room for `slots` concurrent operations (outside timed loops).
  virtual void reserve(int slots) = 0;
  virtual void postSend(int slot, int peer, int tag, const void* buffer, std::size_t bytes) = 0;
  virtual void postRecv(int slot, int peer, int tag, void* buffer, std::size_t bytes) = 0;
  // True when every operation in slots [first, first + count) has completed.
  virtual bool testSlots(int first, int count) = 0;
  // Drops every outstanding operation so the next test starts clean (after a
  // timeout). Collective over the transport's ranks, bounded by `deadline`.
  // After reset() returns, no outstanding operation touches its buffer any more
  // (MPI: in-flight transfers get a short grace to finish, the rest are
  // cancelled, and all are waited for under the deadline).
  virtual void reset(const runtime::Deadline& deadline) = 0;

  // --- Optional extensions (defaults: not supported) ------------------------
  // What this transport can do: its entry in the factory's table (setup code
  // only; it looks the name up).
  TransportCapabilities capabilities() const;

  // The running test's deadline, given before its kind runs (outside timed
  // loops): a transport whose posts may block (MpiTransport's MPI_Send with
  // blocking waits) watches them with it, never with a past test's deadline.
  virtual void startTest(const runtime::Deadline& deadline) { (void)deadline; }
  // Facts about the backend's environment for the result file (key, value),
  // e.g. library version, UCX_TLS, transports selected. Outside timed loops.
  virtual std::vector<std::pair<std::string, std::string>> describe() const { return {}; }

  // One-sided put. exposeRegion is collective over the transport's ranks:
  // every rank registers its own [base, base + bytes) and learns every other
  // rank's remote key; the returned id names that region on all ranks.
  // Regions stay registered until withdrawRegion (also collective).
  virtual int exposeRegion(void* base, std::size_t bytes, MemoryKind kind, const runtime::Deadline& deadline) {
    (void)base, (void)bytes, (void)kind, (void)deadline;
    throw UsageError(std::string("transport '") + std::string(name()) + "' does not support one-sided put");
  }
  virtual void withdrawRegion(int region, const runtime::Deadline& deadline) { (void)region, (void)deadline; }
  // Writes bytes from `local` into `peer`'s region at `remoteOffset`. The slot
  // completes when `local` may be reused, not when the data is visible remotely:
  // postFlush's slot completes when every earlier put to `peer` has landed.
  virtual void postPut(int slot, int peer, int region, std::size_t remoteOffset, const void* local, std::size_t bytes) {
    (void)slot, (void)peer, (void)region, (void)remoteOffset, (void)local, (void)bytes;
    throw UsageError(std::string("transport '") + std::string(name()) + "' does not support one-sided put");
  }
  // One-sided get: reads `bytes` at `remoteOffset` of `peer`'s region into
  // `local`; the slot completes when the data is in `local`.
  virtual void postGet(int slot, int peer, int region, std::size_t remoteOffset, void* local, std::size_t bytes) {
    (void)slot, (void)peer, (void)region, (void)remoteOffset, (void)local, (void)bytes;
    throw UsageError(std::string("transport '") + std::string(name()) + "' does not support one-sided get");
  }
  virtual void postFlush(int slot, int peer) {
    (void)slot, (void)peer;
    throw UsageError(std::string("transport '") + std::string(name()) + "' does not support one-sided put");
  }

  // Virtual so that a transport may inline its own poll into the loop (UCX
  // does); every override keeps this wait's deadline, watch and peer.
  virtual void waitSlots(int first, int count, const runtime::Deadline& deadline) {
    runtime::waitUntil([&] { return testSlots(first, count); }, deadline, waitDescription(), peerOfSlots(first, count));
  }

  void onError(std::function<void(const TransportError&)> handler) { errorHandler_ = std::move(handler); }

 protected:
  virtual const char* waitDescription() const { return "a transfer to or from a peer rank"; }
  // The rank the slots [first, first + count) were last posted to (for the
  // watchdog's line); runtime::watchdog::noPeer when unknown or several.
  virtual int peerOfSlots(int first, int count) const { return (void)first, (void)count, runtime::watchdog::noPeer; }
  void reportError(const TransportError& error) const {
    if (errorHandler_) errorHandler_(error);
  }

 private:
  std::function<void(const TransportError&)> errorHandler_;
};

}  // namespace fabscope::transport
