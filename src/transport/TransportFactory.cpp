#include "transport/TransportFactory.hpp"

#include <vector>

#include "fabscope/BuildConfig.hpp"
#include "transport/MpiTransport.hpp"
#if FABSCOPE_HAVE_UCX
#include "transport/UcxTransport.hpp"
#endif
#if FABSCOPE_HAVE_VERBS
#include "transport/VerbsTransport.hpp"
#endif
#if FABSCOPE_HAVE_NCCL
#include "transport/NcclTransport.hpp"
#endif

namespace fabscope::transport {

namespace {

struct TransportEntry {
  const char* name;
  const char* unavailable;  // "" when built, else why not
  TransportCapabilities can;
};

// Every transport by name: whether this build has it and what it can do,
// declared here once.
const std::vector<TransportEntry>& transportTable() {
  static const std::vector<TransportEntry> table = {
      {"mpi", "", {.collectives = Collectives::host}},
      {"ucx", FABSCOPE_HAVE_UCX ? "" : "built without UCX",
       {.put = true,
        .get = true,
        .survivesPeerLoss = true,
        .peerLossReport = "UCX endpoint error callback (UCP_ERR_HANDLING_MODE_PEER): over TCP a dead process's "
                          "socket reset arrives at once; a hung process or a dead link is never reported (UCX "
                          "keepalive aside), heartbeats catch those"}},
      {"verbs", FABSCOPE_HAVE_VERBS ? "" : "built without libibverbs", {.put = true, .get = true}},
      {"nccl", FABSCOPE_HAVE_NCCL ? "" : "built without CUDA/NCCL",
       {.hostMemory = false,
        .deviceMemory = true,
        .inOrder = true,
        .collectives = Collectives::device,
        .abortsOnPeerLoss = true,
        .peerLossReport = "NCCL asynchronous error (ncclCommGetAsyncError, non-blocking communicator): raised by "
                          "NCCL's network transports once their own timeouts expire; within a host (NVLink, PCIe "
                          "peer-to-peer, shared memory) a lost peer's operations wait without bound, so the "
                          "survivors' own step deadline (request_timeout) decides"}},
  };
  return table;
}

}  // namespace

std::map<std::string, std::string> transportAvailability() {
  std::map<std::string, std::string> out;
  for (const auto& t : transportTable()) out.emplace(t.name, t.unavailable);
  return out;
}

TransportCapabilities transportCapabilities(const std::string& name) {
  for (const auto& t : transportTable())
    if (name == t.name) return t.can;
  throw UsageError("unknown transport '" + name + "'");
}

TransportCapabilities Transport::capabilities() const { return transportCapabilities(std::string(name())); }

std::string transportsWith(bool TransportCapabilities::*capability) {
  std::string out;
  for (const auto& t : transportTable())
    if (t.can.*capability) out += (out.empty() ? "" : " or ") + std::string(t.name);
  return out;
}

std::unique_ptr<Transport> openTransport(const std::string& name, const runtime::Communicator& world, int localRank,
                                         const TransportTuning& tuning, const runtime::Deadline& deadline) {
  (void)localRank;
  if (name == "mpi") return std::make_unique<MpiTransport>(world, tuning.mpiBlockingWaits, deadline);
#if FABSCOPE_HAVE_UCX
  if (name == "ucx") return std::make_unique<UcxTransport>(world, tuning.oneSided, deadline);
#endif
#if FABSCOPE_HAVE_NCCL
  if (name == "nccl") return std::make_unique<NcclTransport>(world, localRank, deadline);
#endif
#if FABSCOPE_HAVE_VERBS
  if (name == "verbs") return std::make_unique<VerbsTransport>(world, tuning, deadline);
#endif
  const auto why = transportAvailability();
  const auto it = why.find(name);
  throw UsageError("transport '" + name + "' cannot be opened: " + (it == why.end() ? "unknown transport" : it->second));
}

}  // namespace fabscope::transport
