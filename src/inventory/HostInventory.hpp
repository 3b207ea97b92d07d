#pragma once
// What one host really is: adapters, ports, interfaces, GPUs, software and the
// fabric-related environment. Collected once per host and stored in
// /hosts/<host>; compared across hosts by checkConsistency() and against the
// intended fabric by checkManifest().
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "inventory/Qos.hpp"

namespace fabscope::inventory {

struct GidEntry {
  int index = 0;
  std::string gid;     // as sysfs prints it: fe80:0000:...:0001
  std::string type;    // "IB/RoCE v1", "RoCE v2" or "" when the kernel does not say
  std::string netdev;  // interface the GID belongs to (RoCE), "" for InfiniBand

  bool operator==(const GidEntry&) const = default;
};

struct RdmaPort {
  int number = 0;
  std::string state;           // ACTIVE, DOWN, INIT, ARMED, ... (number stripped)
  std::string physState;       // LinkUp, Disabled, Polling, ...
  std::string linkLayer;       // InfiniBand or Ethernet
  std::string rate;            // raw sysfs text, e.g. "200 Gb/sec (4X HDR)"
  double rateGbps = 0;         // 0 when unknown
  int width = 0;               // lanes (4 for "4X"), 0 when unknown
  std::string speedName;       // HDR, EDR, NDR, ... "" when unknown
  int activeMtu = 0;           // bytes; from verbs or a sysfs active_mtu file, 0 when unknown
  std::string lid;             // InfiniBand only
  std::vector<GidEntry> gids;  // non-zero entries only
  PortQos qos;                 // RoCE mode/ToS, traffic class, IB SL and capability mask

  bool operator==(const RdmaPort&) const = default;
};

struct RdmaDevice {
  std::string name;        // mlx5_0
  std::string firmware;    // fw_ver
  std::string nodeGuid;    // node_guid
  std::string boardId;     // board_id (PSID for Mellanox/NVIDIA)
  std::string hcaType;     // hca_type (MT4123, ...)
  std::string nodeType;    // "1: CA"
  std::string pciAddress;  // 0000:3b:00.0, "" when not a PCI device
  std::string devicePath;  // resolved sysfs device path relative to the sysfs root
  int numaNode = -1;
  std::vector<std::string> netdevs;  // interfaces on the same PCI function
  std::vector<RdmaPort> ports;
  std::string source;  // "sysfs", "verbs" or "sysfs+verbs"
  // Congestion-control / QoS parameters of the adapter's firmware configuration
  // (`mlxconfig -e q`, Current values) when MFT is installed; empty otherwise.
  std::vector<std::pair<std::string, std::string>> firmwareQos;

  bool operator==(const RdmaDevice&) const = default;
};

struct NetInterface {
  std::string name;
  std::string operstate;     // up, down, unknown, ...
  long long speedMbps = -1;  // -1 when the driver does not report a speed (veth, lo)
  int mtu = 0;
  std::string macAddress;
  std::string driver;         // from the device/driver link, "" for virtual interfaces
  std::string driverVersion;  // /sys/module/<driver>/version when the module has one
  std::string pciAddress;     // "" for virtual interfaces
  std::string devicePath;     // resolved sysfs device path relative to the sysfs root
  int numaNode = -1;
  std::string rdmaDevice;  // RDMA device on the same PCI function, "" if none
  InterfaceQos qos;        // DCB, trust, ECN; dcb.status "" when not queried (virtual interfaces)

  bool operator==(const NetInterface&) const = default;
};

struct GpuInfo {
  int index = 0;
  std::string model;
  std::string pciAddress;  // normalised: 0000:3b:00.0
  std::string devicePath;  // resolved sysfs device path relative to the sysfs root
  int numaNode = -1;

  bool operator==(const GpuInfo&) const = default;
};

// Distance classes as nvidia-smi topo prints them: PIX (same PCIe switch),
// PXB (several bridges, no host bridge), PHB (same host bridge), NODE (same
// NUMA node, different host bridges), SYS (across NUMA nodes), "" unknown.
struct GpuNicAffinity {
  int gpu = 0;
  std::string nic;  // interface name, or RDMA device name when it has no netdev
  std::string relation;
  bool closest = false;  // no other NIC is nearer to this GPU

  bool operator==(const GpuNicAffinity&) const = default;
};

struct SoftwareVersions {
  std::string fabscope;
  std::string mpi;  // MPI_Get_library_version text, first line
  std::string ucx;
  std::string nccl;
  std::string cudaRuntime;
  std::string cudaDriver;    // CUDA version the driver supports (cudaDriverGetVersion)
  std::string nvidiaDriver;  // kernel module version, /sys/module/nvidia/version
  std::string kernel;        // uname -r
  std::string kernelBuild;   // uname -v
  std::string os;            // PRETTY_NAME of os-release

  bool operator==(const SoftwareVersions&) const = default;
};

struct HostInventory {
  std::string hostname;
  std::vector<RdmaDevice> rdmaDevices;
  std::vector<NetInterface> interfaces;
  std::vector<GpuInfo> gpus;
  std::vector<GpuNicAffinity> affinity;
  SoftwareVersions versions;
  std::vector<std::pair<std::string, std::string>> environment;  // sorted by name
  std::string numaSource;                                        // "hwloc" or "sysfs"
  std::string qosVendorTool;       // "mlnx_qos (PATH)" when it was run, "" when not installed or not asked
  std::vector<std::string> notes;  // what could not be read and why

  bool operator==(const HostInventory&) const = default;
};

struct InventoryOptions {
  std::filesystem::path sysRoot = "/sys";
  std::filesystem::path procRoot = "/proc";
  std::filesystem::path osReleasePath = "/etc/os-release";
  std::string hostname;           // empty: gethostname()
  std::string mpiLibraryVersion;  // MPI_Get_library_version() text, "" when unknown
  // "NAME=VALUE" entries, e.g. currentEnvironment(); only fabric-related ones are kept.
  std::vector<std::string> environment;
  // Live queries of this machine; tests on fixture trees turn them off.
  bool useVerbs = true;
  bool useHwloc = true;
  bool useCuda = true;
  // DCB of the fabric interfaces: live rtnetlink unless turned off; tests
  // inject recorded replies through dcbQuery instead.
  bool useNetlink = true;
  std::function<DcbState(const std::string& ifname)> dcbQuery;
  // Vendor tools (mlnx_qos) run only when installed and this is on.
  bool useVendorTools = true;
};

HostInventory collectHostInventory(const InventoryOptions& options);

// The process environment as NAME=VALUE entries.
std::vector<std::string> currentEnvironment();

}  // namespace fabscope::inventory
