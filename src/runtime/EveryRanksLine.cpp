#include "runtime/EveryRanksLine.hpp"

namespace fabscope::runtime {

std::vector<std::string> everyRanksLine(const Communicator& comm, const std::string& line, const Deadline& deadline) {
  std::string joined;
  for (const auto& gathered : comm.gatherStrings(line, 0, deadline)) joined += gathered + "\n";
  joined = comm.broadcastString(joined, 0, deadline);
  std::vector<std::string> lines;
  for (std::size_t start = 0; start < joined.size();) {
    const auto end = joined.find('\n', start);
    lines.push_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string everyRanksProblems(const Communicator& comm, const std::string& problem, const Deadline& deadline) {
  std::string joined;
  for (const auto& gathered : comm.gatherStrings(problem, 0, deadline))
    if (!gathered.empty()) joined += (joined.empty() ? "" : "; ") + gathered;
  return comm.broadcastString(joined, 0, deadline);
}

}  // namespace fabscope::runtime
