// nccl-tests (NVIDIA/nccl-tests) all_reduce_perf and alltoall_perf, built with
// MPI=1: one rank per GPU, launched by group rank 0 with its own mpirun on the
// group's hosts (ReferenceKind.cpp), one size (-b = -e = the instance's bytes).
// Figures from the text table (util.cu's header "size count type redop root
// time algbw busbw #wrong", out-of-place columns first): time (us), algbw and
// busbw (GB/s, 10^9 bytes).
#include <sstream>
#include <stdexcept>

#include "kinds/reference/ReferenceConfig.hpp"
#include "kinds/reference/ReferenceTool.hpp"

namespace fabscope::suite::reference {

ReferenceFigures parseNcclTestsOutput(const std::string& output, std::int64_t bytes) {
  std::istringstream lines(output);
  std::string line;
  int number = 0, headerLine = 0;
  std::size_t timeColumn = 0, algColumn = 0, busColumn = 0;  // indices in a data row
  ReferenceFigures f;
  f.timeMeaning = "collective";
  while (std::getline(lines, line)) {
    ++number;
    auto words = wordsOf(line);
    if (words.empty()) continue;
    if (words[0] == "#") {
      // "# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807"
      if (words.size() >= 4 && words[1] == "nccl-tests" && words[2] == "version") {
        f.version = words[3];
        for (std::size_t w = 4; w < words.size(); ++w)
          if (words[w].rfind("nccl-library=", 0) == 0) f.version += " (NCCL " + words[w].substr(13) + ")";
      }
      // The column titles: the first time/algbw/busbw after "size" are the out-of-place ones.
      if (words.size() > 8 && words[1] == "size" && words[2] == "count") {
        headerLine = number;
        timeColumn = algColumn = busColumn = 0;
        for (std::size_t w = words.size(); w-- > 2;) {
          if (words[w] == "time" || words[w] == "cputime") timeColumn = w - 1;
          if (words[w] == "algbw") algColumn = w - 1;
          if (words[w] == "busbw") busColumn = w - 1;
        }
        if (!timeColumn || !algColumn || !busColumn)
          throw std::invalid_argument("nccl-tests output line " + std::to_string(number) +
                                      ": a 'size count' header without time, algbw and busbw");
      }
      continue;
    }
    if (!headerLine) continue;
    // A data row starts with the size; anything else after the header (warnings) is passed over.
    if (words[0].find_first_not_of("0123456789") != std::string::npos) continue;
    if (std::stoll(words[0]) != bytes) continue;
    if (words.size() <= busColumn)
      throw std::invalid_argument("nccl-tests output line " + std::to_string(number) + ": expected at least " +
                                  std::to_string(busColumn + 1) + " columns, found " + std::to_string(words.size()));
    f.averageUs = numberAt("nccl-tests", number, words[timeColumn], "the out-of-place time (us)");
    f.gbps = numberAt("nccl-tests", number, words[algColumn], "the out-of-place algbw (GB/s)");
    f.busGbps = numberAt("nccl-tests", number, words[busColumn], "the out-of-place busbw (GB/s)");
    return f;
  }
  if (!headerLine)
    throw std::invalid_argument("nccl-tests output: no '# size count ...' header in " + std::to_string(number) +
                                " lines (did the run end early?)");
  throw std::invalid_argument("nccl-tests output: the table (line " + std::to_string(headerLine) + ") has no row for " +
                              std::to_string(bytes) + " bytes");
}

namespace {

class NcclTestsTool final : public ReferenceTool {
 public:
  explicit NcclTestsTool(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::string origin() const override { return "comes with nccl-tests (NVIDIA/nccl-tests, built with MPI=1)"; }
  Launch launch() const override { return Launch::mpirun; }
  bool latency(const ReferenceConfig&) const override { return false; }
  std::vector<std::string> programArgs(const ReferenceConfig& c, const std::string& program,
                                       std::int64_t bytes) const override {
    const std::string size = std::to_string(bytes);
    return {program, "-b", size, "-e", size, "-n", std::to_string(c.iterations), "-w", std::to_string(c.warmup),
            "-g",    "1"};
  }
  ReferenceFigures parse(const std::string& output, std::int64_t bytes) const override {
    return parseNcclTestsOutput(output, bytes);
  }

 private:
  std::string name_;
};

}  // namespace

std::vector<std::unique_ptr<ReferenceTool>> makeNcclTestsTools() {
  std::vector<std::unique_ptr<ReferenceTool>> tools;
  tools.push_back(std::make_unique<NcclTestsTool>("all_reduce_perf"));
  tools.push_back(std::make_unique<NcclTestsTool>("alltoall_perf"));
  return tools;
}

}  // namespace fabscope::suite::reference
