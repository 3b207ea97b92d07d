// The libibverbs path: code conversions, merging into the sysfs view, and a
// live query that must not crash on machines without RDMA devices.
#include <gtest/gtest.h>

#include "inventory/RdmaVerbs.hpp"

using namespace fabscope::inventory;

TEST(InventoryVerbs, ConvertsEnumCodes) {
  EXPECT_EQ(ibvMtuBytes(5), 4096);
  EXPECT_EQ(ibvMtuBytes(3), 1024);
  EXPECT_EQ(ibvMtuBytes(9), 0);
  EXPECT_EQ(ibvWidthLanes(2), 4);
  EXPECT_EQ(ibvWidthLanes(16), 2);
  EXPECT_DOUBLE_EQ(ibvLaneGbps(64), 50.0);
  EXPECT_EQ(ibvSpeedName(128), "NDR");
  EXPECT_EQ(ibvPortStateName(4), "ACTIVE");
  EXPECT_EQ(ibvLinkLayerName(2), "Ethernet");
}

TEST(InventoryVerbs, MergesIntoSysfsDevices) {
  RdmaDevice sysfs;
  sysfs.name = "mlx5_0";
  sysfs.source = "sysfs";
  sysfs.firmware = "20.31.1014";
  RdmaPort port;
  port.number = 1;
  port.state = "ACTIVE";
  port.rateGbps = 200;
  port.width = 4;
  sysfs.ports.push_back(port);
  std::vector<RdmaDevice> devices{sysfs};

  VerbsDeviceInfo verbs;
  verbs.name = "mlx5_0";
  verbs.firmware = "other";
  verbs.ports.push_back({1, 4, 5, 2, 64, 1, 0x12});
  VerbsDeviceInfo onlyVerbs;
  onlyVerbs.name = "mlx5_9";
  onlyVerbs.firmware = "1.2.3";
  onlyVerbs.ports.push_back({1, 1, 3, 2, 128, 2, 0});
  mergeVerbsDevices(devices, {verbs, onlyVerbs});

  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].source, "sysfs+verbs");
  EXPECT_EQ(devices[0].firmware, "20.31.1014") << "sysfs wins where it knows";
  EXPECT_EQ(devices[0].ports[0].activeMtu, 4096) << "verbs adds the active MTU";
  EXPECT_EQ(devices[0].ports[0].lid, "0x12");
  EXPECT_EQ(devices[1].name, "mlx5_9");
  EXPECT_EQ(devices[1].source, "verbs");
  ASSERT_EQ(devices[1].ports.size(), 1u);
  EXPECT_EQ(devices[1].ports[0].state, "DOWN");
  EXPECT_EQ(devices[1].ports[0].linkLayer, "Ethernet");
  EXPECT_EQ(devices[1].ports[0].width, 4);
  EXPECT_DOUBLE_EQ(devices[1].ports[0].rateGbps, 400.0);
  EXPECT_EQ(devices[1].ports[0].activeMtu, 1024);
}

TEST(InventoryVerbs, LiveQueryDoesNotCrash) {
  VerbsQuery query = queryVerbsDevices();
  for (const auto& device : query.devices) {
    EXPECT_FALSE(device.name.empty());
    for (const auto& port : device.ports) EXPECT_GE(port.number, 1);
  }
}
