#include "transport/TransportFactory.hpp"

#include <optional>
#include <vector>

#include "fabscope/BuildConfig.hpp"
#include "transport/MpiSettings.hpp"
#include "transport/MpiTransport.hpp"
#include "transport/VerbsSettings.hpp"
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

// Opens the transport, collectively over `world`.
using Opener = std::unique_ptr<Transport> (*)(const runtime::Communicator& world, int localRank,
                                              const OpenRequest& request, const runtime::Deadline& deadline);

struct TransportEntry {
  const char* name;
  const char* unavailable;  // "" when built, else why not
  TransportCapabilities can;
  // Its keys under the scenario's 'transports:' and their parse step, if it has
  // any: its settings struct's rules() (<Name>Settings.hpp), which own them.
  std::optional<scenario::TransportRules> settings;
  Opener open;  // null when this build lacks it
};

// The transport's settings in `request`, else its defaults.
template <class Settings>
const Settings& settingsIn(const OpenRequest& request, const std::string& name) {
  static const Settings defaults;
  if (!request.settings || !request.settings->contains(name)) return defaults;
  return scenario::transportSettingsOf<Settings>(*request.settings, name);
}

std::unique_ptr<Transport> openMpi(const runtime::Communicator& world, int, const OpenRequest& request,
                                   const runtime::Deadline& deadline) {
  return std::make_unique<MpiTransport>(world, settingsIn<MpiSettings>(request, "mpi"), deadline);
}

#if FABSCOPE_HAVE_UCX
std::unique_ptr<Transport> openUcx(const runtime::Communicator& world, int, const OpenRequest& request,
                                   const runtime::Deadline& deadline) {
  return std::make_unique<UcxTransport>(world, request.oneSided, deadline);
}
#else
constexpr Opener openUcx = nullptr;
#endif

#if FABSCOPE_HAVE_VERBS
std::unique_ptr<Transport> openVerbs(const runtime::Communicator& world, int, const OpenRequest& request,
                                     const runtime::Deadline& deadline) {
  return std::make_unique<VerbsTransport>(world, settingsIn<VerbsSettings>(request, "verbs"), deadline);
}
#else
constexpr Opener openVerbs = nullptr;
#endif

#if FABSCOPE_HAVE_NCCL
std::unique_ptr<Transport> openNccl(const runtime::Communicator& world, int localRank, const OpenRequest&,
                                    const runtime::Deadline& deadline) {
  return std::make_unique<NcclTransport>(world, localRank, deadline);
}
#else
constexpr Opener openNccl = nullptr;
#endif

// Every transport by name: whether this build has it, what it can do, its
// scenario keys and how to open it, declared here once.
const std::vector<TransportEntry>& transportTable() {
  static const std::vector<TransportEntry> table = {
      {"mpi", "", {.collectives = Collectives::host}, MpiSettings::rules(), openMpi},
      {"ucx",
       FABSCOPE_HAVE_UCX ? "" : "built without UCX",
       {.put = true,
        .get = true,
        .survivesPeerLoss = true,
        .peerLossReport = "UCX endpoint error callback (UCP_ERR_HANDLING_MODE_PEER): over TCP a dead process's "
                          "socket reset arrives at once; a hung process or a dead link is never reported (UCX "
                          "keepalive aside), heartbeats catch those"},
       std::nullopt,
       openUcx},
      {"verbs",
       FABSCOPE_HAVE_VERBS ? "" : "built without libibverbs",
       {.put = true, .get = true},
       VerbsSettings::rules(),
       openVerbs},
      {"nccl",
       FABSCOPE_HAVE_NCCL ? "" : "built without CUDA/NCCL",
       {.hostMemory = false,
        .deviceMemory = true,
        .inOrder = true,
        .collectives = Collectives::device,
        .abortsOnPeerLoss = true,
        .peerLossReport = "NCCL asynchronous error (ncclCommGetAsyncError, non-blocking communicator): raised by "
                          "NCCL's network transports once their own timeouts expire; within a host (NVLink, PCIe "
                          "peer-to-peer, shared memory) a lost peer's operations wait without bound, so the "
                          "survivors' own step deadline (request_timeout) decides"},
       std::nullopt,
       openNccl},
  };
  return table;
}

}  // namespace

std::map<std::string, std::string> transportAvailability() {
  std::map<std::string, std::string> out;
  for (const auto& t : transportTable()) out.emplace(t.name, t.unavailable);
  return out;
}

std::map<std::string, scenario::TransportRules> transportSettingsRules() {
  std::map<std::string, scenario::TransportRules> out;
  for (const auto& t : transportTable())
    if (t.settings) out.emplace(t.name, *t.settings);
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
                                         const OpenRequest& request, const runtime::Deadline& deadline) {
  for (const auto& t : transportTable())
    if (name == t.name) {
      if (!t.open) throw UsageError("transport '" + name + "' cannot be opened: " + t.unavailable);
      return t.open(world, localRank, request, deadline);
    }
  throw UsageError("transport '" + name + "' cannot be opened: unknown transport");
}

}  // namespace fabscope::transport
