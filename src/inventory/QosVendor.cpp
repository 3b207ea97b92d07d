// Parsers for what vendor and diagnostic tools print about QoS, when they are
// installed (they are run by QosCollect.cpp with a time limit; never required):
//   smpquery vlarb / sl2vl  (infiniband-diags, rdma-core): InfiniBand VL
//     arbitration and SL-to-VL tables, which need SMP MADs (sysfs has neither).
//     Output format from rdma-core's infiniband-diags/smpquery.c (vlarb_table,
//     sl2vl_table) and libibmad/dump.c (mad_dump_vlarbitration, mad_dump_sltovl).
//   mlxconfig -e q  (NVIDIA MFT): the adapter's firmware configuration; the
//     congestion-control and QoS parameters are kept (format: MFT user manual,
//     "mlxconfig" query output with -e: Default, Current, Next Boot columns).
// Pure functions of the text, so recorded outputs are testable.
#include <cctype>
#include <sstream>

#include "inventory/Qos.hpp"

namespace fabscope::inventory {
namespace {

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

// "|0x0 |0x1 |0x20|" -> {0, 1, 32}; nullopt-like empty vector with ok=false on a bad cell.
bool parseCells(const std::string& cells, std::vector<int>& out) {
  std::stringstream in(cells);
  std::string cell;
  while (std::getline(in, cell, '|')) {
    cell = trimmed(cell);
    if (cell.empty()) continue;
    try {
      std::size_t used = 0;
      const int value = std::stoi(cell, &used, 0);
      if (used != cell.size()) return false;
      out.push_back(value);
    } catch (const std::exception&) {
      return false;
    }
  }
  return true;
}

// Configuration names that say something about congestion control or QoS.
bool isQosConfigName(const std::string& name) {
  for (const char* part : {"ROCE", "CNP", "DCBX", "LLDP", "PFC", "ECN", "CC_", "QOS", "ADAPTIVE_ROUTING", "PRIO_TAG",
                           "TRUST", "DSCP", "VL15", "NUM_OF_VL", "IB_ROUTING", "LINK_TYPE"})
    if (name.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

VlArbitration parseSmpqueryVlarb(const std::string& text) {
  VlArbitration out;
  std::stringstream in(text);
  std::string line;
  std::vector<std::pair<int, int>>* table = nullptr;
  std::vector<int> vls;
  bool header = false;
  while (std::getline(in, line)) {
    if (line.rfind("# VLArbitration tables:", 0) == 0) {
      const auto low = line.find("LowCap "), high = line.find("HighCap ");
      if (low == std::string::npos || high == std::string::npos) return {};
      out.lowCap = std::atoi(line.c_str() + low + 7);
      out.highCap = std::atoi(line.c_str() + high + 8);
      header = true;
    } else if (line.rfind("# Low priority VL Arbitration Table:", 0) == 0) {
      table = &out.low;
    } else if (line.rfind("# High priority VL Arbitration Table:", 0) == 0) {
      table = &out.high;
    } else if (line.rfind("VL    :", 0) == 0 && table) {
      vls.clear();
      if (!parseCells(line.substr(7), vls)) return {};
    } else if (line.rfind("WEIGHT:", 0) == 0 && table) {
      std::vector<int> weights;
      if (!parseCells(line.substr(7), weights) || weights.size() != vls.size()) return {};
      for (std::size_t i = 0; i < vls.size(); ++i) table->emplace_back(vls[i], weights[i]);
      vls.clear();
    }
  }
  if (!header) return {};
  // A table the port has (cap > 0) but the output did not show is not known.
  if ((out.lowCap > 0 && out.low.empty()) || (out.highCap > 0 && out.high.empty())) return {};
  return out;
}

std::string parseSmpquerySl2vl(const std::string& text) {
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // A CA has one row, "ports: in  0, out  0: | 0| 1|...|": the VL of SL 0..15.
    if (line.rfind("ports: in", 0) != 0) continue;
    const auto bar = line.find('|');
    std::vector<int> vls;
    if (bar == std::string::npos || !parseCells(line.substr(bar), vls) || vls.size() != 16) return {};
    std::string out;
    for (int vl : vls) out += (out.empty() ? "" : ",") + std::to_string(vl);
    return out;
  }
  return {};
}

std::string formatVlArbitration(const std::vector<std::pair<int, int>>& entries) {
  // Entries with weight 0 are unused slots; "none" when every slot is unused.
  std::string out;
  for (const auto& [vl, weight] : entries)
    if (weight > 0) out += (out.empty() ? "" : ",") + std::to_string(vl) + ":" + std::to_string(weight);
  return out.empty() ? "none" : out;
}

std::vector<std::pair<std::string, std::string>> parseMlxconfigQuery(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::stringstream in(text);
  std::string line;
  bool inConfigurations = false;
  int currentColumn = 0;  // which value column is "Current" (0 with only "Next Boot")
  while (std::getline(in, line)) {
    const std::string t = trimmed(line);
    if (t.rfind("Configurations:", 0) == 0) {
      inConfigurations = true;
      // "Configurations:   Default   Current   Next Boot" (with -e), or "...: Next Boot".
      currentColumn = t.find("Current") != std::string::npos ? (t.find("Default") != std::string::npos ? 1 : 0) : 0;
      continue;
    }
    if (!inConfigurations || t.empty()) continue;
    if (t.rfind("Device #", 0) == 0) {
      inConfigurations = false;
      continue;
    }
    std::stringstream words(t[0] == '*' ? t.substr(1) : t);  // '*': changed from the default
    std::string name;
    words >> name;
    if (name.empty() || !std::isupper(static_cast<unsigned char>(name[0]))) continue;
    std::vector<std::string> values;
    for (std::string v; words >> v;) values.push_back(v);
    if (values.empty() || !isQosConfigName(name)) continue;
    const std::size_t column = static_cast<std::size_t>(currentColumn) < values.size() ? currentColumn : 0;
    out.emplace_back(name, values[column]);
  }
  return out;
}

}  // namespace fabscope::inventory
