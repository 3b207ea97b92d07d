#include "inventory/RdmaSysfs.hpp"

#include <algorithm>
#include <cstdlib>

#include "inventory/SysfsFiles.hpp"

namespace fabscope::inventory {
namespace fs = std::filesystem;

ParsedRate parseRate(const std::string& rateText) {
  ParsedRate parsed;
  std::string text = trim(rateText);
  char* end = nullptr;
  double gbps = std::strtod(text.c_str(), &end);
  if (end != text.c_str() && gbps > 0) {
    // sysfs always says "Gb/sec"; accept "Mb/sec" defensively.
    std::string unit = trim(std::string(end));
    parsed.gbps = unit.rfind("Mb", 0) == 0 ? gbps / 1000.0 : gbps;
  }
  auto open = text.find('(');
  auto close = text.find(')', open == std::string::npos ? 0 : open);
  if (open != std::string::npos && close != std::string::npos) {
    std::string inside = trim(text.substr(open + 1, close - open - 1));  // "4X HDR"
    auto x = inside.find_first_of("Xx");
    if (x != std::string::npos && x > 0) {
      auto lanes = parseInteger(inside.substr(0, x));
      if (lanes && *lanes > 0) parsed.width = static_cast<int>(*lanes);
      parsed.speedName = trim(inside.substr(x + 1));
    }
  }
  return parsed;
}

std::string stripStateNumber(const std::string& text) {
  auto colon = text.find(':');
  if (colon != std::string::npos && parseInteger(text.substr(0, colon))) return trim(text.substr(colon + 1));
  return trim(text);
}

namespace {

bool isAllZeroGid(const std::string& gid) {
  for (char c : gid)
    if (c != '0' && c != ':') return false;
  return true;
}

std::vector<GidEntry> readGidTable(const fs::path& portDir) {
  std::vector<GidEntry> gids;
  for (const auto& name : listDirectory(portDir / "gids")) {
    auto index = parseInteger(name);
    if (!index) continue;
    auto gid = readTrimmedLine(portDir / "gids" / name);
    if (!gid || gid->empty() || isAllZeroGid(*gid)) continue;
    GidEntry entry;
    entry.index = static_cast<int>(*index);
    entry.gid = *gid;
    entry.type = readTrimmedLine(portDir / "gid_attrs" / "types" / name).value_or("");
    entry.netdev = readTrimmedLine(portDir / "gid_attrs" / "ndevs" / name).value_or("");
    gids.push_back(std::move(entry));
  }
  std::sort(gids.begin(), gids.end(), [](const GidEntry& a, const GidEntry& b) { return a.index < b.index; });
  return gids;
}

RdmaPort readPort(const fs::path& portDir, int number) {
  RdmaPort port;
  port.number = number;
  port.state = stripStateNumber(readTrimmedLine(portDir / "state").value_or(""));
  port.physState = stripStateNumber(readTrimmedLine(portDir / "phys_state").value_or(""));
  port.linkLayer = readTrimmedLine(portDir / "link_layer").value_or("");
  port.rate = readTrimmedLine(portDir / "rate").value_or("");
  ParsedRate rate = parseRate(port.rate);
  port.rateGbps = rate.gbps;
  port.width = rate.width;
  port.speedName = rate.speedName;
  port.activeMtu = static_cast<int>(readInteger(portDir / "active_mtu").value_or(0));
  port.lid = readTrimmedLine(portDir / "lid").value_or("");
  port.gids = readGidTable(portDir);
  return port;
}

}  // namespace

std::vector<RdmaDevice> readRdmaDevicesFromSysfs(const fs::path& sysRoot) {
  std::vector<RdmaDevice> devices;
  const fs::path classDir = sysRoot / "class" / "infiniband";
  for (const auto& name : listDirectory(classDir)) {
    const fs::path dir = classDir / name;
    RdmaDevice device;
    device.name = name;
    device.source = "sysfs";
    device.firmware = readTrimmedLine(dir / "fw_ver").value_or("");
    device.nodeGuid = readTrimmedLine(dir / "node_guid").value_or("");
    device.boardId = readTrimmedLine(dir / "board_id").value_or("");
    device.hcaType = readTrimmedLine(dir / "hca_type").value_or("");
    device.nodeType = readTrimmedLine(dir / "node_type").value_or("");
    device.devicePath = resolvedDevicePath(dir / "device", sysRoot);
    device.pciAddress = lastPciAddress(device.devicePath);
    if (device.pciAddress.empty()) device.pciAddress = normalisePciAddress(linkTargetName(dir / "device"));
    device.numaNode = static_cast<int>(readInteger(dir / "device" / "numa_node").value_or(-1));
    device.netdevs = listDirectory(dir / "device" / "net");
    for (const auto& portName : listDirectory(dir / "ports")) {
      auto number = parseInteger(portName);
      if (number) device.ports.push_back(readPort(dir / "ports" / portName, static_cast<int>(*number)));
    }
    std::sort(device.ports.begin(), device.ports.end(),
              [](const RdmaPort& a, const RdmaPort& b) { return a.number < b.number; });
    devices.push_back(std::move(device));
  }
  return devices;
}

}  // namespace fabscope::inventory
