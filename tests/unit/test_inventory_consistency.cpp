// Consistency across hosts: two hosts read from the same fixture, one then
// given other firmware and another MTU, must be flagged on exactly those.
#include <gtest/gtest.h>

#include <algorithm>

#include "inventory/Consistency.hpp"
#include "inventory/HostInventory.hpp"

using namespace fabscope::inventory;

namespace {

HostInventory fixtureHost(const std::string& name) {
  InventoryOptions options;
  options.sysRoot = std::string(FABSCOPE_TEST_DATA_DIR) + "/sysfs/host-a";
  options.hostname = name;
  options.useVerbs = options.useHwloc = options.useCuda = false;
  options.mpiLibraryVersion = "Open MPI v4.1.4";
  return collectHostInventory(options);
}

RdmaDevice& device(HostInventory& host, const std::string& name) {
  return *std::find_if(host.rdmaDevices.begin(), host.rdmaDevices.end(),
                       [&](const RdmaDevice& d) { return d.name == name; });
}

NetInterface& interface(HostInventory& host, const std::string& name) {
  return *std::find_if(host.interfaces.begin(), host.interfaces.end(),
                       [&](const NetInterface& n) { return n.name == name; });
}

std::vector<ConsistencyFlag> flagsFor(const std::vector<ConsistencyFlag>& flags, const std::string& componentPart) {
  std::vector<ConsistencyFlag> found;
  for (const auto& flag : flags)
    if (flag.component.find(componentPart) != std::string::npos) found.push_back(flag);
  return found;
}

}  // namespace

TEST(InventoryConsistency, IdenticalHostsHaveNoFlags) {
  std::vector<HostInventory> hosts{fixtureHost("node1"), fixtureHost("node2")};
  auto flags = checkConsistency(hosts, {});
  for (const auto& flag : flags) ADD_FAILURE() << flag.host << " " << flag.component << ": " << flag.what;
}

TEST(InventoryConsistency, FlagsFirmwareAndMtuDifferences) {
  std::vector<HostInventory> hosts{fixtureHost("node1"), fixtureHost("node2"), fixtureHost("node3")};
  device(hosts[1], "mlx5_1").firmware = "22.35.2000";
  interface(hosts[2], "ens1f0").mtu = 1500;

  auto flags = checkConsistency(hosts, {});
  auto firmware = flagsFor(flags, "fw_ver");
  ASSERT_EQ(firmware.size(), 1u);
  EXPECT_EQ(firmware[0].host, "node2");
  EXPECT_EQ(firmware[0].component, "rdma/mlx5_1/fw_ver");
  EXPECT_EQ(firmware[0].expected, "22.36.1010");
  EXPECT_EQ(firmware[0].found, "22.35.2000");

  auto mtu = flagsFor(flags, "/mtu");
  ASSERT_EQ(mtu.size(), 1u);
  EXPECT_EQ(mtu[0].host, "node3");
  EXPECT_EQ(mtu[0].component, "net/ens1f0/mtu");
  EXPECT_EQ(mtu[0].severity, Severity::error);
  EXPECT_EQ(mtu[0].expected, "9000");
  EXPECT_EQ(mtu[0].found, "1500");
  EXPECT_EQ(flags.size(), 2u);
}

TEST(InventoryConsistency, TwoHostsTieGoesToTheFirst) {
  std::vector<HostInventory> hosts{fixtureHost("node1"), fixtureHost("node2")};
  device(hosts[1], "mlx5_0").firmware = "20.30.0000";
  interface(hosts[1], "ens1f0").mtu = 4200;
  auto flags = checkConsistency(hosts, {});
  ASSERT_EQ(flags.size(), 2u);
  for (const auto& flag : flags) EXPECT_EQ(flag.host, "node2");
}

TEST(InventoryConsistency, FlagsSlowNarrowAndDownPorts) {
  std::vector<HostInventory> hosts{fixtureHost("node1"), fixtureHost("node2"), fixtureHost("node3")};
  RdmaPort& slow = device(hosts[2], "mlx5_0").ports[0];
  slow.rateGbps = 100;
  slow.width = 2;
  device(hosts[1], "mlx5_1").ports[0].state = "DOWN";
  device(hosts[1], "mlx5_1").ports[0].physState = "Disabled";

  auto flags = checkConsistency(hosts, {});
  auto rate = flagsFor(flags, "/rate");
  ASSERT_EQ(rate.size(), 1u);
  EXPECT_EQ(rate[0].host, "node3");
  EXPECT_EQ(rate[0].expected, "200 Gb/s");
  EXPECT_EQ(rate[0].found, "100 Gb/s");
  auto width = flagsFor(flags, "/width");
  ASSERT_EQ(width.size(), 1u);
  EXPECT_EQ(width[0].expected, "4X");
  EXPECT_EQ(width[0].found, "2X");
  auto down = flagsFor(flags, "/state");
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0].host, "node2");
  EXPECT_EQ(down[0].found, "DOWN (Disabled)");
}

TEST(InventoryConsistency, FlagsWrongLinkLayerForIntendedProtocol) {
  std::vector<HostInventory> hosts{fixtureHost("node1")};
  ConsistencyOptions ib;
  ib.intendedProtocol = "ib";
  auto flags = flagsFor(checkConsistency(hosts, ib), "link_layer");
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].component, "rdma/mlx5_1/port/1/link_layer");
  EXPECT_EQ(flags[0].found, "Ethernet");

  ConsistencyOptions roce;
  roce.intendedProtocol = "roce";
  flags = flagsFor(checkConsistency(hosts, roce), "link_layer");
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].component, "rdma/mlx5_0/port/1/link_layer");
}

TEST(InventoryConsistency, FlagsSoftwareVersionDifferences) {
  std::vector<HostInventory> hosts{fixtureHost("node1"), fixtureHost("node2"), fixtureHost("node3")};
  hosts[0].versions.ucx = hosts[1].versions.ucx = "1.16.0";
  hosts[2].versions.ucx = "1.13.1";
  auto flags = flagsFor(checkConsistency(hosts, {}), "version/ucx");
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].host, "node3");
  EXPECT_EQ(flags[0].expected, "1.16.0");
}

TEST(InventoryConsistency, FlagsRankBoundToFarNic) {
  std::vector<HostInventory> hosts{fixtureHost("node1")};
  GpuInfo gpu;
  gpu.index = 0;
  gpu.numaNode = 0;
  hosts[0].gpus.push_back(gpu);
  ConsistencyOptions options;
  options.bindings = {{0, "node1", 0, "ib0"}, {1, "node1", 0, "ens1f0"}, {2, "node1", 0, "mlx5_7"}};
  auto flags = flagsFor(checkConsistency(hosts, options), "rank/");
  ASSERT_EQ(flags.size(), 2u);
  EXPECT_EQ(flags[0].component, "rank/1/binding");
  EXPECT_EQ(flags[0].expected, "NUMA node 0");
  EXPECT_EQ(flags[0].found, "ens1f0 on NUMA node 1");
  EXPECT_EQ(flags[1].component, "rank/2/binding");
  EXPECT_EQ(flags[1].severity, Severity::error);
}
