#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>

#include "inventory/Manifest.hpp"

namespace fabscope::inventory {

std::string statusName(ManifestStatus status) {
  switch (status) {
    case ManifestStatus::match:
      return "match";
    case ManifestStatus::mismatch:
      return "mismatch";
    case ManifestStatus::missing:
      return "missing";
  }
  return "unknown";
}

bool manifestFailed(const std::vector<ManifestRow>& rows) {
  return std::any_of(rows.begin(), rows.end(),
                     [](const ManifestRow& row) { return row.mustMatch && row.status != ManifestStatus::match; });
}

bool versionMatches(const std::string& intended, const std::string& discovered) {
  if (intended.empty() || discovered.empty()) return false;
  if (intended == discovered) return true;
  auto partOfVersion = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; };
  for (std::size_t at = discovered.find(intended); at != std::string::npos; at = discovered.find(intended, at + 1)) {
    const std::size_t end = at + intended.size();
    const bool leftBoundary = at == 0 || !partOfVersion(discovered[at - 1]) || !partOfVersion(intended.front());
    bool rightBoundary = end == discovered.size() || !partOfVersion(discovered[end]) || !partOfVersion(intended.back());
    // "2.28" covers "2.28.3": a dot followed by more digits continues the same series.
    if (!rightBoundary && discovered[end] == '.' && end + 1 < discovered.size() &&
        std::isdigit(static_cast<unsigned char>(discovered[end + 1])))
      rightBoundary = true;
    if (leftBoundary && rightBoundary) return true;
  }
  return false;
}

namespace {

std::string formatRate(
    double number) {  // its own name: a unity build puts InventoryFormat.cpp's formatNumber beside it
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, number);
  return ec == std::errc() ? std::string(buffer, end) : std::string();
}

class HostChecker {
 public:
  HostChecker(const HostInventory& host, std::vector<ManifestRow>& rows) : host_(host), rows_(rows) {}

  void add(const std::string& component, const std::string& intended, const std::string& discovered,
           ManifestStatus status, const Expectation& expectation) {
    rows_.push_back(
        {component, host_.hostname, intended, discovered, status, expectation.mustMatch, expectation.validation});
  }

  void compare(const std::string& component, const std::string& intended, const std::string& discovered,
               const Expectation& expectation) {
    ManifestStatus status = discovered.empty()       ? ManifestStatus::missing
                            : discovered == intended ? ManifestStatus::match
                                                     : ManifestStatus::mismatch;
    add(component, intended, discovered, status, expectation);
  }

  void checkFabric(const FabricIntent& fabric) {
    const Expectation& e = fabric.expectation;
    std::vector<std::pair<std::string, const RdmaPort*>> activePorts;
    for (const auto& device : host_.rdmaDevices)
      for (const auto& port : device.ports)
        if (port.state == "ACTIVE") activePorts.emplace_back(device.name + "/" + std::to_string(port.number), &port);

    const std::vector<const NetInterface*> interfaces = fabricInterfaces(fabric);
    if (fabric.protocol == "tcp") {
      bool anyUp = std::any_of(interfaces.begin(), interfaces.end(),
                               [](const NetInterface* n) { return n->operstate == "up" || n->operstate == "unknown"; });
      add("fabric/protocol", "tcp", anyUp ? "tcp" : "no fabric interface up",
          anyUp ? ManifestStatus::match : ManifestStatus::missing, e);
    } else {
      bool ib = false, roce = false;
      for (const auto& [name, port] : activePorts) {
        ib = ib || port->linkLayer == "InfiniBand";
        roce = roce || port->linkLayer == "Ethernet";
      }
      std::string discovered = ib && roce ? "ib+roce" : ib ? "ib" : roce ? "roce" : "";
      add("fabric/protocol", fabric.protocol, discovered.empty() ? "no active RDMA port" : discovered,
          discovered.empty()              ? ManifestStatus::missing
          : discovered == fabric.protocol ? ManifestStatus::match
                                          : ManifestStatus::mismatch,
          e);
    }

    if (fabric.protocol != "tcp") {
      if (fabric.rateGbps) {
        for (const auto& [name, port] : activePorts)
          compare("fabric/rate_gbps@" + name, formatRate(*fabric.rateGbps),
                  port->rateGbps > 0 ? formatRate(port->rateGbps) : "", e);
        if (activePorts.empty())
          add("fabric/rate_gbps", formatRate(*fabric.rateGbps), "no active RDMA port", ManifestStatus::missing, e);
      }
      if (fabric.width) {
        for (const auto& [name, port] : activePorts)
          compare("fabric/width@" + name, std::to_string(*fabric.width),
                  port->width > 0 ? std::to_string(port->width) : "", e);
        if (activePorts.empty())
          add("fabric/width", std::to_string(*fabric.width), "no active RDMA port", ManifestStatus::missing, e);
      }
      if (fabric.rdmaMtu) {
        for (const auto& [name, port] : activePorts)
          compare("fabric/rdma_mtu@" + name, std::to_string(*fabric.rdmaMtu),
                  port->activeMtu > 0 ? std::to_string(port->activeMtu) : "", e);
        if (activePorts.empty())
          add("fabric/rdma_mtu", std::to_string(*fabric.rdmaMtu), "no active RDMA port", ManifestStatus::missing, e);
      }
    } else if (fabric.rateGbps) {
      for (const NetInterface* net : interfaces)
        compare("fabric/rate_gbps@" + net->name, formatRate(*fabric.rateGbps),
                net->speedMbps > 0 ? formatRate(static_cast<double>(net->speedMbps) / 1000.0) : "", e);
      if (interfaces.empty())
        add("fabric/rate_gbps", formatRate(*fabric.rateGbps), "no fabric interface", ManifestStatus::missing, e);
    }
    if (fabric.mtu) {
      for (const NetInterface* net : interfaces)
        compare("fabric/mtu@" + net->name, std::to_string(*fabric.mtu), net->mtu > 0 ? std::to_string(net->mtu) : "",
                e);
      if (interfaces.empty())
        add("fabric/mtu", std::to_string(*fabric.mtu), "no fabric interface", ManifestStatus::missing, e);
    }
  }

  void checkAdapter(const AdapterIntent& adapter) {
    const Expectation& e = adapter.expectation;
    const std::string base = "adapter/" + adapter.model;
    bool found = false;
    for (const auto& device : host_.rdmaDevices) {
      if (device.boardId != adapter.model && device.hcaType != adapter.model) continue;
      found = true;
      const std::string component = base + "@" + device.name;
      if (adapter.firmware) compare(component + "/firmware", *adapter.firmware, device.firmware, e);
      const NetInterface* net = interfaceOf(device);
      if (adapter.driver) compare(component + "/driver", *adapter.driver, net ? net->driver : "", e);
      if (adapter.driverVersion) {
        const std::string discovered = net ? net->driverVersion : "";
        add(component + "/driver_version", *adapter.driverVersion, discovered,
            discovered.empty()                                   ? ManifestStatus::missing
            : versionMatches(*adapter.driverVersion, discovered) ? ManifestStatus::match
                                                                 : ManifestStatus::mismatch,
            e);
      }
    }
    if (!found) add(base, "present", "none", ManifestStatus::missing, e);
  }

  void checkSoftware(const SoftwareIntent& software) {
    const SoftwareVersions& v = host_.versions;
    const std::string* discovered = software.name == "mpi"             ? &v.mpi
                                    : software.name == "ucx"           ? &v.ucx
                                    : software.name == "nccl"          ? &v.nccl
                                    : software.name == "cuda_runtime"  ? &v.cudaRuntime
                                    : software.name == "cuda_driver"   ? &v.cudaDriver
                                    : software.name == "nvidia_driver" ? &v.nvidiaDriver
                                    : software.name == "kernel"        ? &v.kernel
                                    : software.name == "os"            ? &v.os
                                                                       : nullptr;
    const std::string value = discovered ? *discovered : std::string();
    add("software/" + software.name, software.version, value,
        value.empty()                             ? ManifestStatus::missing
        : versionMatches(software.version, value) ? ManifestStatus::match
                                                  : ManifestStatus::mismatch,
        software.expectation);
  }

  void checkQos(const QosIntent& qos) {
    checkInterfaceQos(qos);
    checkRoceQos(qos);
    checkIbSl(qos);
    checkIbPortQos(qos);
  }

  // The interfaces the QoS intent is about: those it names, else the RoCE ones
  // (DCB, trust and ECN are Ethernet settings: the RoCE interfaces, not IPoIB).
  std::vector<const NetInterface*> qosInterfaces(const QosIntent& qos) const {
    std::vector<const NetInterface*> interfaces;
    for (const auto& net : host_.interfaces) {
      bool chosen = false;
      if (!qos.interfaces.empty()) {
        for (const auto& pattern : qos.interfaces)
          chosen = chosen || fnmatch(pattern.c_str(), net.name.c_str(), 0) == 0;
      } else {
        for (const auto& device : host_.rdmaDevices)
          if (device.name == net.rdmaDevice)
            for (const auto& port : device.ports) chosen = chosen || port.linkLayer == "Ethernet";
      }
      if (chosen) interfaces.push_back(&net);
    }
    return interfaces;
  }

  // "" (missing) when the setting could not be read; a known "no DCB" is a mismatch.
  static std::string dcbValue(const NetInterface& net, const std::string& configuredValue) {
    if (net.qos.dcb.status == "configured") return configuredValue;
    if (net.qos.dcb.status == "not configured") return "DCB not configured";
    return "";
  }

  // Only the DSCP values the manifest names ("26:3,48:6"), each with what the APP table gives it.
  static std::string dscpPriorities(const std::string& intended, const NetInterface& net) {
    std::string discovered;
    std::size_t start = 0;
    while (start < intended.size()) {
      auto end = intended.find(',', start);
      if (end == std::string::npos) end = intended.size();
      const std::string pair = intended.substr(start, end - start);
      const int dscp = std::stoi(pair.substr(0, pair.find(':')));
      std::string priorities;
      for (const auto& app : net.qos.dcb.apps)
        if (app.selector == 5 && app.protocol == dscp)
          priorities += (priorities.empty() ? "" : "/") + std::to_string(app.priority);
      discovered +=
          (discovered.empty() ? "" : ",") + std::to_string(dscp) + ":" + (priorities.empty() ? "none" : priorities);
      start = end + 1;
    }
    return discovered;
  }

  void checkInterfaceQos(const QosIntent& qos) {
    const auto interfaces = qosInterfaces(qos);
    auto perInterface = [&](const std::optional<QosItem>& item, const std::string& name, auto discover) {
      if (!item) return;
      for (const NetInterface* net : interfaces)
        compare("qos/" + name + "@" + net->name, item->value, discover(*net), item->expectation);
      if (interfaces.empty())
        add("qos/" + name, item->value, "no fabric interface", ManifestStatus::missing, item->expectation);
    };
    perInterface(qos.pfcPriorities, "pfc_priorities", [&](const NetInterface& net) {
      return dcbValue(net, net.qos.dcb.hasPfc ? priorityList(net.qos.dcb.pfcEnabledMask) : "");
    });
    perInterface(qos.trust, "trust", [&](const NetInterface& net) { return net.qos.trust; });
    perInterface(qos.ecnNp, "ecn_np", [&](const NetInterface& net) {
      return net.qos.ecnNpMask < 0 ? std::string() : priorityList(net.qos.ecnNpMask);
    });
    perInterface(qos.ecnRp, "ecn_rp", [&](const NetInterface& net) {
      return net.qos.ecnRpMask < 0 ? std::string() : priorityList(net.qos.ecnRpMask);
    });
    perInterface(qos.dscpMap, "dscp_map",
                 [&](const NetInterface& net) { return dcbValue(net, dscpPriorities(qos.dscpMap->value, net)); });
  }

  // The active ports of one link layer ("Ethernet": RoCE, "InfiniBand"), as "device/port".
  std::vector<std::pair<std::string, const RdmaPort*>> activePorts(const std::string& linkLayer) const {
    std::vector<std::pair<std::string, const RdmaPort*>> ports;
    for (const auto& device : host_.rdmaDevices)
      for (const auto& port : device.ports)
        if (port.state == "ACTIVE" && port.linkLayer == linkLayer)
          ports.emplace_back(device.name + "/" + std::to_string(port.number), &port);
    return ports;
  }

  std::optional<std::string> environmentValue(const std::string& name) const {
    for (const auto& [key, value] : host_.environment)
      if (key == name) return value;
    return std::nullopt;
  }

  void checkRoceQos(const QosIntent& qos) {
    const auto rocePorts = activePorts("Ethernet");
    if (qos.roceTc) {
      const QosItem& item = *qos.roceTc;
      const std::size_t before = rows_.size();
      for (const auto& [name, port] : rocePorts) {
        if (port->qos.trafficClass >= 0)
          compare("qos/roce_tc@" + name, item.value, std::to_string(port->qos.trafficClass), item.expectation);
        if (port->qos.defaultRoceTos >= 0)
          compare("qos/roce_tc@" + name + "/rdma_cm", item.value, std::to_string(port->qos.defaultRoceTos),
                  item.expectation);
      }
      for (const char* variable : {"NCCL_IB_TC", "UCX_IB_TRAFFIC_CLASS"})
        if (auto value = environmentValue(variable))
          compare(std::string("qos/roce_tc@env/") + variable, item.value, *value, item.expectation);
      if (rows_.size() == before)
        add("qos/roce_tc", item.value,
            "no traffic class on a port (tc/, rdma_cm) nor in NCCL_IB_TC/UCX_IB_TRAFFIC_CLASS", ManifestStatus::missing,
            item.expectation);
    }
    if (qos.roceMode) {
      for (const auto& [name, port] : rocePorts)
        compare("qos/roce_mode@" + name, qos.roceMode->value, port->qos.defaultRoceMode, qos.roceMode->expectation);
      if (rocePorts.empty())
        add("qos/roce_mode", qos.roceMode->value, "no active RoCE port", ManifestStatus::missing,
            qos.roceMode->expectation);
    }
  }

  void checkIbSl(const QosIntent& qos) {
    if (!qos.ibSl) return;
    const std::size_t before = rows_.size();
    for (const char* variable : {"NCCL_IB_SL", "UCX_IB_SL", "OMPI_MCA_btl_openib_ib_service_level"})
      if (auto value = environmentValue(variable))
        compare(std::string("qos/ib_sl@env/") + variable, qos.ibSl->value, *value, qos.ibSl->expectation);
    if (rows_.size() == before)
      add("qos/ib_sl", qos.ibSl->value, "none of NCCL_IB_SL, UCX_IB_SL, OMPI_MCA_btl_openib_ib_service_level is set",
          ManifestStatus::missing, qos.ibSl->expectation);
  }

  void checkIbPortQos(const QosIntent& qos) {
    const auto ibPorts = activePorts("InfiniBand");
    auto perIbPort = [&](const std::optional<QosItem>& item, const std::string& name, auto discover) {
      if (!item) return;
      for (const auto& [where, port] : ibPorts)
        compare("qos/" + name + "@" + where, item->value, discover(*port), item->expectation);
      if (ibPorts.empty())
        add("qos/" + name, item->value, "no active InfiniBand port", ManifestStatus::missing, item->expectation);
    };
    // "" (unknown without smpquery) is missing, never a match.
    perIbPort(qos.ibVlArbLow, "ib_vlarb_low", [](const RdmaPort& p) { return totalWeightPerVl(p.qos.vlArbLow); });
    perIbPort(qos.ibVlArbHigh, "ib_vlarb_high", [](const RdmaPort& p) { return totalWeightPerVl(p.qos.vlArbHigh); });
    perIbPort(qos.ibSl2vl, "ib_sl2vl", [](const RdmaPort& p) { return p.qos.sl2vl; });
  }

  // A port's table ("1:16,0:32,1:16": slots in order, a VL may hold several) as the
  // manifest states it: the total weight per VL, sorted by VL; "none" stays "none".
  static std::string totalWeightPerVl(const std::string& slots) {
    if (slots.empty() || slots == "none") return slots;
    std::map<int, int> total;
    std::size_t start = 0;
    while (start < slots.size()) {
      auto end = slots.find(',', start);
      if (end == std::string::npos) end = slots.size();
      const std::string pair = slots.substr(start, end - start);
      total[std::stoi(pair.substr(0, pair.find(':')))] += std::stoi(pair.substr(pair.find(':') + 1));
      start = end + 1;
    }
    std::string text;
    for (const auto& [vl, weight] : total)
      text += (text.empty() ? "" : ",") + std::to_string(vl) + ":" + std::to_string(weight);
    return text;
  }

 private:
  std::vector<const NetInterface*> fabricInterfaces(const FabricIntent& fabric) const {
    std::vector<const NetInterface*> selected;
    for (const auto& net : host_.interfaces) {
      bool chosen = false;
      if (!fabric.interfaces.empty()) {
        for (const auto& pattern : fabric.interfaces)
          chosen = chosen || fnmatch(pattern.c_str(), net.name.c_str(), 0) == 0;
      } else if (fabric.protocol == "tcp") {
        chosen = net.name != "lo" && net.operstate == "up";
      } else {
        chosen = !net.rdmaDevice.empty();
      }
      if (chosen) selected.push_back(&net);
    }
    return selected;
  }

  const NetInterface* interfaceOf(const RdmaDevice& device) const {
    for (const auto& net : host_.interfaces)
      if (net.rdmaDevice == device.name) return &net;
    return nullptr;
  }

  const HostInventory& host_;
  std::vector<ManifestRow>& rows_;
};

}  // namespace

std::vector<ManifestRow> checkManifest(const Manifest& manifest, const std::vector<HostInventory>& hosts) {
  std::vector<ManifestRow> rows;
  for (const auto& host : hosts) {
    HostChecker checker(host, rows);
    if (manifest.fabric) checker.checkFabric(*manifest.fabric);
    for (const auto& adapter : manifest.adapters) checker.checkAdapter(adapter);
    for (const auto& software : manifest.software) checker.checkSoftware(software);
    if (manifest.qos) checker.checkQos(*manifest.qos);
  }
  return rows;
}

}  // namespace fabscope::inventory
