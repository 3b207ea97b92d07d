#pragma once
// Where a host sits: site, pod and leaf switch. From an optional topology
// file or from Slurm's SLURM_TOPOLOGY_ADDR. Results between sites are never
// mixed with results inside one (a WAN path is not a cluster fabric).
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fabscope::inventory {

struct TopologyLabel {
  std::string site;  // "" when unknown
  std::string pod;
  std::string leaf;
  std::string source;  // "file", "slurm" or "" (nothing known)
};

class TopologyError : public std::runtime_error {
 public:
  TopologyError(const std::string& file, int line, int column, const std::string& problem);
};

// YAML:  hosts:
//          node01: {site: dc1, pod: p1, leaf: leaf01}
//          "gpu-a-*": {site: dc1, pod: a}      # glob patterns, tried after exact names
struct TopologyFile {
  std::string file;
  std::vector<std::pair<std::string, TopologyLabel>> entries;  // in file order
};

TopologyFile loadTopologyFile(const std::filesystem::path& path);
TopologyFile parseTopology(const std::string& text, const std::string& file);

// Exact name first, then the first matching pattern.
std::optional<TopologyLabel> lookupTopology(const TopologyFile& topology, const std::string& host);

// SLURM_TOPOLOGY_ADDR="core1.leaf3.node12" with pattern "switch.switch.node":
// the switch right above the node is the leaf, the one above it the pod, and
// with three or more switch levels the topmost is the site.
std::optional<TopologyLabel> labelFromSlurm(const std::string& address, const std::string& pattern);

// The file's answer when it knows the host, else Slurm's (from "NAME=VALUE"
// environment entries), else an empty label.
TopologyLabel topologyForHost(const std::string& host, const TopologyFile* topology,
                              const std::vector<std::string>& environment);

// Distinct non-empty sites of the given labels, sorted.
std::vector<std::string> sitesOf(const std::vector<TopologyLabel>& labels);

// True when the labels name more than one site (e.g. a TP group across a WAN).
bool spansSites(const std::vector<TopologyLabel>& labels);

}  // namespace fabscope::inventory
