#include "kinds/reference/ReferenceTool.hpp"

#include <sstream>
#include <stdexcept>

#include "kinds/reference/ReferenceConfig.hpp"

namespace fabscope::suite::reference {

namespace {

const std::vector<std::unique_ptr<ReferenceTool>>& tools() {
  static const auto all = [] {
    std::vector<std::unique_ptr<ReferenceTool>> list;
    for (auto maker : {makeUcxPerftestTools, makeOsuTools, makePerftestTools, makeNcclTestsTools})
      for (auto& tool : maker()) list.push_back(std::move(tool));
    return list;
  }();
  return all;
}

}  // namespace

std::vector<std::string> ReferenceTool::serverArgs(const ReferenceConfig&, const std::string&, int,
                                                   std::int64_t) const {
  throw std::logic_error(name() + " has no server");
}
std::vector<std::string> ReferenceTool::clientArgs(const ReferenceConfig&, const std::string&, const std::string&, int,
                                                   std::int64_t) const {
  throw std::logic_error(name() + " has no client");
}
std::vector<std::string> ReferenceTool::programArgs(const ReferenceConfig&, const std::string&, std::int64_t) const {
  throw std::logic_error(name() + " is not launched by mpirun");
}

const ReferenceTool& referenceTool(const std::string& name) {
  for (const auto& tool : tools())
    if (tool->name() == name) return *tool;
  throw std::out_of_range("no reference tool '" + name + "'");
}

const std::vector<std::string>& referenceToolNames() {
  static const auto names = [] {
    std::vector<std::string> list;
    for (const auto& tool : tools()) list.push_back(tool->name());
    return list;
  }();
  return names;
}

std::vector<std::string> wordsOf(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

double numberAt(const std::string& tool, int line, const std::string& word, const std::string& what) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(word, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != word.size())
    throw std::invalid_argument(tool + " output line " + std::to_string(line) + ": '" + word +
                                "' is not a number (expected " + what + ")");
  return value;
}

}  // namespace fabscope::suite::reference
