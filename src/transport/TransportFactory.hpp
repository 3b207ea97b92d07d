#pragma once
// Which data paths this build has, what each can do, and how to open one.
// A new backend's name, availability and capabilities are declared once, in
// the table of TransportFactory.cpp (what else it touches: docs/architecture.md).
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/Mpi.hpp"
#include "transport/Transport.hpp"

namespace fabscope::transport {

// A transport's own collective library, for kinds that bring their own data
// path (all-reduce, all-to-all): MPI's on host memory, NCCL's on GPU memory.
enum class Collectives { none, host, device };

// What a transport can do, known by name before anything is opened: the
// scenario loader and the kinds decide by these, never by a transport's name.
// Mirrors the virtual queries on Transport.
struct TransportCapabilities {
  bool hostMemory = true;     // test buffers may be in host memory (NCCL: GPU-addressable only)
  bool deviceMemory = false;  // transfer buffers may be in GPU memory
  bool inOrder = false;       // matches by posting order, tags ignored (Transport::matchesInOrder)
  bool put = false;
  bool get = false;
  Collectives collectives = Collectives::none;
  // The data path carries on when a peer dies and says so (fault drills).
  bool survivesPeerLoss = false;
  // How the transport reports a lost peer, for the result file; empty: it does not.
  std::string_view peerLossReport = {};
};
// Throws UsageError for an unknown name.
TransportCapabilities transportCapabilities(const std::string& name);
// The names of the transports (built or not) that have a capability, joined
// with " or ", e.g. transportsWith(&TransportCapabilities::deviceMemory) == "nccl".
std::string transportsWith(bool TransportCapabilities::*capability);

// name -> "" when usable in this build, otherwise why not (shown to the user).
std::map<std::string, std::string> transportAvailability();

// Collective over `world`: every rank opens the same transport. `localRank`
// (position among the ranks of this host) picks the GPU of GPU transports.
std::unique_ptr<Transport> openTransport(const std::string& name, const runtime::Communicator& world, int localRank,
                                         const TransportTuning& tuning, const runtime::Deadline& deadline);

}  // namespace fabscope::transport
