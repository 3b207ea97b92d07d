#pragma once
// Where PCI devices sit relative to each other: NUMA node of each device
// (hwloc when built with it, sysfs numa_node otherwise) and the GPU<->NIC
// distance classes nvidia-smi topo uses.
#include <map>
#include <string>
#include <vector>

#include "inventory/HostInventory.hpp"

namespace fabscope::inventory {

struct HwlocNumaMap {
  bool loaded = false;
  std::map<std::string, int> numaNodeByPciAddress;  // only devices with exactly one local NUMA node
  std::string note;                                 // why hwloc was not used
};

// Live topology of this machine through hwloc; loaded == false without hwloc.
HwlocNumaMap loadHwlocNumaMap();

// Overrides sysfs numa_node values with hwloc's where hwloc knows the device.
void applyHwlocNumaNodes(HostInventory& inventory, const HwlocNumaMap& numaMap);

// Distance class between two PCI devices from their resolved sysfs paths
// ("devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0") and NUMA nodes:
// PIX, PXB, PHB, NODE, SYS, or "" when it cannot be told.
std::string pciRelation(const std::string& pathA, int numaA, const std::string& pathB, int numaB);

// Lower is nearer; unknown relations rank last.
int relationRank(const std::string& relation);

// For every GPU, its relation to every NIC (interfaces with a PCI device, and
// RDMA devices without an interface), marking the nearest ones.
std::vector<GpuNicAffinity> computeGpuNicAffinity(const HostInventory& inventory);

}  // namespace fabscope::inventory
