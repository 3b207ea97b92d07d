#include "inventory/FabricEnvironment.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>

#include "inventory/LauncherVariables.hpp"

namespace fabscope::inventory {

bool isFabricVariable(const std::string& name) {
  // FABSCOPE_EMULATED_*: an emulated host's configured link rates (launch/emulated-cluster-rsh),
  // the line rate its bandwidth is a share of; a veth's own speed says nothing about them.
  static const char* const prefixes[] = {"NCCL_", "UCX_", "OMPI_", "SLURM_", "FABSCOPE_EMULATED_"};
  for (const char* prefix : prefixes)
    if (name.rfind(prefix, 0) == 0) return true;
  return name == "CUDA_VISIBLE_DEVICES";
}

bool looksSecret(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  static const char* const markers[] = {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "JWT", "AUTH", "KEY"};
  for (const char* marker : markers)
    if (upper.find(marker) != std::string::npos) return true;
  return false;
}

bool isLauncherVariable(const std::string& name) {
  // fnmatch without flags is Python's fnmatch.fnmatchcase for these globs (* ? only).
  return std::any_of(kLauncherVariablePatterns.begin(), kLauncherVariablePatterns.end(),
                     [&](const char* pattern) { return ::fnmatch(pattern, name.c_str(), 0) == 0; });
}

std::vector<std::pair<std::string, std::string>> fabricEnvironment(const std::vector<std::string>& environment) {
  std::vector<std::pair<std::string, std::string>> kept;
  for (const auto& entry : environment) {
    auto equals = entry.find('=');
    if (equals == std::string::npos || equals == 0) continue;
    std::string name = entry.substr(0, equals);
    // Per-job and per-rank launcher values differ between any two hosts and any two
    // runs: recording them would make every host look inconsistent.
    if (!isFabricVariable(name) || looksSecret(name) || isLauncherVariable(name)) continue;
    kept.emplace_back(std::move(name), entry.substr(equals + 1));
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

}  // namespace fabscope::inventory
