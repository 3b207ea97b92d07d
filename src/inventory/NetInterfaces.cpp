#include "inventory/NetInterfaces.hpp"

#include <algorithm>

#include "inventory/SysfsFiles.hpp"

namespace fabscope::inventory {
namespace fs = std::filesystem;

std::vector<NetInterface> readNetInterfaces(const fs::path& sysRoot) {
  std::vector<NetInterface> interfaces;
  const fs::path classDir = sysRoot / "class" / "net";
  for (const auto& name : listDirectory(classDir)) {
    const fs::path dir = classDir / name;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;  // bonding_masters is a file
    NetInterface net;
    net.name = name;
    net.operstate = readTrimmedLine(dir / "operstate").value_or("");
    // Reading speed fails with EINVAL on a down link and gives -1 on veth: both mean unknown.
    net.speedMbps = readInteger(dir / "speed").value_or(-1);
    if (net.speedMbps < 0) net.speedMbps = -1;
    net.mtu = static_cast<int>(readInteger(dir / "mtu").value_or(0));
    net.macAddress = readTrimmedLine(dir / "address").value_or("");
    net.driver = linkTargetName(dir / "device" / "driver");
    if (!net.driver.empty())
      net.driverVersion = readTrimmedLine(sysRoot / "module" / net.driver / "version").value_or("");
    net.devicePath = resolvedDevicePath(dir / "device", sysRoot);
    net.pciAddress = lastPciAddress(net.devicePath);
    net.numaNode = static_cast<int>(readInteger(dir / "device" / "numa_node").value_or(-1));
    if (net.numaNode < -1) net.numaNode = -1;
    interfaces.push_back(std::move(net));
  }
  return interfaces;
}

void linkInterfacesToRdmaDevices(std::vector<NetInterface>& interfaces, const std::vector<RdmaDevice>& devices) {
  for (const auto& device : devices) {
    for (auto& net : interfaces) {
      bool listed = std::find(device.netdevs.begin(), device.netdevs.end(), net.name) != device.netdevs.end();
      if (listed) net.rdmaDevice = device.name;
    }
  }
}

}  // namespace fabscope::inventory
