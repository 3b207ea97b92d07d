#pragma once
// Strict reading of small YAML documents: every problem becomes an error
// naming file:line:column and what was expected. Shared by the manifest and
// topology readers.
#include <yaml-cpp/yaml.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fabscope::inventory {

class YamlReader {
 public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}

  // Throws `Error` built as Error(file, line, column, problem) (1-based positions).
  template <typename Error>
  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& problem) const {
    throw Error(file_, mark.line + 1, mark.column + 1, problem);
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

// Keys of `map` that are not in `allowed`: the first one, or nullopt.
inline std::optional<YAML::Node> firstUnknownKey(const YAML::Node& map, const std::vector<std::string>& allowed) {
  for (const auto& entry : map) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string();
    bool known = false;
    for (const auto& name : allowed) known = known || key == name;
    if (!known) return entry.first;
  }
  return std::nullopt;
}

inline std::string joinNames(const std::vector<std::string>& names) {
  std::string joined;
  for (const auto& name : names) joined += (joined.empty() ? "" : ", ") + name;
  return joined;
}

inline std::string describeNodeType(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "an undefined node";
  }
}

}  // namespace fabscope::inventory
