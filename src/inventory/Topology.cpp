#include "inventory/Topology.hpp"

#include <fnmatch.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "inventory/YamlChecks.hpp"

namespace fabscope::inventory {

TopologyError::TopologyError(const std::string& file, int line, int column, const std::string& problem)
    : std::runtime_error(file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + problem) {}

TopologyFile parseTopology(const std::string& text, const std::string& file) {
  YamlReader reader(file);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    reader.fail<TopologyError>(e.mark, "YAML syntax error: " + e.msg);
  }
  if (!root.IsMap())
    reader.fail<TopologyError>(root.Mark(), "expected a mapping with key 'hosts', found " + describeNodeType(root));
  if (auto unknown = firstUnknownKey(root, {"hosts"}))
    reader.fail<TopologyError>(unknown->Mark(), "unknown key '" + unknown->Scalar() + "' (expected: hosts)");
  const YAML::Node hosts = root["hosts"];
  if (!hosts || !hosts.IsMap())
    reader.fail<TopologyError>(hosts ? hosts.Mark() : root.Mark(), "'hosts' must map host names to {site, pod, leaf}");
  TopologyFile topology;
  topology.file = file;
  const std::vector<std::string> keys = {"site", "pod", "leaf"};
  for (const auto& entry : hosts) {
    const std::string host = entry.first.Scalar();
    const YAML::Node fields = entry.second;
    if (!fields.IsMap())
      reader.fail<TopologyError>(
          entry.first.Mark(), "host '" + host + "' must map to {site, pod, leaf}, found " + describeNodeType(fields));
    if (auto unknown = firstUnknownKey(fields, keys))
      reader.fail<TopologyError>(unknown->Mark(), "unknown key '" + unknown->Scalar() + "' for host '" + host +
                                                      "' (expected one of: " + joinNames(keys) + ")");
    TopologyLabel label;
    label.source = "file";
    for (const auto& key : keys) {
      if (!fields[key]) continue;
      if (!fields[key].IsScalar())
        reader.fail<TopologyError>(fields[key].Mark(), "'" + key + "' of host '" + host + "' must be a name");
      (key == "site" ? label.site : key == "pod" ? label.pod : label.leaf) = fields[key].Scalar();
    }
    topology.entries.emplace_back(host, label);
  }
  return topology;
}

TopologyFile loadTopologyFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw TopologyError(path.string(), 0, 0, "cannot open the topology file");
  std::ostringstream text;
  text << in.rdbuf();
  return parseTopology(text.str(), path.string());
}

std::optional<TopologyLabel> lookupTopology(const TopologyFile& topology, const std::string& host) {
  for (const auto& [name, label] : topology.entries)
    if (name == host) return label;
  for (const auto& [name, label] : topology.entries)
    if (fnmatch(name.c_str(), host.c_str(), 0) == 0) return label;
  return std::nullopt;
}

namespace {
std::vector<std::string> splitDots(const std::string& text) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, '.')) parts.push_back(part);
  return parts;
}
}  // namespace

std::optional<TopologyLabel> labelFromSlurm(const std::string& address, const std::string& pattern) {
  const auto names = splitDots(address);
  const auto kinds = splitDots(pattern);
  if (names.empty() || names.size() != kinds.size()) return std::nullopt;
  std::vector<std::string> switches;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (kinds[i] == "switch") switches.push_back(names[i]);
  if (switches.empty()) return std::nullopt;
  TopologyLabel label;
  label.source = "slurm";
  label.leaf = switches.back();
  if (switches.size() >= 2) label.pod = switches[switches.size() - 2];
  if (switches.size() >= 3) label.site = switches.front();
  return label;
}

TopologyLabel topologyForHost(const std::string& host, const TopologyFile* topology,
                              const std::vector<std::string>& environment) {
  if (topology)
    if (auto label = lookupTopology(*topology, host)) return *label;
  std::string address, pattern;
  for (const auto& entry : environment) {
    if (entry.rfind("SLURM_TOPOLOGY_ADDR=", 0) == 0)
      address = entry.substr(20);
    else if (entry.rfind("SLURM_TOPOLOGY_ADDR_PATTERN=", 0) == 0)
      pattern = entry.substr(28);
  }
  if (!address.empty() && !pattern.empty())
    if (auto label = labelFromSlurm(address, pattern)) return *label;
  return {};
}

std::vector<std::string> sitesOf(const std::vector<TopologyLabel>& labels) {
  std::set<std::string> sites;
  for (const auto& label : labels)
    if (!label.site.empty()) sites.insert(label.site);
  return {sites.begin(), sites.end()};
}

bool spansSites(const std::vector<TopologyLabel>& labels) { return sitesOf(labels).size() > 1; }

}  // namespace fabscope::inventory
