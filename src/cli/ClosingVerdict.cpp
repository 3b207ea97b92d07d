#include "cli/ClosingVerdict.hpp"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "runtime/ChildProcess.hpp"
#include "runtime/ShellQuote.hpp"

namespace fabscope::cli {
namespace {

using runtime::shellQuoted;

std::string envOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

}  // namespace

std::string closingVerdict(const std::string& resultPath, double timeoutSeconds) {
  const std::string python = envOr("FABSCOPE_PYTHON", access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3");
  std::string analysisDir = envOr("FABSCOPE_ANALYSIS_DIR", "");
#ifdef FABSCOPE_SOURCE_DIR
  if (analysisDir.empty() && access(FABSCOPE_SOURCE_DIR "/analysis/fabscope_analysis/__main__.py", R_OK) == 0)
    analysisDir = FABSCOPE_SOURCE_DIR "/analysis";
#endif
  std::string command;
  if (!analysisDir.empty()) command = "PYTHONPATH=" + shellQuoted(analysisDir) + "${PYTHONPATH:+:$PYTHONPATH} ";
  command += shellQuoted(python) + " -m fabscope_analysis verdict " + shellQuoted(resultPath) + " --brief";
  // A bounded child (runtime/ChildProcess): own process group, output kept,
  // killed at its deadline.
  const auto r = runtime::runBounded({"/bin/sh", "-c", command}, timeoutSeconds);
  std::string last;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("verdict: ", 0) == 0) last = line;
  // accept's exit codes: 0 PASS, 1 FAIL; anything else is the analysis failing
  if (!last.empty() && r.error.empty() && !r.timedOut && (r.exitStatus == 0 || r.exitStatus == 1)) return last;
  std::string why = !r.error.empty() ? r.error
                    : r.timedOut     ? "it did not finish within " + std::to_string(static_cast<int>(timeoutSeconds)) + " s"
                                     : "exit " + std::to_string(r.exitStatus);
  std::string firstLine = r.output.substr(0, r.output.find('\n'));
  if (!firstLine.empty() && !r.timedOut) why += ": " + firstLine.substr(0, 200);
  return "verdict: not computed here (python3 -m fabscope_analysis: " + why +
         "); get it with: python3 -m fabscope_analysis verdict " + resultPath;
}

}  // namespace fabscope::cli
