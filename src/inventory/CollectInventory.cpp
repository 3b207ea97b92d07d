#include <unistd.h>

#include <climits>

#include "inventory/FabricEnvironment.hpp"
#include "inventory/GpuInventory.hpp"
#include "inventory/HostInventory.hpp"
#include "inventory/NetInterfaces.hpp"
#include "inventory/PciAffinity.hpp"
#include "inventory/QosCollect.hpp"
#include "inventory/RdmaSysfs.hpp"
#include "inventory/RdmaVerbs.hpp"
#include "inventory/SoftwareVersions.hpp"

extern char** environ;

namespace fabscope::inventory {

std::vector<std::string> currentEnvironment() {
  std::vector<std::string> entries;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) entries.emplace_back(*entry);
  return entries;
}

namespace {

std::string localHostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

}  // namespace

HostInventory collectHostInventory(const InventoryOptions& options) {
  HostInventory inventory;
  inventory.hostname = options.hostname.empty() ? localHostname() : options.hostname;

  inventory.rdmaDevices = readRdmaDevicesFromSysfs(options.sysRoot);
  if (options.useVerbs) {
    VerbsQuery verbs = queryVerbsDevices();
    mergeVerbsDevices(inventory.rdmaDevices, verbs.devices);
    inventory.notes.insert(inventory.notes.end(), verbs.notes.begin(), verbs.notes.end());
  }

  inventory.interfaces = readNetInterfaces(options.sysRoot);
  linkInterfacesToRdmaDevices(inventory.interfaces, inventory.rdmaDevices);
  collectQos(inventory, options);

  inventory.versions = readSoftwareVersions(options.mpiLibraryVersion, options.sysRoot, options.osReleasePath);
  if (options.useCuda) {
    GpuQuery gpus = queryCudaGpus();
    inventory.gpus = std::move(gpus.gpus);
    inventory.versions.cudaRuntime = gpus.cudaRuntimeVersion;
    inventory.versions.cudaDriver = gpus.cudaDriverVersion;
    inventory.notes.insert(inventory.notes.end(), gpus.notes.begin(), gpus.notes.end());
  }
  locateGpusInSysfs(inventory.gpus, options.sysRoot);

  inventory.numaSource = "sysfs";
  if (options.useHwloc) {
    HwlocNumaMap numaMap = loadHwlocNumaMap();
    applyHwlocNumaNodes(inventory, numaMap);
    if (!numaMap.note.empty()) inventory.notes.push_back(numaMap.note);
  }
  inventory.affinity = computeGpuNicAffinity(inventory);

  inventory.environment = fabricEnvironment(options.environment);
  if (inventory.rdmaDevices.empty())
    inventory.notes.push_back("rdma: no RDMA devices under " + (options.sysRoot / "class/infiniband").string());
  return inventory;
}

}  // namespace fabscope::inventory
