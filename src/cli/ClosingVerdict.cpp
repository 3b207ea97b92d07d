#include "cli/ClosingVerdict.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "runtime/ChildProcess.hpp"
#include "runtime/ShellQuote.hpp"

extern char** environ;

namespace fabscope::cli {
namespace {

std::string envOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// This process's environment, with `analysisDir` first on PYTHONPATH ("" = as it is).
std::vector<std::string> environmentFor(const std::string& analysisDir) {
  std::vector<std::string> out;
  std::string pythonPath;
  for (char** entry = environ; *entry; ++entry) {
    if (std::strncmp(*entry, "PYTHONPATH=", 11) == 0)
      pythonPath = *entry + 11;
    else
      out.emplace_back(*entry);
  }
  if (!analysisDir.empty()) pythonPath = analysisDir + (pythonPath.empty() ? "" : ":" + pythonPath);
  if (!pythonPath.empty()) out.push_back("PYTHONPATH=" + pythonPath);
  return out;
}

// `path` as a user can paste it into a shell: quoted when it holds anything but
// plain path characters.
std::string pastable(const std::string& path) {
  const bool plain = !path.empty() && path.find_first_not_of(
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                          "0123456789_./:@%+,=-") == std::string::npos;
  return plain ? path : runtime::shellQuoted(path);
}

}  // namespace

std::string closingVerdict(const std::string& resultPath, double timeoutSeconds) {
  const std::string python =
      envOr("FABSCOPE_PYTHON", access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3");
  std::string analysisDir = envOr("FABSCOPE_ANALYSIS_DIR", "");
#ifdef FABSCOPE_SOURCE_DIR
  if (analysisDir.empty() && access(FABSCOPE_SOURCE_DIR "/analysis/fabscope_analysis/__main__.py", R_OK) == 0)
    analysisDir = FABSCOPE_SOURCE_DIR "/analysis";
#endif
  // A program and its arguments, no shell: the result path (any characters the
  // user gave --output) reaches the analysis as one argument and is never parsed.
  // A bounded child (runtime/ChildProcess): own process group, output kept,
  // killed at its deadline.
  const auto r = runtime::runBounded({python, "-m", "fabscope_analysis", "verdict", resultPath, "--brief"},
                                     timeoutSeconds, environmentFor(analysisDir));
  std::string last;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("verdict: ", 0) == 0) last = line;
  // verdict's exit codes: 0 PASS, 1 FAIL or CANNOT TELL; anything else is the analysis failing
  if (!last.empty() && r.error.empty() && !r.timedOut && (r.exitStatus == 0 || r.exitStatus == 1)) return last;
  std::string why = !r.error.empty() ? r.error
                    : r.timedOut ? "it did not finish within " + std::to_string(static_cast<int>(timeoutSeconds)) + " s"
                                 : "exit " + std::to_string(r.exitStatus);
  std::string firstLine = r.output.substr(0, r.output.find('\n'));
  if (!firstLine.empty() && !r.timedOut) why += ": " + firstLine.substr(0, 200);
  return "verdict: not computed here (python3 -m fabscope_analysis: " + why +
         "); get it with: python3 -m fabscope_analysis verdict " + pastable(resultPath);
}

}  // namespace fabscope::cli
