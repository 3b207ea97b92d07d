#pragma once
// The figures of one ucx_perftest run, read from its printed table: the
// parser `kind: reference` (ReferenceKind.cpp) uses on the
// client's output; tested on outputs recorded here (tests/data/reference/ucx_perftest).
#include <cstdint>
#include <stdexcept>
#include <string>

namespace fabscope::suite {

struct UcxPerftestFigures {
  // "latency" for latency tests, "overhead" for bandwidth tests: what the
  // first three time columns mean (microseconds per operation either way).
  std::string timeMeaning;
  std::int64_t iterations = 0;
  double timeMedianUs = 0;           // the 50.0%ile column
  double timeAverageUs = 0;          // the last report period
  double timeOverallUs = 0;          // the whole run
  double bandwidthAverageMiBps = 0;  // "MB/s" as ucx_perftest prints it (2^20 bytes)
  double bandwidthOverallMiBps = 0;
  double messageRateAverage = 0;  // messages per second
  double messageRateOverall = 0;
};

// Throws std::invalid_argument naming the line (1-based) and what was expected.
UcxPerftestFigures parseUcxPerftestOutput(const std::string& output);

// "# Version 1.13.1" from `ucx_info -v` -> "1.13.1"; "" when absent.
std::string parseUcxInfoVersion(const std::string& output);

}  // namespace fabscope::suite
