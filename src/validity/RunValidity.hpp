#pragma once
// The run's side of validity: gather every rank's facts at start,
// judge them (Validity.hpp), set the process-wide wait policy once, and say what
// output::Recorder::validity writes: the /validity rows and the root attributes.
#include <string>
#include <vector>

#include "output/Records.hpp"
#include "output/ResultFile.hpp"
#include "runtime/Deadline.hpp"
#include "runtime/Mpi.hpp"
#include "validity/Validity.hpp"

namespace fabscope::validity {

struct RunValidity {
  std::vector<Finding> findings;
  bool waitsYield = false;
  std::string waitsWhy;  // why the waits yield or spin, in words
};

// Collective over `world`, before any timed loop. Every rank gets every rank's
// facts, judges them the same way and sets runtime::setWaitPolicy: waits yield
// when ranks outnumber the CPUs open to them. FABSCOPE_WAITS_YIELD=1 or 0
// forces yielding or spinning (to measure what yielding costs).
RunValidity judgeAtStart(const runtime::Communicator& world, const runtime::Deadline& deadline);

// The clock-sync finding once the latencies are known. Collective over `comm`
// (the worst uncertainty of any rank); rank 0's `smallestLatencyNs` counts.
void judgeClocks(RunValidity& validity, const runtime::Communicator& comm, std::int64_t myUncertaintyNs,
                 double smallestLatencyNs, const runtime::Deadline& deadline);

// The rows of /validity, one per finding (rank 0's are the table: it alone
// holds the clock finding; the start findings are the same on every rank).
std::vector<output::ValidityRecord> rowsOf(const RunValidity& validity);

// The root attributes: validity_findings, waits_yield, waits_yield_why.
output::Attributes attributesOf(const RunValidity& validity);

// Lines for the closing table ("" when nothing was found).
std::vector<std::string> describe(const RunValidity& validity);

}  // namespace fabscope::validity
