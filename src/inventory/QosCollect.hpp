#pragma once
// The QoS step of collectHostInventory (see Qos.hpp for what is read).
#include <string>

#include "inventory/HostInventory.hpp"

namespace fabscope::inventory {

// Fills RdmaPort::qos of every port and NetInterface::qos of the fabric
// interfaces (those with an RDMA device or a driver; not lo, veth, bridges).
void collectQos(HostInventory& inventory, const InventoryOptions& options);

// Full path of an executable found on PATH, "" if none.
std::string findExecutable(const std::string& name);

}  // namespace fabscope::inventory
