#pragma once
// One transport's entry in the factory's table: its name, whether this build
// has it, what it can do, its keys under the scenario's 'transports:' with
// their parse step, and its opener. Each entry is defined at the end of the
// transport's own <Name>Transport.cpp, which every build compiles (the data
// path inside it only where the build has the library), so the transport's
// settings struct, keys, parse step and the code that acts on them are one
// file: a new scenario key of a transport touches that file alone.
#include <memory>
#include <optional>
#include <string>

#include "runtime/Mpi.hpp"
#include "scenario/Scenario.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::transport {

// Opens the transport, collectively over `world`.
using Opener = std::unique_ptr<Transport> (*)(const runtime::Communicator& world, int localRank,
                                              const OpenRequest& request, const runtime::Deadline& deadline);

struct TransportEntry {
  const char* name;
  const char* unavailable;  // "" when built, else why not
  TransportCapabilities can;
  // Its keys under the scenario's 'transports:' and their parse step, if it has any.
  std::optional<scenario::TransportRules> settings;
  Opener open;  // null when this build lacks it
};

// The entries, each in its transport's file; the factory's table lists them once.
const TransportEntry& mpiTransportEntry();
const TransportEntry& ucxTransportEntry();
const TransportEntry& verbsTransportEntry();
const TransportEntry& ncclTransportEntry();

// The transport's settings in `request` (what its parse step made), else its
// defaults: what the parse step makes of an empty mapping.
template <class Settings>
const Settings& settingsIn(const OpenRequest& request, const std::string& name) {
  static const Settings defaults;
  if (!request.settings || !request.settings->contains(name)) return defaults;
  return scenario::transportSettingsOf<Settings>(*request.settings, name);
}

}  // namespace fabscope::transport
