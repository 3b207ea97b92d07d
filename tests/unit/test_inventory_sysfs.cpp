// Inventory parsing against a copied sysfs layout (tests/data/sysfs/host-a):
// mlx5_0 InfiniBand 4X HDR, mlx5_1 RoCE on Ethernet with a GID table, a
// virtio interface with an unknown speed, lo, and a GPU for affinity.
#include <gtest/gtest.h>

#include <algorithm>

#include "inventory/GpuInventory.hpp"
#include "inventory/HostInventory.hpp"
#include "inventory/NetInterfaces.hpp"
#include "inventory/PciAffinity.hpp"
#include "inventory/RdmaSysfs.hpp"
#include "inventory/SysfsFiles.hpp"

using namespace fabscope::inventory;

namespace {

const std::string kHostA = std::string(FABSCOPE_TEST_DATA_DIR) + "/sysfs/host-a";

InventoryOptions fixtureOptions() {
  InventoryOptions options;
  options.sysRoot = kHostA;
  options.hostname = "host-a";
  options.useVerbs = false;
  options.useHwloc = false;
  options.useCuda = false;
  options.mpiLibraryVersion = "Open MPI v4.1.4, package: Debian OpenMPI\nsecond line";
  options.environment = {"NCCL_IB_HCA=mlx5_1",     "UCX_NET_DEVICES=mlx5_1:1", "HOME=/root",         "SLURM_JOB_ID=42",
                         "SLURM_JWT=secret-token", "OMPI_MCA_btl=self,tcp",    "NCCL_IB_GID_INDEX=3"};
  return options;
}

const RdmaDevice& deviceNamed(const HostInventory& inventory, const std::string& name) {
  auto it = std::find_if(inventory.rdmaDevices.begin(), inventory.rdmaDevices.end(),
                         [&](const RdmaDevice& d) { return d.name == name; });
  if (it == inventory.rdmaDevices.end()) throw std::runtime_error("no RDMA device " + name);
  return *it;
}

const NetInterface& interfaceNamed(const HostInventory& inventory, const std::string& name) {
  auto it = std::find_if(inventory.interfaces.begin(), inventory.interfaces.end(),
                         [&](const NetInterface& n) { return n.name == name; });
  if (it == inventory.interfaces.end()) throw std::runtime_error("no interface " + name);
  return *it;
}

}  // namespace

TEST(InventoryRate, ParsesKernelRateStrings) {
  ParsedRate hdr = parseRate("200 Gb/sec (4X HDR)");
  EXPECT_DOUBLE_EQ(hdr.gbps, 200.0);
  EXPECT_EQ(hdr.width, 4);
  EXPECT_EQ(hdr.speedName, "HDR");
  ParsedRate sdr = parseRate("2.5 Gb/sec (1X SDR)");
  EXPECT_DOUBLE_EQ(sdr.gbps, 2.5);
  EXPECT_EQ(sdr.width, 1);
  ParsedRate fdr10 = parseRate("40 Gb/sec (4X FDR10)");
  EXPECT_EQ(fdr10.speedName, "FDR10");
  ParsedRate noDetail = parseRate("25 Gb/sec");
  EXPECT_DOUBLE_EQ(noDetail.gbps, 25.0);
  EXPECT_EQ(noDetail.width, 0);
  ParsedRate garbage = parseRate("unknown");
  EXPECT_EQ(garbage.gbps, 0.0);
  EXPECT_EQ(garbage.width, 0);
}

TEST(InventoryRate, StripsStateNumbers) {
  EXPECT_EQ(stripStateNumber("4: ACTIVE"), "ACTIVE");
  EXPECT_EQ(stripStateNumber("5: LinkUp"), "LinkUp");
  EXPECT_EQ(stripStateNumber("DOWN"), "DOWN");
}

TEST(InventoryPci, NormalisesAddresses) {
  EXPECT_EQ(normalisePciAddress("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalisePciAddress("3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalisePciAddress("0000:d8:00.1"), "0000:d8:00.1");
  EXPECT_EQ(normalisePciAddress("virtio2"), "");
  EXPECT_EQ(lastPciAddress("devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/net/ib0"), "0000:3b:00.0");
  EXPECT_EQ(lastPciAddress("devices/virtual/net/lo"), "");
}

TEST(InventorySysfs, ReadsInfinibandPort) {
  HostInventory inventory = collectHostInventory(fixtureOptions());
  ASSERT_EQ(inventory.rdmaDevices.size(), 2u);
  const RdmaDevice& ib = deviceNamed(inventory, "mlx5_0");
  EXPECT_EQ(ib.firmware, "20.31.1014");
  EXPECT_EQ(ib.nodeGuid, "0c42:a103:0012:3456");
  EXPECT_EQ(ib.boardId, "MT_0000000223");
  EXPECT_EQ(ib.hcaType, "MT4123");
  EXPECT_EQ(ib.pciAddress, "0000:3b:00.0");
  EXPECT_EQ(ib.numaNode, 0);
  EXPECT_EQ(ib.netdevs, std::vector<std::string>{"ib0"});
  ASSERT_EQ(ib.ports.size(), 1u);
  const RdmaPort& port = ib.ports[0];
  EXPECT_EQ(port.number, 1);
  EXPECT_EQ(port.state, "ACTIVE");
  EXPECT_EQ(port.physState, "LinkUp");
  EXPECT_EQ(port.linkLayer, "InfiniBand");
  EXPECT_DOUBLE_EQ(port.rateGbps, 200.0);
  EXPECT_EQ(port.width, 4);
  EXPECT_EQ(port.speedName, "HDR");
  EXPECT_EQ(port.lid, "0x12");
  EXPECT_EQ(port.activeMtu, 0);  // sysfs has no MTU for IB ports; verbs supplies it
  ASSERT_EQ(port.gids.size(), 1u) << "the all-zero GID 1 must be skipped";
  EXPECT_EQ(port.gids[0].gid, "fe80:0000:0000:0000:0c42:a103:0012:3456");
}

TEST(InventorySysfs, ReadsRoceGidTable) {
  HostInventory inventory = collectHostInventory(fixtureOptions());
  const RdmaDevice& roce = deviceNamed(inventory, "mlx5_1");
  EXPECT_EQ(roce.numaNode, 1);
  EXPECT_EQ(roce.pciAddress, "0000:d8:00.0");
  ASSERT_EQ(roce.ports.size(), 1u);
  const RdmaPort& port = roce.ports[0];
  EXPECT_EQ(port.linkLayer, "Ethernet");
  EXPECT_DOUBLE_EQ(port.rateGbps, 100.0);
  EXPECT_EQ(port.speedName, "EDR");
  ASSERT_EQ(port.gids.size(), 4u);
  EXPECT_EQ(port.gids[1].type, "RoCE v2");
  EXPECT_EQ(port.gids[2].type, "IB/RoCE v1");
  EXPECT_EQ(port.gids[3].index, 3);
  EXPECT_EQ(port.gids[3].type, "RoCE v2");
  EXPECT_EQ(port.gids[3].gid, "0000:0000:0000:0000:0000:ffff:c0a8:0a0b");
  EXPECT_EQ(port.gids[3].netdev, "ens1f0");
}

TEST(InventorySysfs, ReadsInterfaces) {
  HostInventory inventory = collectHostInventory(fixtureOptions());
  ASSERT_EQ(inventory.interfaces.size(), 4u);
  const NetInterface& roce = interfaceNamed(inventory, "ens1f0");
  EXPECT_EQ(roce.operstate, "up");
  EXPECT_EQ(roce.speedMbps, 100000);
  EXPECT_EQ(roce.mtu, 9000);
  EXPECT_EQ(roce.driver, "mlx5_core");
  EXPECT_EQ(roce.driverVersion, "5.8-3.0.7");
  EXPECT_EQ(roce.pciAddress, "0000:d8:00.0");
  EXPECT_EQ(roce.numaNode, 1);
  EXPECT_EQ(roce.rdmaDevice, "mlx5_1");
  EXPECT_EQ(roce.macAddress, "b8:3f:d2:a1:b2:c3");

  const NetInterface& virtio = interfaceNamed(inventory, "eth0");
  EXPECT_EQ(virtio.speedMbps, -1);
  EXPECT_EQ(virtio.driver, "virtio_net");
  EXPECT_EQ(virtio.pciAddress, "0000:00:03.0") << "the PCI function above the virtio device";
  EXPECT_EQ(virtio.rdmaDevice, "");

  const NetInterface& loopback = interfaceNamed(inventory, "lo");
  EXPECT_EQ(loopback.speedMbps, -1);
  EXPECT_EQ(loopback.mtu, 65536);
  EXPECT_EQ(loopback.driver, "");
  EXPECT_EQ(loopback.pciAddress, "");
  EXPECT_EQ(loopback.numaNode, -1);
}

TEST(InventorySysfs, KeepsOnlyFabricEnvironmentWithoutSecrets) {
  HostInventory inventory = collectHostInventory(fixtureOptions());
  std::vector<std::string> names;
  for (const auto& [name, value] : inventory.environment) names.push_back(name);
  // SLURM_JOB_ID is per job (launcher-variables.txt): not recorded.
  EXPECT_EQ(names, (std::vector<std::string>{"NCCL_IB_GID_INDEX", "NCCL_IB_HCA", "OMPI_MCA_btl", "UCX_NET_DEVICES"}));
  EXPECT_EQ(inventory.versions.mpi, "Open MPI v4.1.4, package: Debian OpenMPI");
  EXPECT_EQ(inventory.hostname, "host-a");
}

TEST(InventorySysfs, GpuNicAffinityFromPciPaths) {
  HostInventory inventory = collectHostInventory(fixtureOptions());
  GpuInfo gpu;
  gpu.index = 0;
  gpu.model = "fixture GPU";
  gpu.pciAddress = "0000:3c:00.0";
  inventory.gpus.push_back(gpu);
  locateGpusInSysfs(inventory.gpus, kHostA);
  EXPECT_EQ(inventory.gpus[0].numaNode, 0);
  EXPECT_EQ(inventory.gpus[0].devicePath, "devices/pci0000:3a/0000:3a:00.0/0000:3c:00.0");

  auto affinity = computeGpuNicAffinity(inventory);
  auto relationTo = [&](const std::string& nic) {
    for (const auto& a : affinity)
      if (a.nic == nic) return a;
    throw std::runtime_error("no affinity entry for " + nic);
  };
  EXPECT_EQ(relationTo("ib0").relation, "PXB");  // shares root port 0000:3a:00.0
  EXPECT_TRUE(relationTo("ib0").closest);
  EXPECT_EQ(relationTo("ens1f0").relation, "SYS");  // other host bridge, other NUMA node
  EXPECT_FALSE(relationTo("ens1f0").closest);
}

TEST(InventoryPci, RelationClasses) {
  const std::string a = "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/0000:3c:08.0/0000:3d:00.0";
  const std::string sameSwitch = "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/0000:3c:10.0/0000:3e:00.0";
  const std::string sameRootPort = "devices/pci0000:3a/0000:3a:00.0/0000:40:00.0";
  const std::string sameHostBridge = "devices/pci0000:3a/0000:3a:02.0/0000:41:00.0";
  const std::string otherBridge = "devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0";
  EXPECT_EQ(pciRelation(a, 0, sameSwitch, 0), "PIX");
  EXPECT_EQ(pciRelation(a, 0, sameRootPort, 0), "PXB");
  EXPECT_EQ(pciRelation(a, 0, sameHostBridge, 0), "PHB");
  EXPECT_EQ(pciRelation(a, 0, otherBridge, 0), "NODE");
  EXPECT_EQ(pciRelation(a, 0, otherBridge, 1), "SYS");
  EXPECT_EQ(pciRelation(a, -1, otherBridge, 1), "");
}

TEST(InventorySysfs, MissingRootGivesEmptyInventoryNotACrash) {
  InventoryOptions options = fixtureOptions();
  options.sysRoot = std::string(FABSCOPE_TEST_DATA_DIR) + "/sysfs/does-not-exist";
  HostInventory inventory = collectHostInventory(options);
  EXPECT_TRUE(inventory.rdmaDevices.empty());
  EXPECT_TRUE(inventory.interfaces.empty());
}

// The real machine: no RDMA device here, but at least lo, and versions.
TEST(InventoryLive, CollectsThisMachine) {
  InventoryOptions options;
  options.environment = currentEnvironment();
  HostInventory inventory = collectHostInventory(options);
  EXPECT_FALSE(inventory.hostname.empty());
  EXPECT_TRUE(std::any_of(inventory.interfaces.begin(), inventory.interfaces.end(),
                          [](const NetInterface& n) { return n.name == "lo"; }));
  EXPECT_FALSE(inventory.versions.kernel.empty());
  for (const auto& device : inventory.rdmaDevices) EXPECT_FALSE(device.name.empty());
  for (const auto& gpu : inventory.gpus) EXPECT_FALSE(gpu.model.empty());
}

// Without a driver CUDA says "driver version is insufficient"; the note says
// what is really wrong (a machine with CUDA installed and no driver).
TEST(InventoryGpu, NoDriverIsSaidPlainly) {
  const auto noDriver = noGpuNote(GpuCountFailure::insufficientDriver, 0, 13000,
                                  "CUDA driver version is insufficient for CUDA runtime version");
  EXPECT_EQ(noDriver,
            "cuda: no NVIDIA GPU driver on this host (the CUDA runtime 13.0 is installed, but no driver "
            "is loaded): GPUs not listed");
  EXPECT_NE(noGpuNote(GpuCountFailure::insufficientDriver, 12020, 13000, "x")
                .find("the NVIDIA driver supports CUDA 12.2, older than the CUDA runtime 13.0"),
            std::string::npos);
  EXPECT_NE(noGpuNote(GpuCountFailure::noDevice, 13000, 13000, "x").find("no GPU found"), std::string::npos);
  EXPECT_EQ(noGpuNote(GpuCountFailure::other, 13000, 13000, "some CUDA text"), "cuda: no GPU visible: some CUDA text");
  // This machine, as it is: where the driver is missing, the note says so.
  const auto query = queryCudaGpus();
  if (query.gpus.empty() && query.cudaDriverVersion.empty() && !query.cudaRuntimeVersion.empty()) {
    ASSERT_FALSE(query.notes.empty());
    EXPECT_NE(query.notes.front().find("no NVIDIA GPU driver on this host"), std::string::npos) << query.notes.front();
    EXPECT_EQ(query.notes.front().find("insufficient"), std::string::npos) << query.notes.front();
  }
}
