// The libibverbs path: code conversions, merging into the sysfs view, and a
// live query that must not crash on machines without RDMA devices.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "fabscope/BuildConfig.hpp"
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

// The live query sees the devices the kernel lists in sysfs, no more and no
// fewer (so on a machine without RDMA it must return none, and a build without
// libibverbs says so in a note instead of pretending to have looked).
TEST(InventoryVerbs, LiveQueryMatchesSysfs) {
  VerbsQuery query = queryVerbsDevices();
  std::set<std::string> inSysfs;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/class/infiniband", error))
    inSysfs.insert(entry.path().filename().string());
  std::set<std::string> seen;
  for (const auto& device : query.devices) {
    EXPECT_FALSE(device.name.empty());
    for (const auto& port : device.ports) EXPECT_GE(port.number, 1);
    seen.insert(device.name);
  }
  if (!FABSCOPE_HAVE_VERBS) {
    EXPECT_TRUE(query.devices.empty());
    ASSERT_EQ(query.notes.size(), 1u);
    EXPECT_NE(query.notes[0].find("not built with libibverbs"), std::string::npos) << query.notes[0];
    return;
  }
  // Devices verbs could not open are in the notes, not in the list.
  EXPECT_GE(seen.size() + query.notes.size(), inSysfs.size());
  for (const auto& name : seen) EXPECT_TRUE(inSysfs.count(name)) << name << " is not in /sys/class/infiniband";
  if (inSysfs.empty()) {
    EXPECT_TRUE(query.devices.empty()) << "devices found without any in /sys/class/infiniband";
  }
}
