#include "inventory/InventoryFormat.hpp"

#include <charconv>
#include <sstream>

namespace fabscope::inventory {

namespace {

KeyValues portQosFacts(const RdmaPort& port);
void writeFactsObject(JsonWriter& w, const KeyValues& facts);

std::string formatNumber(double number) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, number);
  return ec == std::errc() ? std::string(buffer, end) : std::string();
}

void writeVersions(JsonWriter& w, const SoftwareVersions& v) {
  w.beginObject();
  w.key("fabscope").value(v.fabscope);
  w.key("mpi").value(v.mpi);
  w.key("ucx").value(v.ucx);
  w.key("nccl").value(v.nccl);
  w.key("cuda_runtime").value(v.cudaRuntime);
  w.key("cuda_driver").value(v.cudaDriver);
  w.key("nvidia_driver").value(v.nvidiaDriver);
  w.key("kernel").value(v.kernel);
  w.key("kernel_build").value(v.kernelBuild);
  w.key("os").value(v.os);
  w.endObject();
}

void writePort(JsonWriter& w, const RdmaPort& port) {
  w.beginObject();
  w.key("port").value(port.number);
  w.key("state").value(port.state);
  w.key("phys_state").value(port.physState);
  w.key("link_layer").value(port.linkLayer);
  w.key("rate").value(port.rate);
  w.key("rate_gbps").value(port.rateGbps);
  w.key("width").value(port.width);
  w.key("speed").value(port.speedName);
  if (port.activeMtu > 0)
    w.key("active_mtu").value(port.activeMtu);
  else
    w.key("active_mtu").nullValue();
  w.key("lid").value(port.lid);
  w.key("gids").beginArray();
  for (const auto& gid : port.gids) {
    w.beginObject();
    w.key("index").value(gid.index);
    w.key("gid").value(gid.gid);
    w.key("type").value(gid.type);
    w.key("netdev").value(gid.netdev);
    w.endObject();
  }
  w.endArray();
  w.key("qos");
  writeFactsObject(w, portQosFacts(port));
  w.endObject();
}

std::string joinInts(const std::array<int, 8>& values) {
  std::string text;
  for (int v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
  return text;
}

// Flat QoS facts of one interface: the same keys for toKeyValues, JSON and text.
KeyValues interfaceQosFacts(const InterfaceQos& q) {
  KeyValues kv;
  auto add = [&](std::string key, std::string value) { kv.emplace_back(std::move(key), std::move(value)); };
  const DcbState& d = q.dcb;
  add("dcb", d.status);
  if (!d.detail.empty()) add("dcb_detail", d.detail);
  if (d.status == "configured") {
    add("dcbx", dcbxName(d.dcbx));
    add("pfc_enabled", d.hasPfc ? priorityList(d.pfcEnabledMask) : "unknown");
    if (d.hasPfc) {
      add("pfc_cap", std::to_string(d.pfcCap));
      add("pfc_delay", std::to_string(d.pfcDelay));
    }
    if (d.hasEts) {
      add("ets_prio_tc", joinInts(d.prioTc));
      add("ets_tc_bw", joinInts(d.tcTxBw));
      std::string tsa;
      for (int t : d.tcTsa) tsa += (tsa.empty() ? "" : ",") + tsaName(t);
      add("ets_tsa", tsa);
    } else {
      add("ets_prio_tc", "unknown");
    }
    add("app_dscp", dscpMap(d));
    add("app_pcp", pcpMap(d));
    if (d.hasTrust) {
      std::string order;
      for (int selector : d.trustOrder) order += (order.empty() ? "" : ",") + selectorName(selector);
      add("apptrust", order.empty() ? "none" : order);
    }
    if (d.hasBuffer) {
      add("buffer_prio", joinInts(d.prioBuffer));
      std::string sizes;
      for (auto size : d.bufferSize) sizes += (sizes.empty() ? "" : ",") + std::to_string(size);
      add("buffer_size", sizes);
    }
  }
  add("trust", q.trust.empty() ? "unknown" : q.trust);
  if (!q.trustSource.empty()) add("trust_source", q.trustSource);
  add("ecn_np", priorityList(q.ecnNpMask));
  add("ecn_rp", priorityList(q.ecnRpMask));
  for (const auto& [name, value] : q.dcqcn) add("dcqcn/" + name, value);
  return kv;
}

KeyValues portQosFacts(const RdmaPort& port) {
  KeyValues kv;
  auto add = [&](std::string key, std::string value) { kv.emplace_back(std::move(key), std::move(value)); };
  const PortQos& q = port.qos;
  if (port.linkLayer != "InfiniBand") {
    add("default_roce_mode", q.defaultRoceMode.empty() ? "unknown" : q.defaultRoceMode);
    add("default_roce_tos", q.defaultRoceTos >= 0 ? std::to_string(q.defaultRoceTos) : "unknown");
    add("traffic_class", q.trafficClass >= 0 ? std::to_string(q.trafficClass) : "unknown");
    if (q.trafficClass < 0 && !q.trafficClassText.empty()) add("traffic_class_text", q.trafficClassText);
  } else {
    add("sm_sl", q.smSl >= 0 ? std::to_string(q.smSl) : "unknown");
    // VL arbitration and SL-to-VL need smpquery (SMP MADs): "unknown" without it.
    add("vlarb_low", q.vlArbLow.empty() ? "unknown" : q.vlArbLow);
    add("vlarb_high", q.vlArbHigh.empty() ? "unknown" : q.vlArbHigh);
    if (q.vlArbLowCap >= 0)
      add("vlarb_cap", "low " + std::to_string(q.vlArbLowCap) + ", high " + std::to_string(q.vlArbHighCap));
    add("sl2vl", q.sl2vl.empty() ? "unknown" : q.sl2vl);
  }
  if (!q.capMask.empty()) {
    add("cap_mask", q.capMask);
    add("cap_flags", decodeIbCapabilityMask(q.capMask));
  }
  return kv;
}

bool hasInterfaceQos(const NetInterface& n) { return !n.qos.dcb.status.empty(); }

void writeFactsObject(JsonWriter& w, const KeyValues& facts) {
  w.beginObject();
  for (const auto& [key, value] : facts) w.key(key).value(value);
  w.endObject();
}

}  // namespace

void writeJson(JsonWriter& w, const HostInventory& inv) {
  w.beginObject();
  w.key("hostname").value(inv.hostname);
  w.key("rdma_devices").beginArray();
  for (const auto& d : inv.rdmaDevices) {
    w.beginObject();
    w.key("name").value(d.name);
    w.key("firmware").value(d.firmware);
    w.key("node_guid").value(d.nodeGuid);
    w.key("board_id").value(d.boardId);
    w.key("hca_type").value(d.hcaType);
    w.key("node_type").value(d.nodeType);
    w.key("pci_address").value(d.pciAddress);
    w.key("numa_node").value(d.numaNode);
    w.key("netdevs").beginArray();
    for (const auto& n : d.netdevs) w.value(n);
    w.endArray();
    w.key("source").value(d.source);
    w.key("ports").beginArray();
    for (const auto& p : d.ports) writePort(w, p);
    w.endArray();
    w.key("firmware_qos");
    writeFactsObject(w, d.firmwareQos);
    w.endObject();
  }
  w.endArray();
  w.key("interfaces").beginArray();
  for (const auto& n : inv.interfaces) {
    w.beginObject();
    w.key("name").value(n.name);
    w.key("operstate").value(n.operstate);
    if (n.speedMbps >= 0)
      w.key("speed_mbps").value(n.speedMbps);
    else
      w.key("speed_mbps").nullValue();
    w.key("mtu").value(n.mtu);
    w.key("mac_address").value(n.macAddress);
    w.key("driver").value(n.driver);
    w.key("driver_version").value(n.driverVersion);
    w.key("pci_address").value(n.pciAddress);
    w.key("numa_node").value(n.numaNode);
    w.key("rdma_device").value(n.rdmaDevice);
    if (hasInterfaceQos(n)) {
      w.key("qos");
      writeFactsObject(w, interfaceQosFacts(n.qos));
    } else {
      w.key("qos").nullValue();
    }
    w.endObject();
  }
  w.endArray();
  w.key("gpus").beginArray();
  for (const auto& g : inv.gpus) {
    w.beginObject();
    w.key("index").value(g.index);
    w.key("model").value(g.model);
    w.key("pci_address").value(g.pciAddress);
    w.key("numa_node").value(g.numaNode);
    w.endObject();
  }
  w.endArray();
  w.key("gpu_nic_affinity").beginArray();
  for (const auto& a : inv.affinity) {
    w.beginObject();
    w.key("gpu").value(a.gpu);
    w.key("nic").value(a.nic);
    w.key("relation").value(a.relation);
    w.key("closest").value(a.closest);
    w.endObject();
  }
  w.endArray();
  w.key("numa_source").value(inv.numaSource);
  w.key("qos_vendor_tool").value(inv.qosVendorTool);
  w.key("versions");
  writeVersions(w, inv.versions);
  w.key("environment").beginObject();
  for (const auto& [name, value] : inv.environment) w.key(name).value(value);
  w.endObject();
  w.key("notes").beginArray();
  for (const auto& note : inv.notes) w.value(note);
  w.endArray();
  w.endObject();
}

std::string toJson(const HostInventory& inventory, int indent) {
  JsonWriter writer(indent);
  writeJson(writer, inventory);
  return writer.str() + (indent > 0 ? "\n" : "");
}

KeyValues toKeyValues(const HostInventory& inv) {
  KeyValues kv;
  auto add = [&](std::string key, std::string value) { kv.emplace_back(std::move(key), std::move(value)); };
  add("host/name", inv.hostname);
  add("host/numa_source", inv.numaSource);
  for (const auto& d : inv.rdmaDevices) {
    const std::string base = "rdma/" + d.name + "/";
    add(base + "fw_ver", d.firmware);
    add(base + "node_guid", d.nodeGuid);
    add(base + "board_id", d.boardId);
    add(base + "hca_type", d.hcaType);
    add(base + "pci_address", d.pciAddress);
    add(base + "numa_node", std::to_string(d.numaNode));
    std::string netdevs;
    for (const auto& n : d.netdevs) netdevs += (netdevs.empty() ? "" : ",") + n;
    add(base + "netdevs", netdevs);
    add(base + "source", d.source);
    for (const auto& p : d.ports) {
      const std::string port = base + "port/" + std::to_string(p.number) + "/";
      add(port + "state", p.state);
      add(port + "phys_state", p.physState);
      add(port + "link_layer", p.linkLayer);
      add(port + "rate", p.rate);
      if (p.rateGbps > 0) add(port + "rate_gbps", formatNumber(p.rateGbps));
      if (p.width > 0) add(port + "width", std::to_string(p.width));
      if (p.activeMtu > 0) add(port + "active_mtu", std::to_string(p.activeMtu));
      if (!p.lid.empty()) add(port + "lid", p.lid);
      for (const auto& g : p.gids) {
        std::string value = g.gid;
        if (!g.type.empty()) value += " " + g.type;
        if (!g.netdev.empty()) value += " " + g.netdev;
        add(port + "gid/" + std::to_string(g.index), value);
      }
    }
  }
  for (const auto& n : inv.interfaces) {
    const std::string base = "net/" + n.name + "/";
    add(base + "operstate", n.operstate);
    if (n.speedMbps >= 0) add(base + "speed_mbps", std::to_string(n.speedMbps));
    add(base + "mtu", std::to_string(n.mtu));
    add(base + "driver", n.driver);
    if (!n.driverVersion.empty()) add(base + "driver_version", n.driverVersion);
    add(base + "pci_address", n.pciAddress);
    add(base + "numa_node", std::to_string(n.numaNode));
    if (!n.rdmaDevice.empty()) add(base + "rdma_device", n.rdmaDevice);
  }
  for (const auto& g : inv.gpus) {
    const std::string base = "gpu/" + std::to_string(g.index) + "/";
    add(base + "model", g.model);
    add(base + "pci_address", g.pciAddress);
    add(base + "numa_node", std::to_string(g.numaNode));
  }
  for (const auto& a : inv.affinity)
    add("affinity/gpu" + std::to_string(a.gpu) + "/" + a.nic, a.relation + (a.closest ? " closest" : ""));
  const SoftwareVersions& v = inv.versions;
  add("version/fabscope", v.fabscope);
  add("version/mpi", v.mpi);
  add("version/ucx", v.ucx);
  add("version/nccl", v.nccl);
  add("version/cuda_runtime", v.cudaRuntime);
  add("version/cuda_driver", v.cudaDriver);
  add("version/nvidia_driver", v.nvidiaDriver);
  add("version/kernel", v.kernel);
  add("version/kernel_build", v.kernelBuild);
  add("version/os", v.os);
  for (const auto& d : inv.rdmaDevices) {
    for (const auto& p : d.ports)
      for (const auto& [key, value] : portQosFacts(p))
        add("qos/rdma/" + d.name + "/port/" + std::to_string(p.number) + "/" + key, value);
    for (const auto& [name, value] : d.firmwareQos) add("qos/rdma/" + d.name + "/firmware/" + name, value);
  }
  for (const auto& n : inv.interfaces)
    if (hasInterfaceQos(n))
      for (const auto& [key, value] : interfaceQosFacts(n.qos)) add("qos/net/" + n.name + "/" + key, value);
  add("qos/vendor_tool",
      inv.qosVendorTool.empty() ? "none (mlnx_qos, smpquery, mlxconfig not installed or not run)" : inv.qosVendorTool);
  for (const auto& [name, value] : inv.environment) add("env/" + name, value);
  for (std::size_t i = 0; i < inv.notes.size(); ++i) add("note/" + std::to_string(i), inv.notes[i]);
  return kv;
}

std::string toText(const HostInventory& inv) {
  std::ostringstream out;
  out << "host " << inv.hostname << "\n";
  out << "RDMA devices: " << (inv.rdmaDevices.empty() ? "none" : std::to_string(inv.rdmaDevices.size())) << "\n";
  for (const auto& d : inv.rdmaDevices) {
    out << "  " << d.name << "  fw " << d.firmware << "  " << (d.boardId.empty() ? d.hcaType : d.boardId) << "  pci "
        << d.pciAddress << "  numa " << d.numaNode << "\n";
    for (const auto& p : d.ports) {
      out << "    port " << p.number << "  " << p.state << "/" << p.physState << "  " << p.linkLayer << "  " << p.rate;
      if (p.activeMtu > 0) out << "  mtu " << p.activeMtu;
      int rocev2 = 0;
      for (const auto& g : p.gids) rocev2 += g.type == "RoCE v2";
      out << "  gids " << p.gids.size();
      if (rocev2 > 0) out << " (" << rocev2 << " RoCE v2)";
      out << "\n";
    }
  }
  out << "interfaces:\n";
  for (const auto& n : inv.interfaces) {
    out << "  " << n.name << "  " << n.operstate << "  mtu " << n.mtu << "  speed "
        << (n.speedMbps >= 0 ? std::to_string(n.speedMbps) + " Mb/s" : std::string("unknown"));
    if (!n.driver.empty()) out << "  driver " << n.driver << (n.driverVersion.empty() ? "" : " " + n.driverVersion);
    if (!n.pciAddress.empty()) out << "  pci " << n.pciAddress << "  numa " << n.numaNode;
    if (!n.rdmaDevice.empty()) out << "  rdma " << n.rdmaDevice;
    out << "\n";
  }
  out << "GPUs: " << (inv.gpus.empty() ? "none" : std::to_string(inv.gpus.size())) << "\n";
  for (const auto& g : inv.gpus) {
    out << "  " << g.index << "  " << g.model << "  pci " << g.pciAddress << "  numa " << g.numaNode;
    for (const auto& a : inv.affinity)
      if (a.gpu == g.index && a.closest) out << "  nearest NIC " << a.nic << " (" << a.relation << ")";
    out << "\n";
  }
  const SoftwareVersions& v = inv.versions;
  auto show = [&](const char* name, const std::string& value) {
    out << "  " << name << ": " << (value.empty() ? "-" : value) << "\n";
  };
  out << "versions:\n";
  show("fabscope", v.fabscope);
  show("mpi", v.mpi);
  show("ucx", v.ucx);
  show("nccl", v.nccl);
  show("cuda runtime", v.cudaRuntime);
  show("cuda driver", v.cudaDriver);
  show("nvidia driver", v.nvidiaDriver);
  show("kernel", v.kernel);
  show("os", v.os);
  out << "congestion control / QoS (vendor tool: " << (inv.qosVendorTool.empty() ? "none" : inv.qosVendorTool)
      << "):\n";
  for (const auto& n : inv.interfaces) {
    if (!hasInterfaceQos(n)) continue;
    out << "  " << n.name;
    for (const auto& [key, value] : interfaceQosFacts(n.qos))
      if (key.rfind("dcqcn/", 0) != 0) out << "  " << key << " " << value;
    out << "\n";
  }
  for (const auto& d : inv.rdmaDevices)
    for (const auto& p : d.ports) {
      out << "  " << d.name << "/" << p.number;
      for (const auto& [key, value] : portQosFacts(p))
        if (key != "cap_mask") out << "  " << key << " " << value;
      out << "\n";
    }
  for (const auto& d : inv.rdmaDevices) {
    if (d.firmwareQos.empty()) continue;
    out << "  " << d.name << " firmware (mlxconfig)";
    for (const auto& [name, value] : d.firmwareQos) out << "  " << name << " " << value;
    out << "\n";
  }
  if (!inv.environment.empty()) {
    out << "environment:\n";
    for (const auto& [name, value] : inv.environment) out << "  " << name << "=" << value << "\n";
  }
  if (!inv.notes.empty()) {
    out << "notes:\n";
    for (const auto& note : inv.notes) out << "  " << note << "\n";
  }
  return out.str();
}

}  // namespace fabscope::inventory
