#include "driver/FabricRecorder.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "inventory/Consistency.hpp"
#include "inventory/HostInventory.hpp"
#include "inventory/InventoryFormat.hpp"
#include "inventory/InventoryWire.hpp"

namespace fabscope::driver {

FabricInputs loadFabricInputs(const std::string& manifestPath, const std::string& topologyPath) {
  FabricInputs inputs;
  try {
    if (!manifestPath.empty()) inputs.manifest = inventory::loadManifest(manifestPath);
    if (!topologyPath.empty()) inputs.topology = inventory::loadTopologyFile(topologyPath);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  return inputs;
}

suite::WorldLayout exchangeWorldLayout(const runtime::Communicator& world, const FabricInputs& inputs,
                                       const runtime::Deadline& deadline) {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  const auto label = inventory::topologyForHost(name, inputs.topology ? &*inputs.topology : nullptr,
                                                inventory::currentEnvironment());
  // Host names and labels hold no tab or newline (the topology reader takes YAML scalars; hosts are DNS names).
  const auto gathered = world.gatherStrings(std::string(name) + "\t" + label.leaf + "\t" + label.pod, 0, deadline);
  std::string joined;
  for (const auto& entry : gathered) joined += entry + "\n";
  joined = world.broadcastString(joined, 0, deadline);
  suite::WorldLayout layout;
  for (std::size_t start = 0; start < joined.size();) {
    const auto end = joined.find('\n', start);
    const auto line = joined.substr(start, end - start);
    const auto tab1 = line.find('\t'), tab2 = line.find('\t', tab1 + 1);
    layout.hostOfRank.push_back(line.substr(0, tab1));
    layout.leafOfRank.push_back(line.substr(tab1 + 1, tab2 - tab1 - 1));
    layout.podOfRank.push_back(line.substr(tab2 + 1));
    start = end + 1;
  }
  return layout;
}

namespace {

inventory::InventoryOptions optionsForThisHost() {
  inventory::InventoryOptions options;
  options.environment = inventory::currentEnvironment();
  options.mpiLibraryVersion = runtime::mpiLibraryVersion();
  return options;
}

}  // namespace

FabricVerdict recordFabric(output::ResultFile& file, const runtime::Communicator& comm,
                           const runtime::RankIdentity& identity, const FabricInputs& inputs,
                           const runtime::Deadline& deadline) {
  const bool hostReader = identity.localRank == 0;
  std::string mine;
  if (hostReader) {
    auto options = optionsForThisHost();
    options.hostname = identity.host;
    mine = inventory::serializeInventory(inventory::collectHostInventory(options));
  }
  const auto gathered = comm.gatherStrings(mine, 0, deadline);
  // Every rank's binding (GPU and NIC in effect), for the NIC-far-from-GPU check.
  const auto bindings = comm.gatherStrings(std::to_string(identity.gpu) + "\n" + identity.nic, 0, deadline);

  // Rank 0 decides everything; the host list travels to all ranks because
  // group creation is collective in parallel HDF5.
  std::vector<inventory::HostInventory> hosts;
  FabricVerdict verdict;
  std::vector<inventory::ConsistencyFlag> flags;
  std::vector<inventory::ManifestRow> manifestRows;
  std::string hostList;
  if (comm.rank() == 0) {
    for (const auto& text : gathered)
      if (!text.empty()) hosts.push_back(inventory::deserializeInventory(text));
    inventory::ConsistencyOptions options;
    if (inputs.manifest && inputs.manifest->fabric) options.intendedProtocol = inputs.manifest->fabric->protocol;
    for (int r = 0; r < identity.size; ++r) {
      const auto& text = bindings[static_cast<std::size_t>(r)];
      const auto split = text.find('\n');
      options.bindings.push_back({r, identity.hostOfRank[static_cast<std::size_t>(r)],
                                  std::stoi(text.substr(0, split)), text.substr(split + 1)});
    }
    flags = inventory::checkConsistency(hosts, options);
    if (inputs.manifest) {
      manifestRows = inventory::checkManifest(*inputs.manifest, hosts);
      verdict.manifestFailed = inventory::manifestFailed(manifestRows);
    }
    verdict.consistencyFlags = static_cast<int>(flags.size());
    for (const auto& f : flags)
      verdict.lines.push_back(inventory::severityName(f.severity) + ": " + f.host + ": " + f.what);
    if (inputs.manifest) {
      // Intended vs discovered, also when everything matches: the summary says what was checked.
      const auto matching = std::count_if(manifestRows.begin(), manifestRows.end(), [](const inventory::ManifestRow& m) {
        return m.status == inventory::ManifestStatus::match;
      });
      verdict.lines.push_back("manifest '" + inputs.manifest->name + "' (" + inputs.manifest->file + "): " +
                              std::to_string(matching) + " of " + std::to_string(manifestRows.size()) +
                              " intended items match what was discovered");
    }
    for (const auto& m : manifestRows)
      if (m.status != inventory::ManifestStatus::match)
        verdict.lines.push_back(std::string(m.mustMatch ? "manifest mismatch" : "manifest (advisory)") + ": " + m.host +
                                ": " + m.component + " intended '" + m.intended + "', found '" + m.discovered + "'");
    for (const auto& h : hosts) hostList += h.hostname + "\n";
  }
  hostList = comm.broadcastString(hostList, 0, deadline);

  file.createGroup("/hosts");
  std::size_t start = 0, i = 0;
  while (start < hostList.size()) {
    const auto end = hostList.find('\n', start);
    const std::string host = hostList.substr(start, end - start);
    start = end + 1;
    const std::string group = "/hosts/" + host;
    file.createGroup(group);
    std::vector<output::KeyValueRecord> facts;
    std::vector<output::ConsistencyRecord> hostFlags;
    std::vector<output::ManifestRecord> hostManifest;
    if (comm.rank() == 0) {
      for (const auto& [key, value] : inventory::toKeyValues(hosts[i])) {
        output::KeyValueRecord r{};
        output::setText(r.key, key);
        output::setText(r.value, value);
        facts.push_back(r);
      }
      for (const auto& f : flags) {
        if (f.host != host) continue;
        output::ConsistencyRecord r{};
        output::setText(r.severity, inventory::severityName(f.severity));
        output::setText(r.host, f.host);
        output::setText(r.component, f.component);
        output::setText(r.what, f.what);
        output::setText(r.expected, f.expected);
        output::setText(r.found, f.found);
        hostFlags.push_back(r);
      }
      for (const auto& m : manifestRows) {
        if (m.host != host && !(m.host.empty() && i == 0)) continue;
        output::ManifestRecord r{};
        output::setText(r.component, m.component);
        output::setText(r.host, m.host);
        output::setText(r.intended, m.intended);
        output::setText(r.discovered, m.discovered);
        output::setText(r.status, inventory::statusName(m.status));
        r.must_match = m.mustMatch ? 1 : 0;
        output::setText(r.validation, m.validation);
        hostManifest.push_back(r);
      }
    }
    file.writeTable<output::KeyValueRecord>(group + "/inventory", facts, deadline);
    file.writeTable<output::ConsistencyRecord>(group + "/consistency", hostFlags, deadline);
    if (inputs.manifest) file.writeTable<output::ManifestRecord>(group + "/manifest", hostManifest, deadline);
    ++i;
  }
  std::int64_t failed = verdict.manifestFailed ? 1 : 0;
  comm.broadcast(&failed, sizeof failed, 0, deadline);
  verdict.manifestFailed = failed != 0;
  return verdict;
}

CounterWindow::CounterWindow(bool reader) : reader_(reader) {
  if (reader_) before_ = inventory::readCounters({});
}

void CounterWindow::finish() {
  if (reader_) after_ = inventory::readCounters({});
}

std::vector<output::CounterRecord> CounterWindow::rows(int rank) const {
  std::vector<output::CounterRecord> out;
  if (!reader_) return out;
  for (const auto& d : inventory::diff(before_, after_)) {
    // Every counter that moved, and the known ones even when they did not.
    if (d.delta == 0 && !inventory::isKnownCounter(d.name)) continue;
    output::CounterRecord r{};
    r.rank = rank;
    output::setText(r.source, d.source);
    output::setText(r.name, d.name);
    r.before = d.before;
    r.after = d.after;
    r.delta = d.delta;
    out.push_back(r);
  }
  return out;
}

}  // namespace fabscope::driver
