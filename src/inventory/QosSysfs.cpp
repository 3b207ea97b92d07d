// QoS files in sysfs/configfs and the names used to print QoS settings.
#include <algorithm>
#include <cstdlib>
#include <map>

#include "inventory/Qos.hpp"
#include "inventory/SysfsFiles.hpp"

namespace fabscope::inventory {
namespace fs = std::filesystem;

namespace {

// bit p set when <dir>/enable/<p> reads 1; -1 when the folder has no readable priority file.
int readEnableMask(const fs::path& enableDir) {
  int mask = 0;
  bool any = false;
  for (int priority = 0; priority < 8; ++priority) {
    auto value = readInteger(enableDir / std::to_string(priority));
    if (!value) continue;
    any = true;
    if (*value != 0) mask |= 1 << priority;
  }
  return any ? mask : -1;
}

}  // namespace

void readEcnSysfs(const fs::path& sysRoot, const std::string& ifname, InterfaceQos& qos) {
  // mlx5 (MLNX_OFED and inbox drivers that carry it): ecn/roce_np is the
  // notification point (marks seen -> CNP sent), ecn/roce_rp the reaction point.
  const fs::path ecn = sysRoot / "class" / "net" / ifname / "ecn";
  qos.ecnNpMask = readEnableMask(ecn / "roce_np" / "enable");
  qos.ecnRpMask = readEnableMask(ecn / "roce_rp" / "enable");
  qos.dcqcn.clear();
  for (const char* point : {"roce_np", "roce_rp"}) {
    for (const auto& name : listDirectory(ecn / point)) {
      std::error_code ec;
      if (name == "enable" || !fs::is_regular_file(ecn / point / name, ec)) continue;
      auto value = readTrimmedLine(ecn / point / name);
      if (value) qos.dcqcn.emplace_back(std::string(point == std::string("roce_np") ? "np/" : "rp/") + name, *value);
    }
  }
}

int parseTrafficClass(const std::string& text) {
  const std::string trimmed = trim(text);
  if (auto plain = parseInteger(trimmed); plain && *plain >= 0 && *plain <= 255) return static_cast<int>(*plain);
  auto at = trimmed.find("tclass=");
  if (at == std::string::npos) return -1;
  std::size_t end = at + 7;
  while (end < trimmed.size() && std::isdigit(static_cast<unsigned char>(trimmed[end]))) ++end;
  auto value = parseInteger(trimmed.substr(at + 7, end - at - 7));
  return value && *value >= 0 && *value <= 255 ? static_cast<int>(*value) : -1;
}

PortQos readPortQosSysfs(const fs::path& sysRoot, const std::string& device, int port) {
  PortQos qos;
  const std::string portName = std::to_string(port);
  // rdma_cm's configfs folder exists once an admin (or a tool) created it.
  const fs::path configfs = sysRoot / "kernel" / "config" / "rdma_cm" / device / "ports" / portName;
  qos.defaultRoceMode = readTrimmedLine(configfs / "default_roce_mode").value_or("");
  if (auto tos = readInteger(configfs / "default_roce_tos"); tos && *tos >= 0 && *tos <= 255)
    qos.defaultRoceTos = static_cast<int>(*tos);
  const fs::path deviceDir = sysRoot / "class" / "infiniband" / device;
  if (auto text = readSmallFile(deviceDir / "tc" / portName / "traffic_class", 4096)) {
    qos.trafficClassText = trim(*text);
    qos.trafficClass = parseTrafficClass(qos.trafficClassText);
  }
  const fs::path portDir = deviceDir / "ports" / portName;
  if (auto sl = readInteger(portDir / "sm_sl"); sl && *sl >= 0 && *sl < 16) qos.smSl = static_cast<int>(*sl);
  qos.capMask = readTrimmedLine(portDir / "cap_mask").value_or("");
  return qos;
}

std::string parseMlnxQosTrust(const std::string& text) {
  const std::string marker = "Priority trust state:";
  auto at = text.find(marker);
  if (at == std::string::npos) return {};
  auto end = text.find('\n', at);
  std::string value =
      trim(text.substr(at + marker.size(), end == std::string::npos ? std::string::npos : end - at - marker.size()));
  std::transform(value.begin(), value.end(), value.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return value;
}

void deriveTrust(const std::string& driver, InterfaceQos& qos) {
  if (qos.dcb.status != "configured") return;
  if (qos.dcb.hasTrust) {
    std::string order;
    for (int selector : qos.dcb.trustOrder) order += (order.empty() ? "" : ",") + selectorName(selector);
    qos.trust = order.empty() ? "none" : order;
    qos.trustSource = "dcb apptrust";
    return;
  }
  if (driver == "mlx5_core") {
    // mlx5e_dcbnl_ieee_setapp switches the port to DSCP trust with the first
    // DSCP APP entry and back to PCP trust when the last one is deleted.
    const bool dscp = std::any_of(qos.dcb.apps.begin(), qos.dcb.apps.end(),
                                  [](const DcbApp& a) { return a.selector == 5 /* DSCP */; });
    qos.trust = dscp ? "dscp" : "pcp";
    qos.trustSource = "mlx5 app table";
  }
}

std::string selectorName(int selector) {
  switch (selector) {
    case 1:
      return "ethtype";
    case 2:
      return "stream-port";
    case 3:
      return "dgram-port";
    case 4:
      return "port";
    case 5:
      return "dscp";
    case 255:
      return "pcp";
    default:
      return "selector" + std::to_string(selector);
  }
}

std::string tsaName(int tsa) {
  switch (tsa) {
    case 0:
      return "strict";
    case 1:
      return "cbs";
    case 2:
      return "ets";
    case 3:
      return "cb";  // credit-based shaper
    case 255:
      return "vendor";
    default:
      return std::to_string(tsa);
  }
}

std::string priorityList(int mask) {
  if (mask < 0) return "unknown";
  std::string list;
  for (int p = 0; p < 8; ++p)
    if (mask & (1 << p)) list += (list.empty() ? "" : ",") + std::to_string(p);
  return list.empty() ? "none" : list;
}

std::string dcbxName(int dcbx) {
  if (dcbx < 0) return "unknown";
  static const std::pair<int, const char*> bits[] = {
      {0x01, "host"}, {0x02, "lld_managed"}, {0x04, "cee"}, {0x08, "ieee"}, {0x10, "static"}};
  std::string names;
  for (const auto& [bit, name] : bits)
    if (dcbx & bit) names += (names.empty() ? "" : ",") + std::string(name);
  return names.empty() ? "none" : names;
}

namespace {
std::string selectorMap(const DcbState& dcb, int selector) {
  std::map<int, std::string> byProtocol;
  for (const auto& app : dcb.apps) {
    if (app.selector != selector) continue;
    auto& priorities = byProtocol[app.protocol];
    priorities += (priorities.empty() ? "" : "/") + std::to_string(app.priority);
  }
  std::string text;
  for (const auto& [protocol, priorities] : byProtocol)
    text += (text.empty() ? "" : ",") + std::to_string(protocol) + ":" + priorities;
  return text.empty() ? "none" : text;
}
}  // namespace

std::string dscpMap(const DcbState& dcb) { return selectorMap(dcb, 5); }
std::string pcpMap(const DcbState& dcb) { return selectorMap(dcb, 255); }

std::string decodeIbCapabilityMask(const std::string& capMask) {
  auto value = parseInteger(capMask);
  if (!value) return {};
  // enum ib_port_capability_mask_bits, include/rdma/ib_verbs.h (IBA PortInfo:CapabilityMask).
  static const std::pair<int, const char*> bits[] = {
      {1, "SM"},
      {2, "NOTICE_SUP"},
      {3, "TRAP_SUP"},
      {4, "OPT_IPD_SUP"},
      {5, "AUTO_MIGR_SUP"},
      {6, "SL_MAP_SUP"},
      {7, "MKEY_NVRAM"},
      {8, "PKEY_NVRAM"},
      {9, "LED_INFO_SUP"},
      {10, "SM_DISABLED"},
      {11, "SYS_IMAGE_GUID_SUP"},
      {12, "PKEY_SW_EXT_PORT_TRAP_SUP"},
      {14, "EXTENDED_SPEEDS_SUP"},
      {15, "CAP_MASK2_SUP"},
      {16, "CM_SUP"},
      {17, "SNMP_TUNNEL_SUP"},
      {18, "REINIT_SUP"},
      {19, "DEVICE_MGMT_SUP"},
      {20, "VENDOR_CLASS_SUP"},
      {21, "DR_NOTICE_SUP"},
      {22, "CAP_MASK_NOTICE_SUP"},
      {23, "BOOT_MGMT_SUP"},
      {24, "LINK_LATENCY_SUP"},
      {25, "CLIENT_REG_SUP"},
      {26, "IP_BASED_GIDS"},  // RoCE ports; OTHER_LOCAL_CHANGES_SUP on InfiniBand
      {27, "LINK_SPEED_WIDTH_TABLE_SUP"},
      {28, "VENDOR_SPECIFIC_MADS_TABLE_SUP"},
      {29, "MCAST_PKEY_TRAP_SUPPRESSION_SUP"},
      {30, "MCAST_FDB_TOP_SUP"},
      {31, "HIERARCHY_INFO_SUP"}};
  std::string names;
  for (const auto& [bit, name] : bits)
    if (*value & (1LL << bit)) names += (names.empty() ? "" : ",") + std::string(name);
  return names.empty() ? "none" : names;
}

const std::vector<std::string>& qosEnvironmentNames() {
  static const std::vector<std::string> names = {"NCCL_IB_TC",
                                                 "NCCL_IB_FIFO_TC",
                                                 "NCCL_IB_SL",
                                                 "NCCL_IB_GID_INDEX",
                                                 "NCCL_IB_ROCE_VERSION_NUM",
                                                 "NCCL_IB_ADAPTIVE_ROUTING",
                                                 "UCX_IB_TRAFFIC_CLASS",
                                                 "UCX_IB_SL",
                                                 "UCX_IB_GID_INDEX",
                                                 "UCX_IB_AR_ENABLE",
                                                 "OMPI_MCA_btl_openib_ib_service_level",
                                                 "OMPI_MCA_btl_openib_gid_index"};
  return names;
}

}  // namespace fabscope::inventory
