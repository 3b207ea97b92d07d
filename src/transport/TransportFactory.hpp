#pragma once
// Which data paths this build has, what each can do, which settings a scenario
// may give it, and how to open one. A backend's name, availability,
// capabilities, scenario keys with their parse step, and opener are declared
// once, in its entry of the table in TransportFactory.cpp (what else a new one
// touches: docs/architecture.md).
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/Mpi.hpp"
#include "scenario/Scenario.hpp"
#include "transport/Transport.hpp"

namespace fabscope::transport {

// The transport handed to kinds that bring their own data path (usesTransport()
// false: collectives, API traffic): MPI is always built and already open as the
// control plane, so it costs nothing to hand over and is never measured.
inline constexpr const char* controlPlaneTransport = "mpi";
// A test's transport when it names none: MPI, always built.
inline constexpr const char* defaultTransport = "mpi";

// The scenario's settings of each transport (top-level 'transports:'), as the
// transports' parse steps read them; each only lowers what the transport
// would otherwise use.
// transports: {mpi: {wait: polled|blocking}}: blocking waits in MPI_Wait
// (osu_latency's way, the reply seen sooner) with the watchdog as their only
// deadline; polled (the default) waits in MPI_Test loops that end at the
// test's deadline and let the run go on (docs/transports.md).
struct MpiSettings : scenario::TransportSettings {
  bool blockingWaits = false;
  std::string waitFrom;  // "file:line:column" that set it
};
// transports: {verbs: {max_rd_atomic: N}} (1..255): RDMA reads in flight per
// queue pair; 0 = the limit the two devices agree on.
struct VerbsSettings : scenario::TransportSettings {
  int maxReadsInFlight = 0;
  std::string maxReadsInFlightFrom;  // "file:line:column" that set it
};

// Every transport that has scenario keys: its keys and its parse step, for
// the scenario loader (ScenarioRules::transportSettings).
std::map<std::string, scenario::TransportRules> transportSettingsRules();

// Throws UsageError for an unknown name.
TransportCapabilities transportCapabilities(const std::string& name);
// The names of the transports (built or not) that have a capability, joined
// with " or ", e.g. transportsWith(&TransportCapabilities::deviceMemory) == "nccl".
std::string transportsWith(bool TransportCapabilities::*capability);

// name -> "" when usable in this build, otherwise why not (shown to the user).
std::map<std::string, std::string> transportAvailability();

// What a run asks of a transport it opens besides the world.
struct OpenRequest {
  // The scenario's settings (Scenario::transports); none: every transport's defaults.
  const scenario::TransportSettingsByName* settings = nullptr;
  // A test of the run puts or gets over this transport (InstancePlan::oneSided).
  // UCX asks for its RMA feature only then; the other transports ignore it.
  bool oneSided = false;
};

// Collective over `world`: every rank opens the same transport. `localRank`
// (position among the ranks of this host) picks the GPU of GPU transports.
std::unique_ptr<Transport> openTransport(const std::string& name, const runtime::Communicator& world, int localRank,
                                         const OpenRequest& request, const runtime::Deadline& deadline);

}  // namespace fabscope::transport
