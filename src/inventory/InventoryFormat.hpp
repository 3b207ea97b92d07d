#pragma once
// The inventory as JSON (fabscope inventory --json), as flat key/value rows
// (the /hosts/<host>/inventory table) and as text for a terminal.
#include <string>
#include <utility>
#include <vector>

#include "inventory/HostInventory.hpp"
#include "inventory/JsonWriter.hpp"

namespace fabscope::inventory {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

std::string toJson(const HostInventory& inventory, int indent = 2);

// Writes one inventory object into a document being built (for arrays of hosts).
void writeJson(JsonWriter& writer, const HostInventory& inventory);

// Keys are paths: "host/name", "rdma/mlx5_0/fw_ver", "rdma/mlx5_0/port/1/rate_gbps",
// "rdma/mlx5_0/port/1/gid/3", "net/eth0/mtu", "gpu/0/model", "affinity/gpu0/mlx5_0",
// "version/ucx", "env/NCCL_IB_HCA", "note/0". Unknown numbers are left out.
KeyValues toKeyValues(const HostInventory& inventory);

std::string toText(const HostInventory& inventory);

}  // namespace fabscope::inventory
