#include "inventory/Consistency.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>

namespace fabscope::inventory {

std::string severityName(Severity severity) {
  switch (severity) {
    case Severity::info:
      return "info";
    case Severity::warning:
      return "warning";
    case Severity::error:
      return "error";
  }
  return "unknown";
}

namespace {

std::string formatGbps(double gbps) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, gbps);
  return (ec == std::errc() ? std::string(buffer, end) : std::string("?")) + " Gb/s";
}

// One observed value of a component on a host, compared with the same
// component on the other hosts.
struct Observation {
  std::string host;
  std::string component;
  std::string value;
};

// The value most observations share; ties go to the one seen first, so with
// two hosts the first host (usually rank 0's) is the reference.
std::string referenceValue(const std::vector<Observation>& observations) {
  std::map<std::string, std::pair<int, std::size_t>> counts;  // value -> (count, first position)
  for (std::size_t i = 0; i < observations.size(); ++i) {
    auto [it, inserted] = counts.try_emplace(observations[i].value, 0, i);
    ++it->second.first;
  }
  const std::string* best = nullptr;
  std::pair<int, std::size_t> bestScore{0, 0};
  for (const auto& [value, score] : counts) {
    if (best == nullptr || score.first > bestScore.first ||
        (score.first == bestScore.first && score.second < bestScore.second)) {
      best = &value;
      bestScore = score;
    }
  }
  return best ? *best : std::string();
}

// Flags every observation that differs from the reference of its group.
void flagDifferences(const std::map<std::string, std::vector<Observation>>& groups, Severity severity,
                     const std::string& description, std::vector<ConsistencyFlag>& flags) {
  for (const auto& [group, observations] : groups) {
    const std::string reference = referenceValue(observations);
    for (const auto& observation : observations) {
      if (observation.value == reference) continue;
      flags.push_back({severity, observation.host, observation.component,
                       description + " differs from the other hosts (" + group + ")", reference, observation.value});
    }
  }
}

std::string adapterModel(const RdmaDevice& device) {
  return !device.boardId.empty() ? device.boardId : !device.hcaType.empty() ? device.hcaType : std::string("unknown");
}

bool isFabricCandidate(const NetInterface& net) {
  // Loopback and interfaces that are administratively down say nothing about the fabric.
  return net.name != "lo" && (net.operstate == "up" || net.operstate == "unknown") && net.mtu > 0;
}

void checkVersions(const std::vector<HostInventory>& hosts, std::vector<ConsistencyFlag>& flags) {
  std::map<std::string, std::vector<Observation>> firmware, drivers, libraries;
  for (const auto& host : hosts) {
    for (const auto& device : host.rdmaDevices)
      if (!device.firmware.empty())
        firmware["adapter model " + adapterModel(device)].push_back(
            {host.hostname, "rdma/" + device.name + "/fw_ver", device.firmware});
    for (const auto& net : host.interfaces)
      if (!net.driver.empty() && !net.driverVersion.empty())
        drivers["driver " + net.driver].push_back(
            {host.hostname, "net/" + net.name + "/driver_version", net.driverVersion});
    const SoftwareVersions& v = host.versions;
    const std::pair<const char*, const std::string*> software[] = {{"mpi", &v.mpi},
                                                                   {"ucx", &v.ucx},
                                                                   {"nccl", &v.nccl},
                                                                   {"cuda_runtime", &v.cudaRuntime},
                                                                   {"cuda_driver", &v.cudaDriver},
                                                                   {"nvidia_driver", &v.nvidiaDriver},
                                                                   {"kernel", &v.kernel},
                                                                   {"os", &v.os},
                                                                   {"fabscope", &v.fabscope}};
    for (const auto& [name, value] : software)
      libraries[name].push_back({host.hostname, std::string("version/") + name, value->empty() ? "(none)" : *value});
  }
  flagDifferences(firmware, Severity::warning, "adapter firmware", flags);
  flagDifferences(drivers, Severity::warning, "driver version", flags);
  flagDifferences(libraries, Severity::warning, "software version", flags);
}

void checkMtu(const std::vector<HostInventory>& hosts, std::vector<ConsistencyFlag>& flags) {
  std::map<std::string, std::vector<Observation>> interfaceMtu, rdmaMtu;
  for (const auto& host : hosts) {
    for (const auto& net : host.interfaces)
      if (isFabricCandidate(net))
        interfaceMtu["interface " + net.name].push_back(
            {host.hostname, "net/" + net.name + "/mtu", std::to_string(net.mtu)});
    for (const auto& device : host.rdmaDevices)
      for (const auto& port : device.ports)
        if (port.state == "ACTIVE" && port.activeMtu > 0)
          rdmaMtu[port.linkLayer + " ports"].push_back(
              {host.hostname, "rdma/" + device.name + "/port/" + std::to_string(port.number) + "/active_mtu",
               std::to_string(port.activeMtu)});
  }
  // With a single host there is nobody to differ from.
  if (hosts.size() < 2) return;
  flagDifferences(interfaceMtu, Severity::error, "interface MTU", flags);
  flagDifferences(rdmaMtu, Severity::error, "RDMA active MTU", flags);
}

void checkPorts(const std::vector<HostInventory>& hosts, const ConsistencyOptions& options,
                std::vector<ConsistencyFlag>& flags) {
  struct PortRef {
    const HostInventory* host;
    const RdmaDevice* device;
    const RdmaPort* port;
  };
  std::map<std::string, std::vector<PortRef>> peers;  // adapter model + link layer -> active ports
  for (const auto& host : hosts) {
    for (const auto& device : host.rdmaDevices) {
      for (const auto& port : device.ports) {
        const std::string component = "rdma/" + device.name + "/port/" + std::to_string(port.number);
        if (!port.state.empty() && port.state != "ACTIVE") {
          flags.push_back({Severity::warning, host.hostname, component + "/state", "RDMA port is not active", "ACTIVE",
                           port.state + (port.physState.empty() ? "" : " (" + port.physState + ")")});
          continue;
        }
        peers[adapterModel(device) + " " + port.linkLayer].push_back({&host, &device, &port});
        const std::string& protocol = options.intendedProtocol;
        if ((protocol == "ib" && port.linkLayer != "InfiniBand") ||
            (protocol == "roce" && port.linkLayer != "Ethernet")) {
          flags.push_back({Severity::error, host.hostname, component + "/link_layer",
                           "link layer is not the intended protocol " + protocol,
                           protocol == "ib" ? "InfiniBand" : "Ethernet", port.linkLayer});
        }
        if (protocol == "roce" && port.linkLayer == "Ethernet" &&
            std::none_of(port.gids.begin(), port.gids.end(), [](const GidEntry& g) { return g.type == "RoCE v2"; })) {
          flags.push_back({Severity::warning, host.hostname, component + "/gids", "no RoCE v2 GID on this port",
                           "RoCE v2", "none"});
        }
      }
    }
  }
  for (const auto& [group, ports] : peers) {
    std::vector<Observation> rates, widths;
    for (const auto& ref : ports) {
      rates.push_back({ref.host->hostname, "", std::to_string(ref.port->rateGbps)});
      widths.push_back({ref.host->hostname, "", std::to_string(ref.port->width)});
    }
    // Peers run at the most common rate; only slower ports are a problem.
    const double expectedRate = std::stod(referenceValue(rates));
    const int expectedWidth = std::stoi(referenceValue(widths));
    for (const auto& ref : ports) {
      const std::string component = "rdma/" + ref.device->name + "/port/" + std::to_string(ref.port->number);
      if (ref.port->rateGbps > 0 && ref.port->rateGbps < expectedRate)
        flags.push_back({Severity::error, ref.host->hostname, component + "/rate",
                         "port runs below its peers' rate (" + group + ")", formatGbps(expectedRate),
                         formatGbps(ref.port->rateGbps)});
      if (ref.port->width > 0 && ref.port->width < expectedWidth)
        flags.push_back({Severity::error, ref.host->hostname, component + "/width",
                         "port runs below its peers' width (" + group + ")", std::to_string(expectedWidth) + "X",
                         std::to_string(ref.port->width) + "X"});
    }
  }
  // Ethernet interfaces of the same name: slower than the peers.
  std::map<std::string, std::vector<std::pair<const HostInventory*, const NetInterface*>>> speeds;
  for (const auto& host : hosts)
    for (const auto& net : host.interfaces)
      if (isFabricCandidate(net) && net.speedMbps > 0) speeds[net.name].emplace_back(&host, &net);
  for (const auto& [name, members] : speeds) {
    std::vector<Observation> values;
    for (const auto& [host, net] : members) values.push_back({host->hostname, "", std::to_string(net->speedMbps)});
    const long long expected = std::stoll(referenceValue(values));
    for (const auto& [host, net] : members)
      if (net->speedMbps < expected)
        flags.push_back({Severity::error, host->hostname, "net/" + name + "/speed_mbps",
                         "interface runs below its peers' speed", std::to_string(expected) + " Mb/s",
                         std::to_string(net->speedMbps) + " Mb/s"});
  }
}

// NUMA node and state of a NIC named by interface or RDMA device name.
struct NicLocation {
  int numaNode = -1;
  std::string state;
};

std::optional<NicLocation> findNic(const HostInventory& host, const std::string& nic) {
  for (const auto& net : host.interfaces)
    if (net.name == nic) return NicLocation{net.numaNode, net.operstate};
  for (const auto& device : host.rdmaDevices)
    if (device.name == nic) {
      bool anyActive =
          std::any_of(device.ports.begin(), device.ports.end(), [](const RdmaPort& p) { return p.state == "ACTIVE"; });
      return NicLocation{device.numaNode, anyActive ? "up" : "down"};
    }
  return std::nullopt;
}

void checkBindings(const std::vector<HostInventory>& hosts, const ConsistencyOptions& options,
                   std::vector<ConsistencyFlag>& flags) {
  for (const auto& binding : options.bindings) {
    auto host =
        std::find_if(hosts.begin(), hosts.end(), [&](const HostInventory& h) { return h.hostname == binding.host; });
    if (host == hosts.end() || binding.nic.empty()) continue;
    const std::string component = "rank/" + std::to_string(binding.rank) + "/binding";
    auto nic = findNic(*host, binding.nic);
    if (!nic) {
      flags.push_back({Severity::error, binding.host, component, "rank is bound to a NIC this host does not have",
                       "a NIC of this host", binding.nic});
      continue;
    }
    if (nic->state == "down")
      flags.push_back({Severity::error, binding.host, component, "rank is bound to a NIC that is down", "up",
                       binding.nic + " down"});
    if (binding.gpu < 0) continue;
    auto gpu =
        std::find_if(host->gpus.begin(), host->gpus.end(), [&](const GpuInfo& g) { return g.index == binding.gpu; });
    if (gpu == host->gpus.end() || gpu->numaNode < 0 || nic->numaNode < 0) continue;
    if (gpu->numaNode != nic->numaNode)
      flags.push_back({Severity::warning, binding.host, component,
                       "rank's NIC is on another NUMA node than its GPU " + std::to_string(binding.gpu),
                       "NUMA node " + std::to_string(gpu->numaNode),
                       binding.nic + " on NUMA node " + std::to_string(nic->numaNode)});
  }
}

// The traffic class RDMA traffic of this host is sent with: the port's forced
// class (MLNX_OFED tc/<port>/traffic_class), else what the libraries were told
// (NCCL_IB_TC, UCX_IB_TRAFFIC_CLASS), else rdma_cm's default ToS; -1 unknown.
int rdmaTrafficClass(const HostInventory& host, const RdmaPort& port) {
  if (port.qos.trafficClass >= 0) return port.qos.trafficClass;
  for (const char* name : {"NCCL_IB_TC", "UCX_IB_TRAFFIC_CLASS"})
    for (const auto& [key, value] : host.environment)
      if (key == name) {
        char* end = nullptr;
        const long tc = std::strtol(value.c_str(), &end, 10);
        if (end != value.c_str() && *end == '\0' && tc >= 0 && tc <= 255) return static_cast<int>(tc);
      }
  return port.qos.defaultRoceTos;
}

// The priority that DSCP (traffic class >> 2) maps to under DSCP trust; -1 when
// trust is not DSCP or the APP table has no entry for it (then it is unknown).
int rdmaPriority(const NetInterface& net, int trafficClass) {
  if (trafficClass < 0 || net.qos.trust.rfind("dscp", 0) != 0) return -1;
  const int dscp = trafficClass >> 2;
  for (const auto& app : net.qos.dcb.apps)
    if (app.selector == 5 && app.protocol == dscp) return app.priority;
  return -1;
}

void checkQos(const std::vector<HostInventory>& hosts, std::vector<ConsistencyFlag>& flags) {
  std::map<std::string, std::vector<Observation>> pfc, trust, ecnNp, ecnRp, dscp, ets, dcqcn, roceMode, trafficClass,
      vlArbitration, sl2vl, firmware;
  for (const auto& host : hosts) {
    for (const auto& net : host.interfaces) {
      const InterfaceQos& q = net.qos;
      if (q.dcb.status.empty() || q.dcb.status == "unknown") continue;
      const std::string group = "interface " + net.name;
      const std::string base = "qos/net/" + net.name + "/";
      const bool configured = q.dcb.status == "configured";
      if (!configured || q.dcb.hasPfc)
        pfc[group].push_back({host.hostname, base + "pfc_enabled",
                              configured ? priorityList(q.dcb.pfcEnabledMask) : "DCB not configured"});
      if (!q.trust.empty()) trust[group].push_back({host.hostname, base + "trust", q.trust});
      if (q.ecnNpMask >= 0) ecnNp[group].push_back({host.hostname, base + "ecn_np", priorityList(q.ecnNpMask)});
      if (q.ecnRpMask >= 0) ecnRp[group].push_back({host.hostname, base + "ecn_rp", priorityList(q.ecnRpMask)});
      if (configured) dscp[group].push_back({host.hostname, base + "app_dscp", dscpMap(q.dcb)});
      if (configured && q.dcb.hasEts) {
        std::string text;
        for (int tc : q.dcb.prioTc) text += (text.empty() ? "" : ",") + std::to_string(tc);
        ets[group].push_back({host.hostname, base + "ets_prio_tc", text});
      }
      for (const auto& [name, value] : q.dcqcn)
        dcqcn[group + " " + name].push_back({host.hostname, base + "dcqcn/" + name, value});
    }
    for (const auto& device : host.rdmaDevices) {
      for (const auto& [name, value] : device.firmwareQos)
        firmware["adapters " + name].push_back({host.hostname, "qos/rdma/" + device.name + "/firmware/" + name, value});
      for (const auto& port : device.ports) {
        const std::string base = "qos/rdma/" + device.name + "/port/" + std::to_string(port.number) + "/";
        if (port.linkLayer == "InfiniBand") {
          // Ports of the same number (the same rail on every host) share one design.
          const std::string group = "InfiniBand port " + std::to_string(port.number);
          if (!port.qos.vlArbLow.empty())
            vlArbitration[group + " low"].push_back({host.hostname, base + "vlarb_low", port.qos.vlArbLow});
          if (!port.qos.vlArbHigh.empty())
            vlArbitration[group + " high"].push_back({host.hostname, base + "vlarb_high", port.qos.vlArbHigh});
          if (!port.qos.sl2vl.empty()) sl2vl[group].push_back({host.hostname, base + "sl2vl", port.qos.sl2vl});
          continue;
        }
        if (!port.qos.defaultRoceMode.empty())
          roceMode["RoCE ports"].push_back({host.hostname, base + "default_roce_mode", port.qos.defaultRoceMode});
        if (port.qos.trafficClass >= 0)
          trafficClass["RoCE ports"].push_back(
              {host.hostname, base + "traffic_class", std::to_string(port.qos.trafficClass)});
      }
    }
  }
  if (hosts.size() >= 2) {
    flagDifferences(pfc, Severity::error, "PFC priorities", flags);
    flagDifferences(trust, Severity::error, "trust mode (PCP/DSCP)", flags);
    flagDifferences(dscp, Severity::error, "DSCP-to-priority map", flags);
    flagDifferences(ecnNp, Severity::error, "ECN notification-point priorities", flags);
    flagDifferences(ecnRp, Severity::error, "ECN reaction-point priorities", flags);
    flagDifferences(ets, Severity::warning, "ETS priority-to-traffic-class map", flags);
    flagDifferences(dcqcn, Severity::warning, "DCQCN parameter", flags);
    flagDifferences(roceMode, Severity::warning, "default RoCE mode", flags);
    flagDifferences(trafficClass, Severity::warning, "port traffic class", flags);
    flagDifferences(vlArbitration, Severity::warning, "InfiniBand VL arbitration table", flags);
    flagDifferences(sl2vl, Severity::warning, "InfiniBand SL-to-VL map", flags);
    flagDifferences(firmware, Severity::warning, "adapter firmware QoS parameter (mlxconfig)", flags);
  }
  // On each host by itself: lossless RoCE needs PFC on the priority its traffic maps to.
  for (const auto& host : hosts)
    for (const auto& device : host.rdmaDevices)
      for (const auto& port : device.ports) {
        if (port.linkLayer != "Ethernet" || port.state != "ACTIVE") continue;
        for (const auto& net : host.interfaces) {
          if (net.rdmaDevice != device.name || net.qos.dcb.status != "configured" || !net.qos.dcb.hasPfc) continue;
          const int tc = rdmaTrafficClass(host, port);
          const int priority = rdmaPriority(net, tc);
          if (priority < 0) continue;
          if (!(net.qos.dcb.pfcEnabledMask & (1 << priority)))
            flags.push_back({Severity::error, host.hostname, "qos/net/" + net.name + "/pfc_enabled",
                             "PFC is off on the priority RDMA traffic maps to (traffic class " + std::to_string(tc) +
                                 ", DSCP " + std::to_string(tc >> 2) + " -> priority " + std::to_string(priority) + ")",
                             "PFC on priority " + std::to_string(priority), priorityList(net.qos.dcb.pfcEnabledMask)});
          if (net.qos.ecnNpMask >= 0 && !(net.qos.ecnNpMask & (1 << priority)))
            flags.push_back({Severity::warning, host.hostname, "qos/net/" + net.name + "/ecn_np",
                             "ECN (notification point) is off on the RDMA priority " + std::to_string(priority),
                             "ECN on priority " + std::to_string(priority), priorityList(net.qos.ecnNpMask)});
        }
      }
}

}  // namespace

std::vector<ConsistencyFlag> checkConsistency(const std::vector<HostInventory>& hosts,
                                              const ConsistencyOptions& options) {
  std::vector<ConsistencyFlag> flags;
  if (hosts.size() >= 2) checkVersions(hosts, flags);
  checkMtu(hosts, flags);
  checkPorts(hosts, options, flags);
  checkBindings(hosts, options, flags);
  checkQos(hosts, flags);
  return flags;
}

}  // namespace fabscope::inventory
