#include "inventory/PciAffinity.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>

#include "fabscope/BuildConfig.hpp"
#include "inventory/SysfsFiles.hpp"

#if FABSCOPE_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace fabscope::inventory {

#if FABSCOPE_HAVE_HWLOC

namespace {
struct TopologyDeleter {
  void operator()(hwloc_topology* topology) const { hwloc_topology_destroy(topology); }
};
}  // namespace

HwlocNumaMap loadHwlocNumaMap() {
  HwlocNumaMap numaMap;
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    numaMap.note = "hwloc: hwloc_topology_init failed";
    return numaMap;
  }
  std::unique_ptr<hwloc_topology, TopologyDeleter> topology(raw);
  hwloc_topology_set_io_types_filter(topology.get(), HWLOC_TYPE_FILTER_KEEP_ALL);
#if HWLOC_API_VERSION >= 0x00020100
  // Linux's own sysfs PCI discovery is enough for NUMA locality. The libpciaccess
  // based "pci" component leaks at every load (LeakSanitizer sees it), and the
  // OpenCL/GL components probe GPUs and X displays we do not need.
  for (const char* component : {"pci", "opencl", "gl"})
    hwloc_topology_set_components(topology.get(), HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, component);
#endif
  if (hwloc_topology_load(topology.get()) != 0) {
    numaMap.note = "hwloc: hwloc_topology_load failed";
    return numaMap;
  }
  numaMap.loaded = true;
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topology.get(), nullptr); pci != nullptr;
       pci = hwloc_get_next_pcidev(topology.get(), pci)) {
    hwloc_obj_t ancestor = hwloc_get_non_io_ancestor_obj(topology.get(), pci);
    if (ancestor == nullptr || ancestor->nodeset == nullptr) continue;
    // A device whose nearest CPU-side object covers several NUMA nodes has no single home.
    if (hwloc_bitmap_weight(ancestor->nodeset) != 1) continue;
    char address[32];
    std::snprintf(address, sizeof address, "%04x:%02x:%02x.%x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
                  pci->attr->pcidev.dev, pci->attr->pcidev.func);
    numaMap.numaNodeByPciAddress[address] = hwloc_bitmap_first(ancestor->nodeset);
  }
  return numaMap;
}

#else

HwlocNumaMap loadHwlocNumaMap() {
  HwlocNumaMap numaMap;
  numaMap.note = "hwloc: not built with hwloc; NUMA nodes from sysfs";
  return numaMap;
}

#endif

void applyHwlocNumaNodes(HostInventory& inventory, const HwlocNumaMap& numaMap) {
  inventory.numaSource = numaMap.loaded ? "hwloc" : "sysfs";
  if (!numaMap.loaded) return;
  auto apply = [&](const std::string& address, int& numaNode) {
    auto found = numaMap.numaNodeByPciAddress.find(address);
    if (found != numaMap.numaNodeByPciAddress.end()) numaNode = found->second;
  };
  for (auto& device : inventory.rdmaDevices) apply(device.pciAddress, device.numaNode);
  for (auto& net : inventory.interfaces) apply(net.pciAddress, net.numaNode);
  for (auto& gpu : inventory.gpus) apply(gpu.pciAddress, gpu.numaNode);
}

namespace {

struct PciPath {
  std::string root;                    // "pci0000:3a", the host bridge
  std::vector<std::string> functions;  // PCI addresses from the root port down to the device
};

PciPath splitPciPath(const std::string& devicePath) {
  PciPath split;
  for (const auto& part : std::filesystem::path(devicePath)) {
    const std::string name = part.string();
    if (name.rfind("pci", 0) == 0 && split.root.empty())
      split.root = name;
    else if (isPciAddress(name))
      split.functions.push_back(name);
  }
  return split;
}

}  // namespace

std::string pciRelation(const std::string& pathA, int numaA, const std::string& pathB, int numaB) {
  PciPath a = splitPciPath(pathA);
  PciPath b = splitPciPath(pathB);
  if (!a.root.empty() && a.root == b.root && !a.functions.empty() && !b.functions.empty()) {
    std::size_t shared = 0;
    // The device itself is the last function; only bridges above it count as shared.
    while (shared + 1 < a.functions.size() && shared + 1 < b.functions.size() &&
           a.functions[shared] == b.functions[shared])
      ++shared;
    if (shared >= 2) return "PIX";  // below one switch (its upstream port is shared)
    if (shared == 1) return "PXB";  // only the root port is shared
    return "PHB";
  }
  if (numaA >= 0 && numaB >= 0) return numaA == numaB ? "NODE" : "SYS";
  return "";
}

int relationRank(const std::string& relation) {
  static const char* const order[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};
  for (int i = 0; i < 5; ++i)
    if (relation == order[i]) return i;
  return 5;
}

std::vector<GpuNicAffinity> computeGpuNicAffinity(const HostInventory& inventory) {
  struct Nic {
    std::string name, path;
    int numa;
  };
  std::vector<Nic> nics;
  for (const auto& net : inventory.interfaces)
    if (!net.pciAddress.empty()) nics.push_back({net.name, net.devicePath, net.numaNode});
  for (const auto& device : inventory.rdmaDevices)
    if (device.netdevs.empty() && !device.devicePath.empty())
      nics.push_back({device.name, device.devicePath, device.numaNode});

  std::vector<GpuNicAffinity> affinity;
  for (const auto& gpu : inventory.gpus) {
    const std::size_t first = affinity.size();
    int best = std::numeric_limits<int>::max();
    for (const auto& nic : nics) {
      GpuNicAffinity entry;
      entry.gpu = gpu.index;
      entry.nic = nic.name;
      entry.relation = pciRelation(gpu.devicePath, gpu.numaNode, nic.path, nic.numa);
      best = std::min(best, relationRank(entry.relation));
      affinity.push_back(std::move(entry));
    }
    for (std::size_t i = first; i < affinity.size(); ++i)
      affinity[i].closest = best < relationRank("") && relationRank(affinity[i].relation) == best;
  }
  return affinity;
}

}  // namespace fabscope::inventory
