#include "driver/FabricRecorder.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "inventory/Consistency.hpp"
#include "inventory/HostInventory.hpp"
#include "inventory/InventoryFormat.hpp"
#include "inventory/InventoryWire.hpp"
#include "runtime/EveryRanksLine.hpp"

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
  const auto label =
      inventory::topologyForHost(name, inputs.topology ? &*inputs.topology : nullptr, inventory::currentEnvironment());
  // Host names and labels hold no tab or newline (the topology reader takes YAML scalars; hosts are DNS names).
  suite::WorldLayout layout;
  for (const auto& line :
       runtime::everyRanksLine(world, std::string(name) + "\t" + label.leaf + "\t" + label.pod, deadline)) {
    const auto tab1 = line.find('\t'), tab2 = line.find('\t', tab1 + 1);
    layout.hostOfRank.push_back(line.substr(0, tab1));
    layout.leafOfRank.push_back(line.substr(tab1 + 1, tab2 - tab1 - 1));
    layout.podOfRank.push_back(line.substr(tab2 + 1));
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

// What rank 0 found about the fabric: every host's inventory, the flags
// between them and the manifest check, with the summary's lines.
struct FabricFindings {
  std::vector<inventory::HostInventory> hosts;
  std::vector<inventory::ConsistencyFlag> flags;
  std::vector<inventory::ManifestRow> manifestRows;
  FabricVerdict verdict;
};

// Every rank's binding (GPU and NIC in effect), for the NIC-far-from-GPU check.
std::vector<inventory::RankBinding> bindingsOf(const std::vector<std::string>& gathered,
                                               const runtime::RankIdentity& identity) {
  std::vector<inventory::RankBinding> bindings;
  for (int r = 0; r < identity.size; ++r) {
    const auto& text = gathered[static_cast<std::size_t>(r)];
    const auto split = text.find('\n');
    bindings.push_back({r, identity.hostOfRank[static_cast<std::size_t>(r)], std::stoi(text.substr(0, split)),
                        text.substr(split + 1)});
  }
  return bindings;
}

void describeFindings(FabricFindings& found, const FabricInputs& inputs) {
  auto& lines = found.verdict.lines;
  for (const auto& f : found.flags)
    lines.push_back(inventory::severityName(f.severity) + ": " + f.host + ": " + f.what);
  if (inputs.manifest) {
    // Intended vs discovered, also when everything matches: the summary says what was checked.
    const auto matching =
        std::count_if(found.manifestRows.begin(), found.manifestRows.end(),
                      [](const inventory::ManifestRow& m) { return m.status == inventory::ManifestStatus::match; });
    lines.push_back("manifest '" + inputs.manifest->name + "' (" + inputs.manifest->file +
                    "): " + std::to_string(matching) + " of " + std::to_string(found.manifestRows.size()) +
                    " intended items match what was discovered");
  }
  for (const auto& m : found.manifestRows)
    if (m.status != inventory::ManifestStatus::match)
      lines.push_back(std::string(m.mustMatch ? "manifest mismatch" : "manifest (advisory)") + ": " + m.host + ": " +
                      m.component + " intended '" + m.intended + "', found '" + m.discovered + "'");
}

// Rank 0: judges the inventories its hosts' readers sent.
FabricFindings judgeFabric(const std::vector<std::string>& inventories, const std::vector<std::string>& bindings,
                           const runtime::RankIdentity& identity, const FabricInputs& inputs) {
  FabricFindings found;
  for (const auto& text : inventories)
    if (!text.empty()) found.hosts.push_back(inventory::deserializeInventory(text));
  inventory::ConsistencyOptions options;
  if (inputs.manifest && inputs.manifest->fabric) options.intendedProtocol = inputs.manifest->fabric->protocol;
  options.bindings = bindingsOf(bindings, identity);
  found.flags = inventory::checkConsistency(found.hosts, options);
  if (inputs.manifest) {
    found.manifestRows = inventory::checkManifest(*inputs.manifest, found.hosts);
    found.verdict.manifestFailed = inventory::manifestFailed(found.manifestRows);
  }
  found.verdict.consistencyFlags = static_cast<int>(found.flags.size());
  describeFindings(found, inputs);
  return found;
}

std::vector<output::KeyValueRecord> inventoryRows(const inventory::HostInventory& host) {
  std::vector<output::KeyValueRecord> rows;
  for (const auto& [key, value] : inventory::toKeyValues(host)) {
    output::KeyValueRecord r{};
    output::setText(r.key, key);
    output::setText(r.value, value);
    rows.push_back(r);
  }
  return rows;
}

std::vector<output::ConsistencyRecord> consistencyRows(const std::vector<inventory::ConsistencyFlag>& flags,
                                                       const std::string& host) {
  std::vector<output::ConsistencyRecord> rows;
  for (const auto& f : flags) {
    if (f.host != host) continue;
    output::ConsistencyRecord r{};
    output::setText(r.severity, inventory::severityName(f.severity));
    output::setText(r.host, f.host);
    output::setText(r.component, f.component);
    output::setText(r.what, f.what);
    output::setText(r.expected, f.expected);
    output::setText(r.found, f.found);
    rows.push_back(r);
  }
  return rows;
}

// The manifest rows of `host`; the first host also keeps the rows of no host (fabric-wide items).
std::vector<output::ManifestRecord> manifestRows(const std::vector<inventory::ManifestRow>& manifest,
                                                 const std::string& host, bool firstHost) {
  std::vector<output::ManifestRecord> rows;
  for (const auto& m : manifest) {
    if (m.host != host && !(m.host.empty() && firstHost)) continue;
    output::ManifestRecord r{};
    output::setText(r.component, m.component);
    output::setText(r.host, m.host);
    output::setText(r.intended, m.intended);
    output::setText(r.discovered, m.discovered);
    output::setText(r.status, inventory::statusName(m.status));
    r.must_match = m.mustMatch ? 1 : 0;
    output::setText(r.validation, m.validation);
    rows.push_back(r);
  }
  return rows;
}

// Collective: /hosts/<host>/{inventory,consistency,manifest}; rows only from
// rank 0, which alone holds `found`.
void writeHostTables(output::ResultFile& file, const runtime::Communicator& comm, const FabricFindings& found,
                     bool withManifest, const runtime::Deadline& deadline) {
  std::string hostList;
  if (comm.rank() == 0)
    for (const auto& h : found.hosts) hostList += h.hostname + "\n";
  // Every rank creates the groups: group creation is collective in parallel HDF5.
  hostList = comm.broadcastString(hostList, 0, deadline);
  file.createGroup("/hosts");
  std::size_t start = 0, i = 0;
  while (start < hostList.size()) {
    const auto end = hostList.find('\n', start);
    const std::string host = hostList.substr(start, end - start);
    start = end + 1;
    const std::string group = "/hosts/" + host;
    file.createGroup(group);
    const bool rank0 = comm.rank() == 0;
    file.writeTable<output::KeyValueRecord>(
        group + "/inventory", rank0 ? inventoryRows(found.hosts[i]) : std::vector<output::KeyValueRecord>{}, deadline);
    file.writeTable<output::ConsistencyRecord>(
        group + "/consistency", rank0 ? consistencyRows(found.flags, host) : std::vector<output::ConsistencyRecord>{},
        deadline);
    if (withManifest)
      file.writeTable<output::ManifestRecord>(
          group + "/manifest",
          rank0 ? manifestRows(found.manifestRows, host, i == 0) : std::vector<output::ManifestRecord>{}, deadline);
    ++i;
  }
}

}  // namespace

FabricVerdict recordFabric(output::ResultFile& file, const runtime::Communicator& comm,
                           const runtime::RankIdentity& identity, const FabricInputs& inputs,
                           const runtime::Deadline& deadline) {
  std::string mine;
  if (identity.localRank == 0) {  // one reader per host
    auto options = optionsForThisHost();
    options.hostname = identity.host;
    mine = inventory::serializeInventory(inventory::collectHostInventory(options));
  }
  const auto inventories = comm.gatherStrings(mine, 0, deadline);
  const auto bindings = comm.gatherStrings(std::to_string(identity.gpu) + "\n" + identity.nic, 0, deadline);
  // Rank 0 decides everything.
  FabricFindings found;
  if (comm.rank() == 0) found = judgeFabric(inventories, bindings, identity, inputs);
  writeHostTables(file, comm, found, inputs.manifest.has_value(), deadline);
  std::int64_t failed = found.verdict.manifestFailed ? 1 : 0;
  comm.broadcast(&failed, sizeof failed, 0, deadline);
  found.verdict.manifestFailed = failed != 0;
  return found.verdict;
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
