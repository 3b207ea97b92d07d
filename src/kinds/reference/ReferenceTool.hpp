#pragma once
// One external benchmark `kind: reference` can run: a small
// plug-in per tool (UcxPerftestTool.cpp, OsuTool.cpp, PerftestTool.cpp,
// NcclTestsTool.cpp) saying how it is launched, its command lines, where its
// version comes from and how its output is read. ReferenceKind.cpp runs it.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fabscope::suite::reference {

struct ReferenceConfig;

// A tool's figures in the units fabscope records; NaN where the tool gives none.
struct ReferenceFigures {
  std::string timeMeaning;  // what the time figures are: "latency", "overhead", "round trip", "collective"
  std::string version;      // when the run's own output names it (OSU's header, nccl-tests' banner)
  std::int64_t iterations = 0;
  double medianUs = std::nan("");
  double averageUs = std::nan("");
  double bandwidthMiBps = std::nan("");  // ucx_perftest's "MB/s" (2^20 bytes per second)
  double messageRate = std::nan("");     // messages per second
  double gbps = std::nan("");            // bandwidth in GB/s (10^9 bytes per second: fabscope's gbps_*)
  double busGbps = std::nan("");         // nccl-tests' bus bandwidth (GB/s)
};

// How the tool's processes start.
enum class Launch {
  clientServer,  // a server on group rank 1, its client on group rank 0 (ucx_perftest, perftest)
  mpirun,        // an MPI program: group rank 0 runs `launcher -np N --host ...` on the group's hosts
};

class ReferenceTool {
 public:
  virtual ~ReferenceTool() = default;
  virtual std::string name() const = 0;
  // Where it comes from, for the reason of a skipped instance.
  virtual std::string origin() const = 0;
  virtual Launch launch() const = 0;
  // The values its `test` key takes (empty: the tool has no `test` key) and the default.
  virtual std::vector<std::string> tests() const { return {}; }
  virtual std::string defaultTest() const { return ""; }
  // True when its figure is a time per operation, false for a bandwidth.
  virtual bool latency(const ReferenceConfig& c) const = 0;
  // Processes (argv[0] = the program). clientServer: server and client; mpirun: the program
  // each rank runs (the launcher's own arguments come first, from the kind).
  virtual std::vector<std::string> serverArgs(const ReferenceConfig&, const std::string& program, int port,
                                              std::int64_t bytes) const;
  virtual std::vector<std::string> clientArgs(const ReferenceConfig&, const std::string& program,
                                              const std::string& serverAddress, int port, std::int64_t bytes) const;
  virtual std::vector<std::string> programArgs(const ReferenceConfig&, const std::string& program,
                                               std::int64_t bytes) const;
  // The command that prints its version (empty: the run's output names it) and its reading.
  virtual std::vector<std::string> versionArgs(const std::string& /*program*/) const { return {}; }
  virtual std::string parseVersion(const std::string&) const { return ""; }
  // Its figures for a message of `bytes`. Throws std::invalid_argument naming the line.
  virtual ReferenceFigures parse(const std::string& output, std::int64_t bytes) const = 0;
};

// The tool named `name`; throws std::out_of_range for an unknown one.
const ReferenceTool& referenceTool(const std::string& name);
const std::vector<std::string>& referenceToolNames();

// The plug-ins (one file each).
std::vector<std::unique_ptr<ReferenceTool>> makeUcxPerftestTools();
std::vector<std::unique_ptr<ReferenceTool>> makeOsuTools();
std::vector<std::unique_ptr<ReferenceTool>> makePerftestTools();
std::vector<std::unique_ptr<ReferenceTool>> makeNcclTestsTools();

// The parsers (tested on recorded or constructed outputs: tests/data/reference/*/README.md).
// OSU's osu_latency / osu_bw table (versions 5 to 7): the row of `bytes`.
ReferenceFigures parseOsuOutput(const std::string& output, std::int64_t bytes);
// perftest's ib_*_bw / ib_*_lat result table: the row of `bytes`.
ReferenceFigures parsePerftestOutput(const std::string& output, std::int64_t bytes);
// "Version: 6.29" (perftest --version) -> "6.29".
std::string parsePerftestVersion(const std::string& output);
// nccl-tests' text table (out-of-place columns): the row of `bytes`.
ReferenceFigures parseNcclTestsOutput(const std::string& output, std::int64_t bytes);

// Helpers the parsers share: a line's whitespace-separated words, a number or throw.
std::vector<std::string> wordsOf(const std::string& line);
double numberAt(const std::string& tool, int line, const std::string& word, const std::string& what);

}  // namespace fabscope::suite::reference
