// perftest (linux-rdma/perftest; Debian's perftest): ib_write_bw, ib_read_lat,
// ib_send_lat over an RDMA device. A server on one rank, its client on the
// other, with the same parameters on both sides (perftest exchanges and checks
// them). Written from perftest's printing code (perftest_parameters.h
// RESULT_FMT / RESULT_FMT_LAT / REPORT_FMT*, print_report_bw/_lat); not yet run
// on an RDMA device (no machine here has one).
#include <sstream>
#include <stdexcept>

#include "kinds/reference/ReferenceConfig.hpp"
#include "kinds/reference/ReferenceTool.hpp"

namespace fabscope::suite::reference {

ReferenceFigures parsePerftestOutput(const std::string& output, std::int64_t bytes) {
  std::istringstream lines(output);
  std::string line;
  int number = 0, headerLine = 0;
  bool latencyTable = false;
  double bandwidthUnit = 0;  // GB/s per printed unit
  while (std::getline(lines, line)) {
    ++number;
    const auto words = wordsOf(line);
    if (words.empty() || line.find("-----") != std::string::npos) continue;
    if (words[0] == "#bytes") {
      headerLine = number;
      if (line.find("#sl") != std::string::npos || line.find("Port1") != std::string::npos)
        throw std::invalid_argument("perftest output line " + std::to_string(number) +
                                    ": a per-SL or per-port table, which this parser does not read");
      latencyTable = line.find("t_typical[usec]") != std::string::npos;
      if (!latencyTable) {
        // perftest's MB is 2^20 bytes (format_factor 0x100000), printed "MB/sec" before 6.x, "MiB/sec" after.
        if (line.find("BW average[MiB/sec]") != std::string::npos ||
            line.find("BW average[MB/sec]") != std::string::npos)
          bandwidthUnit = 1048576.0 / 1e9;
        else if (line.find("BW average[Gb/sec]") != std::string::npos)
          bandwidthUnit = 1.0 / 8;
        else
          throw std::invalid_argument("perftest output line " + std::to_string(number) +
                                      ": a '#bytes' header with neither t_typical[usec] nor BW average[MiB/sec] "
                                      "(or [MB/sec], [Gb/sec])");
      }
      continue;
    }
    if (!headerLine) continue;
    const double size = numberAt("perftest", number, words[0], "a message size in bytes");
    if (static_cast<std::int64_t>(size) != bytes) continue;
    const std::size_t want = latencyTable ? 9 : 5;
    if (words.size() < want)
      throw std::invalid_argument("perftest output line " + std::to_string(number) + ": expected " +
                                  std::to_string(want) + " numbers, found " + std::to_string(words.size()));
    ReferenceFigures f;
    f.iterations = static_cast<std::int64_t>(numberAt("perftest", number, words[1], "#iterations"));
    if (latencyTable) {
      f.timeMeaning = "latency";
      f.medianUs = numberAt("perftest", number, words[4], "t_typical[usec]");
      f.averageUs = numberAt("perftest", number, words[5], "t_avg[usec]");
    } else {
      f.gbps = numberAt("perftest", number, words[3], "BW average") * bandwidthUnit;
      f.messageRate = numberAt("perftest", number, words[4], "MsgRate[Mpps]") * 1e6;
    }
    return f;
  }
  if (!headerLine)
    throw std::invalid_argument("perftest output: no '#bytes' header in " + std::to_string(number) +
                                " lines (did the run end early?)");
  throw std::invalid_argument("perftest output: the table (line " + std::to_string(headerLine) + ") has no row for " +
                              std::to_string(bytes) + " bytes");
}

std::string parsePerftestVersion(const std::string& output) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("Version: ", 0) == 0) {
      auto words = wordsOf(line.substr(9));
      return words.empty() ? "" : words[0];
    }
  return "";
}

namespace {

class PerftestTool final : public ReferenceTool {
 public:
  explicit PerftestTool(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::string origin() const override { return "comes with perftest: Debian's perftest, linux-rdma/perftest"; }
  Launch launch() const override { return Launch::clientServer; }
  bool latency(const ReferenceConfig&) const override {
    return name_.size() > 4 && name_.substr(name_.size() - 4) == "_lat";
  }
  std::vector<std::string> serverArgs(const ReferenceConfig& c, const std::string& program, int port,
                                      std::int64_t bytes) const override {
    std::vector<std::string> args = {
        program, "-p", std::to_string(port), "-s", std::to_string(bytes), "-n", std::to_string(c.iterations), "-F"};
    if (!c.device.empty()) args.insert(args.end(), {"-d", c.device});
    if (c.gidIndex >= 0) args.insert(args.end(), {"-x", std::to_string(c.gidIndex)});
    return args;
  }
  std::vector<std::string> clientArgs(const ReferenceConfig& c, const std::string& program,
                                      const std::string& serverAddress, int port, std::int64_t bytes) const override {
    auto args = serverArgs(c, program, port, bytes);
    args.push_back(serverAddress);
    return args;
  }
  std::vector<std::string> versionArgs(const std::string& program) const override { return {program, "--version"}; }
  std::string parseVersion(const std::string& output) const override { return parsePerftestVersion(output); }
  ReferenceFigures parse(const std::string& output, std::int64_t bytes) const override {
    ReferenceFigures f = parsePerftestOutput(output, bytes);
    if (latency(ReferenceConfig{}) != (f.timeMeaning == "latency"))
      throw std::invalid_argument("perftest output: the table is not " + name_ + "'s");
    // An RDMA read is a round trip and perftest reports it whole; sends and writes are
    // reported as half a round trip (print_report_lat's rtt_factor).
    if (name_ == "ib_read_lat") f.timeMeaning = "round trip";
    return f;
  }

 private:
  std::string name_;
};

}  // namespace

std::vector<std::unique_ptr<ReferenceTool>> makePerftestTools() {
  std::vector<std::unique_ptr<ReferenceTool>> tools;
  for (const char* name : {"ib_write_bw", "ib_read_lat", "ib_send_lat"})
    tools.push_back(std::make_unique<PerftestTool>(name));
  return tools;
}

}  // namespace fabscope::suite::reference
