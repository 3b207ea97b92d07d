// ucx_perftest (Debian's ucx-utils): a server on one rank, its client on the
// other, over the UCX transports UCX_TLS names (key `tls`).
#include "kinds/reference/ReferenceConfig.hpp"
#include "kinds/reference/ReferenceTool.hpp"
#include "kinds/reference/UcxPerftestOutput.hpp"

namespace fabscope::suite::reference {
namespace {

class UcxPerftestTool final : public ReferenceTool {
 public:
  std::string name() const override { return "ucx_perftest"; }
  std::string origin() const override { return "comes with UCX: Debian's ucx-utils"; }
  Launch launch() const override { return Launch::clientServer; }
  std::vector<std::string> tests() const override { return ucxPerftestTests(); }
  std::string defaultTest() const override { return "tag_lat"; }
  bool latency(const ReferenceConfig& c) const override {
    return c.test.size() > 4 && c.test.compare(c.test.size() - 4, 4, "_lat") == 0;
  }
  std::vector<std::string> serverArgs(const ReferenceConfig& c, const std::string& program, int port,
                                      std::int64_t) const override {
    return ucxPerftestServerArgs(c, program, port);
  }
  std::vector<std::string> clientArgs(const ReferenceConfig& c, const std::string& program,
                                      const std::string& serverAddress, int port, std::int64_t bytes) const override {
    return ucxPerftestClientArgs(c, program, serverAddress, port, bytes);
  }
  std::vector<std::string> versionArgs(const std::string& program) const override {
    // ucx_info of the same installation: next to the program, else on PATH.
    std::string info = resolveProgram(program.substr(0, program.rfind('/') + 1) + "ucx_info");
    if (info.empty()) info = resolveProgram("ucx_info");
    if (info.empty()) return {};
    return {info, "-v"};
  }
  std::string parseVersion(const std::string& output) const override { return parseUcxInfoVersion(output); }
  ReferenceFigures parse(const std::string& output, std::int64_t) const override {
    const UcxPerftestFigures u = parseUcxPerftestOutput(output);
    ReferenceFigures f;
    f.timeMeaning = u.timeMeaning;
    f.iterations = u.iterations;
    f.medianUs = u.timeMedianUs;
    f.averageUs = u.timeOverallUs;
    f.bandwidthMiBps = u.bandwidthOverallMiBps;
    f.messageRate = u.messageRateOverall;
    f.gbps = u.bandwidthOverallMiBps * 1048576.0 / 1e9;
    return f;
  }
};

}  // namespace

std::vector<std::unique_ptr<ReferenceTool>> makeUcxPerftestTools() {
  std::vector<std::unique_ptr<ReferenceTool>> tools;
  tools.push_back(std::make_unique<UcxPerftestTool>());
  return tools;
}

}  // namespace fabscope::suite::reference
