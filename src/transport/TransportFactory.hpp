#pragma once
// Which data paths this build has, and how to open one. A new backend adds
// itself here and nowhere else.
#include <map>
#include <memory>
#include <string>

#include "runtime/Mpi.hpp"
#include "transport/Transport.hpp"

namespace fabscope::transport {

// What a transport can do, known by name before anything is opened (the
// scenario loader checks against it). Mirrors the virtual queries on Transport.
struct TransportCapabilities {
  bool deviceMemory = false;  // transfer buffers may be in GPU memory
  bool inOrder = false;       // matches by posting order, tags ignored (Transport::matchesInOrder)
  bool put = false;
  bool get = false;
};
// Throws UsageError for an unknown name.
TransportCapabilities transportCapabilities(const std::string& name);

// name -> "" when usable in this build, otherwise why not (shown to the user).
std::map<std::string, std::string> transportAvailability();

// Collective over `world`: every rank opens the same transport. `localRank`
// (position among the ranks of this host) picks the GPU of GPU transports.
std::unique_ptr<Transport> openTransport(const std::string& name, const runtime::Communicator& world, int localRank,
                                         const TransportTuning& tuning, const runtime::Deadline& deadline);

}  // namespace fabscope::transport
