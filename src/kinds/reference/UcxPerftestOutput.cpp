#include "kinds/reference/UcxPerftestOutput.hpp"

#include "kinds/reference/ReferenceTool.hpp"

#include <sstream>
#include <vector>

namespace fabscope::suite {

UcxPerftestFigures parseUcxPerftestOutput(const std::string& output) {
  UcxPerftestFigures figures;
  std::istringstream lines(output);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    // The header names what the time columns are: "latency (usec)" or "overhead (usec)".
    if (figures.timeMeaning.empty()) {
      if (line.find("latency (usec)") != std::string::npos) figures.timeMeaning = "latency";
      if (line.find("overhead (usec)") != std::string::npos) figures.timeMeaning = "overhead";
    }
    if (line.rfind("Final:", 0) != 0) continue;
    if (figures.timeMeaning.empty())
      throw std::invalid_argument("ucx_perftest output line " + std::to_string(number) +
                                  ": 'Final:' before a header naming latency (usec) or overhead (usec)");
    std::istringstream fields(line.substr(6));
    std::vector<double> values;
    std::string word;
    while (fields >> word)
      values.push_back(reference::numberAt("ucx_perftest", number, word, "8 numbers after 'Final:'"));
    if (values.size() != 8)
      throw std::invalid_argument("ucx_perftest output line " + std::to_string(number) +
                                  ": expected 8 numbers after 'Final:', found " + std::to_string(values.size()));
    figures.iterations = static_cast<std::int64_t>(values[0]);
    figures.timeMedianUs = values[1];
    figures.timeAverageUs = values[2];
    figures.timeOverallUs = values[3];
    figures.bandwidthAverageMiBps = values[4];
    figures.bandwidthOverallMiBps = values[5];
    figures.messageRateAverage = values[6];
    figures.messageRateOverall = values[7];
    return figures;
  }
  throw std::invalid_argument("ucx_perftest output: no 'Final:' line in " + std::to_string(number) +
                              " lines (did the run end early?)");
}

std::string parseUcxInfoVersion(const std::string& output) {
  std::istringstream lines(output);
  std::string line;
  const std::string prefix = "# Version ";
  while (std::getline(lines, line))
    if (line.rfind(prefix, 0) == 0) {
      std::string version = line.substr(prefix.size());
      while (!version.empty() && (version.back() == ' ' || version.back() == '\r')) version.pop_back();
      return version;
    }
  return "";
}

}  // namespace fabscope::suite
