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

// The transport handed to kinds that bring their own data path (usesTransport()
// false: collectives, API traffic): MPI is always built and already open as the
// control plane, so it costs nothing to hand over and is never measured.
inline constexpr const char* controlPlaneTransport = "mpi";

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
