#include "transport/TransportFactory.hpp"

#include <vector>

#include "transport/TransportEntry.hpp"

namespace fabscope::transport {

namespace {

// Every transport by name, each entry declared once, in its own file
// (TransportEntry.hpp).
const std::vector<const TransportEntry*>& transportTable() {
  static const std::vector<const TransportEntry*> table = {&mpiTransportEntry(), &ucxTransportEntry(),
                                                           &verbsTransportEntry(), &ncclTransportEntry()};
  return table;
}

}  // namespace

std::map<std::string, std::string> transportAvailability() {
  std::map<std::string, std::string> out;
  for (const auto* t : transportTable()) out.emplace(t->name, t->unavailable);
  return out;
}

std::map<std::string, scenario::TransportRules> transportSettingsRules() {
  std::map<std::string, scenario::TransportRules> out;
  for (const auto* t : transportTable())
    if (t->settings) out.emplace(t->name, *t->settings);
  return out;
}

std::vector<output::TransportSetting> givenSettings(const scenario::TransportSettings& settings) {
  std::vector<output::TransportSetting> given;
  for (const auto& v : settings.values())
    if (!v.from.empty()) given.push_back({v.key, v.value, v.from});
  return given;
}

void recordTransportSettings(output::Recorder& recorder, const scenario::TransportSettingsByName& settings) {
  for (const auto& [name, values] : settings) recorder.transportSettings(name, givenSettings(*values));
}

TransportCapabilities transportCapabilities(const std::string& name) {
  for (const auto* t : transportTable())
    if (name == t->name) return t->can;
  throw UsageError("unknown transport '" + name + "'");
}

TransportCapabilities Transport::capabilities() const { return transportCapabilities(std::string(name())); }

std::string transportsWith(bool TransportCapabilities::*capability) {
  std::string out;
  for (const auto* t : transportTable())
    if (t->can.*capability) out += (out.empty() ? "" : " or ") + std::string(t->name);
  return out;
}

std::unique_ptr<Transport> openTransport(const std::string& name, const runtime::Communicator& world, int localRank,
                                         const OpenRequest& request, const runtime::Deadline& deadline) {
  for (const auto* t : transportTable())
    if (name == t->name) {
      if (!t->open) throw UsageError("transport '" + name + "' cannot be opened: " + t->unavailable);
      return t->open(world, localRank, request, deadline);
    }
  throw UsageError("transport '" + name + "' cannot be opened: unknown transport");
}

}  // namespace fabscope::transport
