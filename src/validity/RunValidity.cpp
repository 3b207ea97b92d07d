#include "validity/RunValidity.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "output/Records.hpp"
#include "runtime/EveryRanksLine.hpp"

namespace fabscope::validity {

// Three parts of 0.15 s, each long enough for a few scheduler ticks (jiffies are
// 4-10 ms); short against a run.
constexpr double busyWindowSeconds = 0.45;

RunValidity judgeAtStart(const runtime::Communicator& world, const runtime::Deadline& deadline) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  // Every rank sleeps the same window while each measures the machine's busy CPUs.
  world.barrier(deadline);
  const auto mine = encode(readFacts(world.rank(), host, busyWindowSeconds));
  std::vector<RankFacts> facts;
  for (const auto& line : runtime::everyRanksLine(world, mine, deadline)) facts.push_back(decode(line));
  RunValidity out;
  out.findings = atStart(facts);
  out.waitsYield = waitsMustYield(out.findings);
  out.waitsWhy = out.waitsYield ? "ranks outnumber the CPUs open to them" : "every rank has a CPU of its own";
  if (const char* forced = std::getenv("FABSCOPE_WAITS_YIELD"); forced && *forced) {
    out.waitsYield = std::string(forced) == "1";
    out.waitsWhy = std::string("forced by FABSCOPE_WAITS_YIELD=") + forced;
  }
  runtime::setWaitPolicy(out.waitsYield ? runtime::WaitPolicy::yield : runtime::WaitPolicy::spin);
  return out;
}

void judgeClocks(RunValidity& validity, const runtime::Communicator& comm, std::int64_t myUncertaintyNs,
                 double smallestLatencyNs, const runtime::Deadline& deadline) {
  const auto worst = comm.allreduceMax(myUncertaintyNs, deadline);
  if (comm.rank() != 0) return;
  for (auto& f : clockSync(worst, smallestLatencyNs)) validity.findings.push_back(std::move(f));
}

std::vector<output::ValidityRecord> rowsOf(const RunValidity& validity) {
  std::vector<output::ValidityRecord> rows;
  for (const auto& f : validity.findings) {
    output::ValidityRecord row{};
    output::setText(row.host, f.host);
    output::setText(row.what, f.what);
    row.value = f.value;
    row.limit = f.limit;
    output::setText(row.effect, f.effect);
    rows.push_back(row);
  }
  return rows;
}

output::Attributes attributesOf(const RunValidity& validity) {
  return {{"validity_findings", static_cast<std::int64_t>(validity.findings.size())},
          {"waits_yield", std::int64_t{validity.waitsYield ? 1 : 0}},
          {"waits_yield_why", validity.waitsWhy}};
}

std::vector<std::string> describe(const RunValidity& validity) {
  std::vector<std::string> lines;
  if (validity.findings.empty()) return lines;
  lines.push_back("VALIDITY: " + std::to_string(validity.findings.size()) +
                  " finding(s) make the numbers below doubtful (waits " + (validity.waitsYield ? "yielded" : "spun") +
                  ": " + validity.waitsWhy + "):");
  for (const auto& f : validity.findings) {
    char numbers[96];
    std::snprintf(numbers, sizeof numbers, "%g (limit %g)", f.value, f.limit);
    lines.push_back("  ! " + f.what + " on " + (f.host == "*" ? std::string("every host") : f.host) + ": " + numbers +
                    ": " + f.effect);
  }
  return lines;
}

}  // namespace fabscope::validity
