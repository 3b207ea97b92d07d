#pragma once
// RDMA devices as the kernel shows them under <sys>/class/infiniband.
#include <filesystem>
#include <string>
#include <vector>

#include "inventory/HostInventory.hpp"

namespace fabscope::inventory {

struct ParsedRate {
  double gbps = 0;
  int width = 0;
  std::string speedName;
};

// "200 Gb/sec (4X HDR)" -> {200, 4, "HDR"}; fields stay 0/"" where the text has none.
ParsedRate parseRate(const std::string& rateText);

// "4: ACTIVE" -> "ACTIVE"; text without a number prefix comes back trimmed.
std::string stripStateNumber(const std::string& text);

std::vector<RdmaDevice> readRdmaDevicesFromSysfs(const std::filesystem::path& sysRoot);

}  // namespace fabscope::inventory
