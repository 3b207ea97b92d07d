#pragma once
// Network interfaces under <sys>/class/net.
#include <filesystem>
#include <vector>

#include "inventory/HostInventory.hpp"

namespace fabscope::inventory {

std::vector<NetInterface> readNetInterfaces(const std::filesystem::path& sysRoot);

// Fills NetInterface::rdmaDevice from each RDMA device's netdev list.
void linkInterfacesToRdmaDevices(std::vector<NetInterface>& interfaces, const std::vector<RdmaDevice>& devices);

}  // namespace fabscope::inventory
