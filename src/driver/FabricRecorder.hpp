#pragma once
// What fabric a run measured: every host's inventory, the consistency flags
// between hosts, the manifest check, and counter deltas around each test.
#include <optional>
#include <string>
#include <vector>

#include "inventory/Counters.hpp"
#include "inventory/Manifest.hpp"
#include "inventory/Topology.hpp"
#include "output/ResultFile.hpp"
#include "runtime/RankIdentity.hpp"
#include "topology/TopologySchedule.hpp"

namespace fabscope::driver {

struct FabricInputs {
  std::optional<inventory::Manifest> manifest;
  std::optional<inventory::TopologyFile> topology;
};

// Reads the optional manifest and topology files; UsageError (exit 2) when
// one does not parse, naming the file, line and column.
FabricInputs loadFabricInputs(const std::string& manifestPath, const std::string& topologyPath);

// Collective, before planning: every rank's host name and topology labels
// (from the topology file, else Slurm) on every rank, for the patterns that
// follow the topology. Two small messages per rank, gathered to rank 0 and
// broadcast.
suite::WorldLayout exchangeWorldLayout(const runtime::Communicator& world, const FabricInputs& inputs,
                                       const runtime::Deadline& deadline);

struct FabricVerdict {
  int consistencyFlags = 0;
  bool manifestFailed = false;     // a must-match item differs: exit code 1
  std::vector<std::string> lines;  // for the closing summary
};

// Collective: one inventory per host (taken by its local rank 0), written to
// /hosts/<host>/{inventory,consistency,manifest}; the verdict is rank 0's.
FabricVerdict recordFabric(output::ResultFile& file, const runtime::Communicator& comm,
                           const runtime::RankIdentity& identity, const FabricInputs& inputs,
                           const runtime::Deadline& deadline);

// Counter snapshots around one test instance, taken by one rank per host.
class CounterWindow {
 public:
  explicit CounterWindow(bool reader);
  void finish();
  std::vector<output::CounterRecord> rows(int rank) const;

 private:
  bool reader_;
  inventory::CounterSnapshot before_, after_;
};

}  // namespace fabscope::driver
