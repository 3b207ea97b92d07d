#pragma once
// Which data paths this build has, what each can do, which settings a scenario
// may give it, and how to open one. Each transport declares all of that once,
// in its entry (TransportEntry.hpp) at the end of its own <Name>Transport.cpp,
// beside its settings struct, keys and parse step; the table in
// TransportFactory.cpp lists the entries (what else a new one touches:
// docs/architecture.md).
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "output/Recorder.hpp"
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

// Each transport's settings under the scenario's top-level 'transports:' (each
// only lowers or changes what the transport would otherwise use) are declared
// with the transport, in its own <Name>Transport.cpp: the struct, its keys and
// its parse step. The opener hands them on whole, so a new key touches none of this.

// Every transport that has scenario keys: its keys and its parse step, for
// the scenario loader (ScenarioRules::transportSettings).
std::map<std::string, scenario::TransportRules> transportSettingsRules();

// The keys the scenario gave each transport, with where each was given, as
// /transports/<name>'s setting_<key> and setting_<key>_from (collective over the
// file's communicator, at the run's start). A transport's defaults are not written.
std::vector<output::TransportSetting> givenSettings(const scenario::TransportSettings& settings);
void recordTransportSettings(output::Recorder& recorder, const scenario::TransportSettingsByName& settings);

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
