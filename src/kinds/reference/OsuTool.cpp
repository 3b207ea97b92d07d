// OSU micro-benchmarks osu_latency and osu_bw: MPI programs of two ranks.
// fabscope cannot lend them its own ranks (they call MPI_Init themselves), so
// group rank 0 launches them with their own `mpirun -np 2` on the hosts of the
// pair fabscope measures (ReferenceKind.cpp). Their figures come from the
// table they print: "# Size  Avg Latency(us)" (7.x; "Latency (us)" in 5.x),
// "# Size  Bandwidth (MB/s)" with MB = 10^6 bytes; a P50 column when run with -z.
#include <sstream>
#include <stdexcept>

#include "kinds/reference/ReferenceConfig.hpp"
#include "kinds/reference/ReferenceTool.hpp"

namespace fabscope::suite::reference {

ReferenceFigures parseOsuOutput(const std::string& output, std::int64_t bytes) {
  std::istringstream lines(output);
  std::string line;
  int number = 0, headerLine = 0;
  std::vector<std::string> columns;  // the header's column titles after "Size"
  ReferenceFigures f;
  bool found = false;
  while (std::getline(lines, line)) {
    ++number;
    const auto words = wordsOf(line);
    if (words.empty()) continue;
    if (words[0] == "#") {
      // "# OSU MPI Latency Test v7.4": the version.
      const auto v = line.find(" Test v");
      if (line.find("# OSU MPI") == 0 && v != std::string::npos) f.version = line.substr(v + 7);
      if (words.size() >= 3 && words[1] == "Size") {
        headerLine = number;
        f.timeMeaning.clear();
        if (line.find("Latency") != std::string::npos)
          f.timeMeaning = "latency";
        else if (line.find("Bandwidth") != std::string::npos)
          f.timeMeaning = "bandwidth";
        else
          throw std::invalid_argument("OSU output line " + std::to_string(number) +
                                      ": a '# Size' header naming neither Latency nor Bandwidth");
        // A title is the words up to one ending in ')': "Avg Latency(us)", "Bandwidth (MB/s)",
        // "P50 Tail Lat(us)" (titles may be one space apart).
        columns.clear();
        std::string title;
        for (std::size_t w = 2; w < words.size(); ++w) {
          title += (title.empty() ? "" : " ") + words[w];
          if (words[w].back() == ')') {
            columns.push_back(title);
            title.clear();
          }
        }
      }
      continue;
    }
    if (!headerLine) continue;  // MPI's or the launcher's own lines before the table
    const double size = numberAt("OSU", number, words[0], "a message size in bytes");
    if (static_cast<std::int64_t>(size) != bytes) continue;
    if (words.size() < 2)
      throw std::invalid_argument("OSU output line " + std::to_string(number) + ": a size without a figure");
    const double first = numberAt("OSU", number, words[1], "the average");
    double p50 = std::nan("");
    for (std::size_t c = 1; c < columns.size() && c + 1 < words.size(); ++c)
      if (columns[c].rfind("P50 ", 0) == 0) p50 = numberAt("OSU", number, words[c + 1], "the P50 column");
    if (f.timeMeaning == "latency") {
      f.averageUs = first;
      f.medianUs = p50;
    } else {
      f.gbps = first / 1e3;  // MB/s of 10^6 bytes -> GB/s
      f.timeMeaning = "";
    }
    found = true;
    break;
  }
  if (!headerLine)
    throw std::invalid_argument("OSU output: no '# Size' header in " + std::to_string(number) +
                                " lines (did the run end early?)");
  if (!found)
    throw std::invalid_argument("OSU output: the table (line " + std::to_string(headerLine) + ") has no row for " +
                                std::to_string(bytes) + " bytes");
  return f;
}

namespace {

class OsuTool final : public ReferenceTool {
 public:
  explicit OsuTool(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::string origin() const override {
    return "comes with the OSU micro-benchmarks (mvapich.cse.ohio-state.edu; Spack's osu-micro-benchmarks)";
  }
  Launch launch() const override { return Launch::mpirun; }
  bool latency(const ReferenceConfig&) const override { return name_ == "osu_latency"; }
  std::vector<std::string> programArgs(const ReferenceConfig& c, const std::string& program,
                                       std::int64_t bytes) const override {
    const std::string size = std::to_string(bytes);
    std::vector<std::string> args = {program, "-m", size + ":" + size, "-i", std::to_string(c.iterations)};
    args.push_back("-x");
    args.push_back(std::to_string(c.warmup));
    return args;
  }
  ReferenceFigures parse(const std::string& output, std::int64_t bytes) const override {
    ReferenceFigures f = parseOsuOutput(output, bytes);
    if (latency(ReferenceConfig{}) != (f.timeMeaning == "latency"))
      throw std::invalid_argument("OSU output: the table is not " + name_ + "'s (" +
                                  (f.timeMeaning.empty() ? "a bandwidth table" : "a latency table") + ")");
    f.iterations = 0;  // OSU does not print it: the command's -i says
    return f;
  }

 private:
  std::string name_;
};

}  // namespace

std::vector<std::unique_ptr<ReferenceTool>> makeOsuTools() {
  std::vector<std::unique_ptr<ReferenceTool>> tools;
  tools.push_back(std::make_unique<OsuTool>("osu_latency"));
  tools.push_back(std::make_unique<OsuTool>("osu_bw"));
  return tools;
}

}  // namespace fabscope::suite::reference
