#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "inventory/Manifest.hpp"
#include "inventory/YamlChecks.hpp"

namespace fabscope::inventory {

ManifestError::ManifestError(const std::string& file, int line, int column, const std::string& problem)
    : std::runtime_error(file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + problem),
      line_(line),
      column_(column) {}

namespace {

const std::vector<std::string> kTopKeys = {"manifest_version", "name", "fabric", "adapters", "software", "qos"};
const std::vector<std::string> kQosKeys = {"interfaces",    "pfc_priorities", "trust",      "roce_tc",   "ecn_np",
                                           "ecn_rp",        "dscp_map",       "roce_mode",  "ib_sl",     "ib_vlarb_low",
                                           "ib_vlarb_high", "ib_sl2vl",       "validation", "must_match"};
const std::vector<std::string> kQosItemKeys = {"value", "validation", "must_match"};
const std::vector<std::string> kFabricKeys = {"protocol", "rate_gbps",  "width",      "mtu",
                                              "rdma_mtu", "interfaces", "validation", "must_match"};
const std::vector<std::string> kAdapterKeys = {"model",          "firmware",   "driver",
                                               "driver_version", "validation", "must_match"};
const std::vector<std::string> kSoftwareNames = {"mpi",         "ucx",           "nccl",   "cuda_runtime",
                                                 "cuda_driver", "nvidia_driver", "kernel", "os"};
const std::vector<std::string> kSoftwareKeys = {"version", "validation", "must_match"};

class ManifestParser {
 public:
  explicit ManifestParser(std::string file) : reader_(std::move(file)) {}

  Manifest parse(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      reader_.fail<ManifestError>(e.mark, "YAML syntax error: " + e.msg);
    }
    Manifest manifest;
    manifest.file = reader_.file();
    if (!root.IsMap())
      fail(root.Mark(), "expected a mapping with keys " + joinNames(kTopKeys) + ", found " + describeNodeType(root));
    requireKnownKeys(root, kTopKeys, "the manifest");
    if (root["manifest_version"]) {
      int version = integer(root["manifest_version"], "manifest_version");
      if (version != 1)
        fail(root["manifest_version"].Mark(),
             "manifest_version " + std::to_string(version) + " is not supported (expected 1)");
    }
    if (root["name"]) manifest.name = scalar(root["name"], "name");
    if (root["fabric"]) manifest.fabric = fabric(root["fabric"]);
    if (root["adapters"]) {
      const YAML::Node list = root["adapters"];
      if (!list.IsSequence())
        fail(list.Mark(), "'adapters' must be a list of adapter entries, found " + describeNodeType(list));
      for (const auto& entry : list) manifest.adapters.push_back(adapter(entry));
    }
    if (root["software"]) manifest.software = software(root["software"]);
    if (root["qos"]) manifest.qos = qos(root["qos"]);
    return manifest;
  }

 private:
  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& problem) const {
    reader_.fail<ManifestError>(mark, problem);
  }

  void requireKnownKeys(const YAML::Node& map, const std::vector<std::string>& allowed, const std::string& where) {
    if (auto unknown = firstUnknownKey(map, allowed))
      fail(unknown->Mark(), "unknown key '" + (unknown->IsScalar() ? unknown->Scalar() : std::string("?")) + "' in " +
                                where + " (expected one of: " + joinNames(allowed) + ")");
  }

  std::string scalar(const YAML::Node& node, const std::string& key) {
    if (!node.IsScalar()) fail(node.Mark(), "'" + key + "' must be a single value, found " + describeNodeType(node));
    return node.Scalar();
  }

  double number(const YAML::Node& node, const std::string& key) {
    const std::string text = scalar(node, key);
    try {
      std::size_t used = 0;
      double value = std::stod(text, &used);
      if (used == text.size() && std::isfinite(value) && value > 0) return value;
    } catch (const std::exception&) {
    }
    fail(node.Mark(), "'" + key + "' must be a positive number, found '" + text + "'");
  }

  int integer(const YAML::Node& node, const std::string& key) {
    const std::string text = scalar(node, key);
    try {
      std::size_t used = 0;
      long value = std::stol(text, &used);
      if (used == text.size() && value > 0 && value < (1L << 30)) return static_cast<int>(value);
    } catch (const std::exception&) {
    }
    fail(node.Mark(), "'" + key + "' must be a positive integer, found '" + text + "'");
  }

  bool boolean(const YAML::Node& node, const std::string& key) {
    const std::string text = scalar(node, key);
    if (text == "true" || text == "yes") return true;
    if (text == "false" || text == "no") return false;
    fail(node.Mark(), "'" + key + "' must be true or false, found '" + text + "'");
  }

  Expectation expectation(const YAML::Node& map) {
    Expectation result;
    result.line = map.Mark().line + 1;
    if (map["validation"]) {
      result.validation = scalar(map["validation"], "validation");
      if (result.validation != "vendor-validated" && result.validation != "site-integrated")
        fail(map["validation"].Mark(),
             "'validation' must be vendor-validated or site-integrated, found '" + result.validation + "'");
    }
    if (map["must_match"]) result.mustMatch = boolean(map["must_match"], "must_match");
    return result;
  }

  FabricIntent fabric(const YAML::Node& node) {
    if (!node.IsMap())
      fail(node.Mark(),
           "'fabric' must be a mapping with keys " + joinNames(kFabricKeys) + ", found " + describeNodeType(node));
    requireKnownKeys(node, kFabricKeys, "'fabric'");
    FabricIntent intent;
    if (!node["protocol"]) fail(node.Mark(), "'fabric' needs a 'protocol' (ib, roce or tcp)");
    intent.protocol = scalar(node["protocol"], "protocol");
    if (intent.protocol != "ib" && intent.protocol != "roce" && intent.protocol != "tcp")
      fail(node["protocol"].Mark(), "'protocol' must be ib, roce or tcp, found '" + intent.protocol + "'");
    if (node["rate_gbps"]) intent.rateGbps = number(node["rate_gbps"], "rate_gbps");
    if (node["width"]) intent.width = integer(node["width"], "width");
    if (node["mtu"]) intent.mtu = integer(node["mtu"], "mtu");
    if (node["rdma_mtu"]) {
      intent.rdmaMtu = integer(node["rdma_mtu"], "rdma_mtu");
      const int m = *intent.rdmaMtu;
      if (m != 256 && m != 512 && m != 1024 && m != 2048 && m != 4096)
        fail(node["rdma_mtu"].Mark(), "'rdma_mtu' must be 256, 512, 1024, 2048 or 4096, found " + std::to_string(m));
    }
    if (node["interfaces"]) {
      const YAML::Node list = node["interfaces"];
      if (!list.IsSequence())
        fail(list.Mark(), "'interfaces' must be a list of interface names, found " + describeNodeType(list));
      for (const auto& item : list) intent.interfaces.push_back(scalar(item, "interfaces"));
    }
    intent.expectation = expectation(node);
    return intent;
  }

  AdapterIntent adapter(const YAML::Node& node) {
    if (!node.IsMap())
      fail(node.Mark(), "an adapter entry must be a mapping with keys " + joinNames(kAdapterKeys) + ", found " +
                            describeNodeType(node));
    requireKnownKeys(node, kAdapterKeys, "an adapter entry");
    AdapterIntent intent;
    if (!node["model"]) fail(node.Mark(), "an adapter entry needs a 'model' (board_id or hca_type)");
    intent.model = scalar(node["model"], "model");
    if (node["firmware"]) intent.firmware = scalar(node["firmware"], "firmware");
    if (node["driver"]) intent.driver = scalar(node["driver"], "driver");
    if (node["driver_version"]) intent.driverVersion = scalar(node["driver_version"], "driver_version");
    intent.expectation = expectation(node);
    return intent;
  }

  std::vector<SoftwareIntent> software(const YAML::Node& node) {
    if (!node.IsMap())
      fail(node.Mark(),
           "'software' must be a mapping of " + joinNames(kSoftwareNames) + ", found " + describeNodeType(node));
    requireKnownKeys(node, kSoftwareNames, "'software'");
    std::vector<SoftwareIntent> result;
    for (const auto& entry : node) {
      SoftwareIntent intent;
      intent.name = entry.first.Scalar();
      const YAML::Node value = entry.second;
      if (value.IsScalar()) {
        intent.version = value.Scalar();
        intent.expectation.line = value.Mark().line + 1;
      } else if (value.IsMap()) {
        requireKnownKeys(value, kSoftwareKeys, "'software." + intent.name + "'");
        if (!value["version"]) fail(value.Mark(), "'software." + intent.name + "' needs a 'version'");
        intent.version = scalar(value["version"], "version");
        intent.expectation = expectation(value);
      } else {
        fail(value.Mark().line >= 0 ? value.Mark() : entry.first.Mark(),
             "'software." + intent.name + "' must be a version or a mapping with keys " + joinNames(kSoftwareKeys) +
                 ", found " + describeNodeType(value));
      }
      if (intent.version.empty()) fail(entry.first.Mark(), "'software." + intent.name + "' has an empty version");
      result.push_back(std::move(intent));
    }
    return result;
  }

  int rangedInteger(const YAML::Node& node, const std::string& key, int low, int high) {
    const std::string text = scalar(node, key);
    try {
      std::size_t used = 0;
      long value = std::stol(text, &used);
      if (used == text.size() && value >= low && value <= high) return static_cast<int>(value);
    } catch (const std::exception&) {
    }
    fail(node.Mark(), "'" + key + "' must be an integer from " + std::to_string(low) + " to " + std::to_string(high) +
                          ", found '" + text + "'");
  }

  // [3, 4] -> "3,4", [] -> "none": the inventory's priorityList text.
  std::string priorityList(const YAML::Node& node, const std::string& key) {
    if (!node.IsSequence())
      fail(node.Mark(),
           "'" + key + "' must be a list of priorities 0..7 (e.g. [3]; [] for none), found " + describeNodeType(node));
    int mask = 0;
    for (const auto& item : node) mask |= 1 << rangedInteger(item, key, 0, 7);
    std::string text;
    for (int p = 0; p < 8; ++p)
      if (mask & (1 << p)) text += (text.empty() ? "" : ",") + std::to_string(p);
    return text.empty() ? "none" : text;
  }

  // {26: 3, 48: 6} -> "26:3,48:6", ordered by DSCP.
  std::string dscpMap(const YAML::Node& node) {
    if (!node.IsMap() || node.size() == 0)
      fail(node.Mark(),
           "'dscp_map' must map DSCP values to priorities (e.g. {26: 3}), found " + describeNodeType(node));
    std::map<int, int> map;
    for (const auto& entry : node)
      map[rangedInteger(entry.first, "dscp_map key (DSCP)", 0, 63)] =
          rangedInteger(entry.second, "dscp_map priority", 0, 7);
    std::string text;
    for (const auto& [dscp, priority] : map)
      text += (text.empty() ? "" : ",") + std::to_string(dscp) + ":" + std::to_string(priority);
    return text;
  }

  // {VL: weight} -> "0:32,1:32" (sorted by VL), {} -> "none".
  std::string vlWeights(const YAML::Node& node, const std::string& key) {
    if (!node.IsMap())
      fail(node.Mark(), "'" + key + "' must map VLs to their total weight (e.g. {0: 32, 1: 32}; {} for none), found " +
                            describeNodeType(node));
    std::map<int, int> map;
    for (const auto& entry : node)
      map[rangedInteger(entry.first, key + " key (VL)", 0, 14)] =
          rangedInteger(entry.second, key + " weight", 1, 255 * 64);
    std::string text;
    for (const auto& [vl, weight] : map)
      text += (text.empty() ? "" : ",") + std::to_string(vl) + ":" + std::to_string(weight);
    return text.empty() ? "none" : text;
  }

  // [VL of SL 0, ..., VL of SL 15] -> "0,1,...".
  std::string slToVl(const YAML::Node& node) {
    if (!node.IsSequence() || node.size() != 16)
      fail(node.Mark(), "'ib_sl2vl' must list the VL of each of the 16 SLs (e.g. [0, 1, 2, 3, 0, ...]), found " +
                            describeNodeType(node) + (node.IsSequence() ? " of " + std::to_string(node.size()) : ""));
    std::string text;
    for (const auto& vl : node)
      text += (text.empty() ? "" : ",") + std::to_string(rangedInteger(vl, "ib_sl2vl entry (VL)", 0, 15));
    return text;
  }

  // An item is its value, or {value: ..., must_match: ..., validation: ...}.
  template <typename Parse>
  std::optional<QosItem> qosItem(const YAML::Node& section, const std::string& key, const Expectation& defaults,
                                 Parse parse) {
    const YAML::Node node = section[key];
    if (!node) return std::nullopt;
    QosItem item;
    item.expectation = defaults;
    item.expectation.line = node.Mark().line + 1;
    if (node.IsMap() && node["value"]) {
      requireKnownKeys(node, kQosItemKeys, "'qos." + key + "'");
      Expectation own = expectation(node);
      if (node["validation"]) item.expectation.validation = own.validation;
      if (node["must_match"]) item.expectation.mustMatch = own.mustMatch;
      item.value = parse(node["value"]);
    } else {
      item.value = parse(node);
    }
    return item;
  }

  QosIntent qos(const YAML::Node& node) {
    if (!node.IsMap())
      fail(node.Mark(),
           "'qos' must be a mapping with keys " + joinNames(kQosKeys) + ", found " + describeNodeType(node));
    requireKnownKeys(node, kQosKeys, "'qos'");
    QosIntent intent;
    intent.expectation = expectation(node);
    const Expectation& e = intent.expectation;
    if (node["interfaces"]) {
      const YAML::Node list = node["interfaces"];
      if (!list.IsSequence())
        fail(list.Mark(), "'interfaces' must be a list of interface names, found " + describeNodeType(list));
      for (const auto& item : list) intent.interfaces.push_back(scalar(item, "interfaces"));
    }
    intent.pfcPriorities =
        qosItem(node, "pfc_priorities", e, [&](const YAML::Node& n) { return priorityList(n, "pfc_priorities"); });
    intent.ecnNp = qosItem(node, "ecn_np", e, [&](const YAML::Node& n) { return priorityList(n, "ecn_np"); });
    intent.ecnRp = qosItem(node, "ecn_rp", e, [&](const YAML::Node& n) { return priorityList(n, "ecn_rp"); });
    intent.trust = qosItem(node, "trust", e, [&](const YAML::Node& n) {
      std::string value = scalar(n, "trust");
      if (value != "dscp" && value != "pcp") fail(n.Mark(), "'trust' must be dscp or pcp, found '" + value + "'");
      return value;
    });
    intent.roceTc = qosItem(node, "roce_tc", e,
                            [&](const YAML::Node& n) { return std::to_string(rangedInteger(n, "roce_tc", 0, 255)); });
    intent.ibSl = qosItem(node, "ib_sl", e,
                          [&](const YAML::Node& n) { return std::to_string(rangedInteger(n, "ib_sl", 0, 15)); });
    intent.ibVlArbLow =
        qosItem(node, "ib_vlarb_low", e, [&](const YAML::Node& n) { return vlWeights(n, "ib_vlarb_low"); });
    intent.ibVlArbHigh =
        qosItem(node, "ib_vlarb_high", e, [&](const YAML::Node& n) { return vlWeights(n, "ib_vlarb_high"); });
    intent.ibSl2vl = qosItem(node, "ib_sl2vl", e, [&](const YAML::Node& n) { return slToVl(n); });
    intent.dscpMap = qosItem(node, "dscp_map", e, [&](const YAML::Node& n) { return dscpMap(n); });
    intent.roceMode = qosItem(node, "roce_mode", e, [&](const YAML::Node& n) {
      std::string value = scalar(n, "roce_mode");
      if (value != "RoCE v2" && value != "IB/RoCE v1")
        fail(n.Mark(), "'roce_mode' must be 'RoCE v2' or 'IB/RoCE v1' (as rdma_cm prints it), found '" + value + "'");
      return value;
    });
    return intent;
  }

  YamlReader reader_;
};

}  // namespace

Manifest parseManifest(const std::string& text, const std::string& file) { return ManifestParser(file).parse(text); }

Manifest loadManifest(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw ManifestError(path.string(), 0, 0, "cannot open the manifest file");
  std::ostringstream text;
  text << in.rdbuf();
  return parseManifest(text.str(), path.string());
}

}  // namespace fabscope::inventory
