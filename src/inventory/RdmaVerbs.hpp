#pragma once
// RDMA devices as libibverbs reports them. Adds what sysfs does not show
// (active MTU) and confirms the devices user space can really open.
#include <string>
#include <vector>

#include "inventory/HostInventory.hpp"

namespace fabscope::inventory {

struct VerbsPortInfo {
  int number = 0;
  int stateCode = 0;        // enum ibv_port_state
  int activeMtuCode = 0;    // enum ibv_mtu
  int activeWidthCode = 0;  // IBV width bit: 1=1X 2=4X 4=8X 8=12X 16=2X
  int activeSpeedCode = 0;  // IBV speed bit: 1=SDR ... 128=NDR
  int linkLayerCode = 0;    // IBV_LINK_LAYER_*: 0 unspecified, 1 InfiniBand, 2 Ethernet
  int lid = 0;
};

struct VerbsDeviceInfo {
  std::string name;
  std::string firmware;
  std::string nodeGuid;  // formatted like sysfs: 0c42:a103:0012:3456
  std::vector<VerbsPortInfo> ports;
};

struct VerbsQuery {
  std::vector<VerbsDeviceInfo> devices;
  std::vector<std::string> notes;  // devices that could not be opened or queried
};

// Empty (with a note) when this build has no libibverbs or no device exists.
VerbsQuery queryVerbsDevices();

// Adds verbs facts to the sysfs view (matched by device name); devices only
// verbs knows are appended.
void mergeVerbsDevices(std::vector<RdmaDevice>& devices, const std::vector<VerbsDeviceInfo>& verbsDevices);

// Code conversions of the ibv_* enums; 0 / "" for codes they do not know.
int ibvMtuBytes(int mtuCode);
int ibvWidthLanes(int widthCode);
double ibvLaneGbps(int speedCode);
std::string ibvSpeedName(int speedCode);
std::string ibvPortStateName(int stateCode);
std::string ibvLinkLayerName(int linkLayerCode);

}  // namespace fabscope::inventory
