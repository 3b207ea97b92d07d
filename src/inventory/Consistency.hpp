#pragma once
// Differences between hosts that usually mean trouble: firmware/driver/library
// versions, MTU, ports below their peers' rate or width, ports down, the wrong
// link layer for the intended fabric, ranks bound to a NIC far from their GPU.
#include <string>
#include <vector>

#include "inventory/HostInventory.hpp"

namespace fabscope::inventory {

enum class Severity { info, warning, error };
std::string severityName(Severity severity);

struct ConsistencyFlag {
  Severity severity = Severity::warning;
  std::string host;
  std::string component;  // "rdma/mlx5_0/fw_ver", "net/eth1/mtu", "version/ucx", "rank/3/binding"
  std::string what;       // one sentence for the summary
  std::string expected;   // what the peers have (most hosts; ties go to the earliest host)
  std::string found;
};

// The GPU<->NIC binding a rank actually ran with.
struct RankBinding {
  int rank = 0;
  std::string host;
  int gpu = -1;     // -1: no GPU
  std::string nic;  // interface or RDMA device name, "" when unbound
};

struct ConsistencyOptions {
  std::string intendedProtocol;  // "ib", "roce", "tcp" or "" (no link-layer check)
  std::vector<RankBinding> bindings;
};

std::vector<ConsistencyFlag> checkConsistency(const std::vector<HostInventory>& hosts,
                                              const ConsistencyOptions& options);

}  // namespace fabscope::inventory
