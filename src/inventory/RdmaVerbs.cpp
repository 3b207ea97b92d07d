#include "inventory/RdmaVerbs.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "fabscope/BuildConfig.hpp"

#if FABSCOPE_HAVE_VERBS
#include <endian.h>
#include <infiniband/verbs.h>
#endif

namespace fabscope::inventory {

int ibvMtuBytes(int mtuCode) {
  switch (mtuCode) {
    case 1:
      return 256;
    case 2:
      return 512;
    case 3:
      return 1024;
    case 4:
      return 2048;
    case 5:
      return 4096;
    default:
      return 0;
  }
}

int ibvWidthLanes(int widthCode) {
  switch (widthCode) {
    case 1:
      return 1;
    case 2:
      return 4;
    case 4:
      return 8;
    case 8:
      return 12;
    case 16:
      return 2;
    default:
      return 0;
  }
}

// Per-lane data rates as the kernel's rate file prints them.
double ibvLaneGbps(int speedCode) {
  switch (speedCode) {
    case 1:
      return 2.5;
    case 2:
      return 5.0;
    case 4:
      return 10.0;
    case 8:
      return 10.0;  // FDR10
    case 16:
      return 14.0;
    case 32:
      return 25.0;
    case 64:
      return 50.0;
    case 128:
      return 100.0;
    case 256:
      return 200.0;
    default:
      return 0.0;
  }
}

std::string ibvSpeedName(int speedCode) {
  switch (speedCode) {
    case 1:
      return "SDR";
    case 2:
      return "DDR";
    case 4:
      return "QDR";
    case 8:
      return "FDR10";
    case 16:
      return "FDR";
    case 32:
      return "EDR";
    case 64:
      return "HDR";
    case 128:
      return "NDR";
    case 256:
      return "XDR";
    default:
      return "";
  }
}

std::string ibvPortStateName(int stateCode) {
  switch (stateCode) {
    case 1:
      return "DOWN";
    case 2:
      return "INIT";
    case 3:
      return "ARMED";
    case 4:
      return "ACTIVE";
    case 5:
      return "ACTIVE_DEFER";
    default:
      return "";
  }
}

std::string ibvLinkLayerName(int linkLayerCode) {
  switch (linkLayerCode) {
    case 0:  // unspecified means InfiniBand for old drivers
    case 1:
      return "InfiniBand";
    case 2:
      return "Ethernet";
    default:
      return "";
  }
}

void mergeVerbsDevices(std::vector<RdmaDevice>& devices, const std::vector<VerbsDeviceInfo>& verbsDevices) {
  for (const auto& verbs : verbsDevices) {
    auto found =
        std::find_if(devices.begin(), devices.end(), [&](const RdmaDevice& d) { return d.name == verbs.name; });
    if (found == devices.end()) {
      RdmaDevice added;
      added.name = verbs.name;
      added.source = "verbs";
      devices.push_back(std::move(added));
      found = devices.end() - 1;
    } else {
      found->source = "sysfs+verbs";
    }
    RdmaDevice& device = *found;
    if (device.firmware.empty()) device.firmware = verbs.firmware;
    if (device.nodeGuid.empty()) device.nodeGuid = verbs.nodeGuid;
    for (const auto& verbsPort : verbs.ports) {
      auto port = std::find_if(device.ports.begin(), device.ports.end(),
                               [&](const RdmaPort& p) { return p.number == verbsPort.number; });
      if (port == device.ports.end()) {
        RdmaPort added;
        added.number = verbsPort.number;
        device.ports.push_back(std::move(added));
        port = device.ports.end() - 1;
      }
      if (ibvMtuBytes(verbsPort.activeMtuCode) > 0) port->activeMtu = ibvMtuBytes(verbsPort.activeMtuCode);
      if (port->state.empty()) port->state = ibvPortStateName(verbsPort.stateCode);
      if (port->linkLayer.empty()) port->linkLayer = ibvLinkLayerName(verbsPort.linkLayerCode);
      if (port->width == 0) port->width = ibvWidthLanes(verbsPort.activeWidthCode);
      if (port->speedName.empty()) port->speedName = ibvSpeedName(verbsPort.activeSpeedCode);
      if (port->rateGbps == 0) port->rateGbps = port->width * ibvLaneGbps(verbsPort.activeSpeedCode);
      if (port->lid.empty() && verbsPort.lid != 0) {
        char lid[16];
        std::snprintf(lid, sizeof lid, "0x%x", verbsPort.lid);
        port->lid = lid;
      }
    }
    std::sort(device.ports.begin(), device.ports.end(),
              [](const RdmaPort& a, const RdmaPort& b) { return a.number < b.number; });
  }
}

#if FABSCOPE_HAVE_VERBS

namespace {

struct DeviceListDeleter {
  void operator()(ibv_device** list) const { ibv_free_device_list(list); }
};
struct ContextCloser {
  void operator()(ibv_context* context) const { ibv_close_device(context); }
};

std::string formatGuid(__be64 guidBigEndian) {
  std::uint64_t guid = be64toh(guidBigEndian);
  char text[24];
  std::snprintf(text, sizeof text, "%04x:%04x:%04x:%04x", static_cast<unsigned>((guid >> 48) & 0xffff),
                static_cast<unsigned>((guid >> 32) & 0xffff), static_cast<unsigned>((guid >> 16) & 0xffff),
                static_cast<unsigned>(guid & 0xffff));
  return text;
}

}  // namespace

VerbsQuery queryVerbsDevices() {
  VerbsQuery result;
  int count = 0;
  errno = 0;
  std::unique_ptr<ibv_device*, DeviceListDeleter> list(ibv_get_device_list(&count));
  if (!list) {
    // ENOSYS: the kernel has no RDMA support at all; that means "no devices", not a failure.
    const int error = errno;
    result.notes.push_back(error == ENOSYS ? std::string("verbs: no RDMA support in this kernel")
                                           : std::string("verbs: ibv_get_device_list failed: ") + std::strerror(error));
    return result;
  }
  for (int i = 0; i < count; ++i) {
    ibv_device* device = list.get()[i];
    const std::string name = ibv_get_device_name(device);
    std::unique_ptr<ibv_context, ContextCloser> context(ibv_open_device(device));
    if (!context) {
      result.notes.push_back("verbs: cannot open " + name + ": " + std::strerror(errno));
      continue;
    }
    ibv_device_attr attr{};
    if (int rc = ibv_query_device(context.get(), &attr); rc != 0) {
      result.notes.push_back("verbs: ibv_query_device(" + name + ") failed: " + std::strerror(rc));
      continue;
    }
    VerbsDeviceInfo info;
    info.name = name;
    info.firmware = attr.fw_ver;
    info.nodeGuid = formatGuid(attr.node_guid);
    for (int port = 1; port <= attr.phys_port_cnt; ++port) {
      ibv_port_attr portAttr{};
      if (int rc = ibv_query_port(context.get(), static_cast<std::uint8_t>(port), &portAttr); rc != 0) {
        result.notes.push_back("verbs: ibv_query_port(" + name + ", " + std::to_string(port) +
                               ") failed: " + std::strerror(rc));
        continue;
      }
      VerbsPortInfo portInfo;
      portInfo.number = port;
      portInfo.stateCode = portAttr.state;
      portInfo.activeMtuCode = portAttr.active_mtu;
      portInfo.activeWidthCode = portAttr.active_width;
      portInfo.activeSpeedCode = portAttr.active_speed;
      portInfo.linkLayerCode = portAttr.link_layer;
      portInfo.lid = portAttr.lid;
      info.ports.push_back(portInfo);
    }
    result.devices.push_back(std::move(info));
  }
  return result;
}

#else

VerbsQuery queryVerbsDevices() {
  VerbsQuery result;
  result.notes.push_back("verbs: not built with libibverbs; RDMA devices from sysfs only");
  return result;
}

#endif

}  // namespace fabscope::inventory
