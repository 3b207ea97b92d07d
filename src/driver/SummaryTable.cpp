#include "driver/SummaryTable.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "scenario/Units.hpp"

namespace fabscope::driver {
namespace {

std::string latencyCell(double ns) {
  if (std::isnan(ns)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f us", ns / 1e3);
  return text;
}

std::string bandwidthCell(double bytes, double ns) {
  if (std::isnan(ns) || ns <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.3f GB/s", bytes / ns);
  return text;
}

}  // namespace

namespace {

struct RowValues {
  const stats::LatencyStats* latency;
  double bytesPerSample;
  double impactP99;
  double batch;              // the batch figure (ns per iteration or GB/s); NaN: none, or a site scope's row
  const std::string* scope;  // nullptr: no scope column (a run without site labels)
};

void printRow(std::FILE* out, const InstanceResult& r, const RowValues& v) {
  std::string cells[4];
  const auto& s = *v.latency;
  if (r.metric == suite::Metric::latency) {
    cells[0] = latencyCell(s.p50), cells[1] = latencyCell(s.p99), cells[2] = latencyCell(s.p999),
    cells[3] = latencyCell(s.max);
  } else {
    cells[0] = bandwidthCell(v.bytesPerSample, s.p50), cells[1] = bandwidthCell(v.bytesPerSample, s.p99),
    cells[2] = bandwidthCell(v.bytesPerSample, s.p999), cells[3] = bandwidthCell(v.bytesPerSample, s.max);
  }
  std::string batch = "-";
  if (!std::isnan(v.batch))
    batch = r.metric == suite::Metric::latency ? latencyCell(v.batch) : bandwidthCell(v.batch, 1.0);
  char impact[16] = "-";
  if (v.impactP99 > 0) std::snprintf(impact, sizeof impact, "%.2fx", v.impactP99);
  const std::string pattern = r.pass == "parallel" ? r.pattern : r.pattern + "/" + r.pass;
  // replicates of one case (scenario `repeats`): "quiet #2", as the analysis labels them
  const std::string condition = r.repeats > 1 ? r.condition + " #" + std::to_string(r.replicate + 1) : r.condition;
  std::fprintf(out, "%-4d %-22.22s %-9s %-8s %-13.13s %-12.12s %8zu %13s %13s %13s %13s %13s %7s  ", r.index,
               r.name.c_str(), r.kind.c_str(), scenario::formatSize(r.bytes).c_str(), pattern.c_str(),
               condition.c_str(), s.count, cells[0].c_str(), cells[1].c_str(), cells[2].c_str(), cells[3].c_str(),
               batch.c_str(), impact);
  if (v.scope) std::fprintf(out, "%-26s  ", v.scope->empty() ? "-" : v.scope->c_str());
  std::fprintf(out, "%s\n", r.status.c_str());
}

}  // namespace

void printSummaryTable(std::FILE* out, const std::vector<InstanceResult>& results) {
  // Site labels add a scope column: results inside a site and between sites
  // are never mixed in one row.
  bool labelled = false;
  for (const auto& r : results) labelled = labelled || r.labelled;
  std::fprintf(out, "\n%-4s %-22s %-9s %-8s %-13s %-12s %8s %13s %13s %13s %13s %13s %7s  ", "#", "test", "kind",
               "size", "pattern", "cond", "samples", "p50", "p99", "p99.9", "worst", "batch", "impact");
  if (labelled) std::fprintf(out, "%-26s  ", "scope");
  std::fprintf(out, "status\n");
  const std::string none;
  for (const auto& r : results) {
    if (!labelled || r.scopes.empty()) {
      const double batch = r.metric == suite::Metric::latency ? r.batchMeanNs : r.batchGbps;
      printRow(out, r, {&r.latency, r.bytesPerSample, r.impactP99, batch, labelled ? &none : nullptr});
    } else {
      for (const auto& scope : r.scopes)
        printRow(out, r,
                 {&scope.summary.latency, scope.summary.bytesPerSample, scope.impactP99, std::nan(""),
                  &scope.summary.scope.name});
    }
    if (!r.error.empty()) std::fprintf(out, "     ! %s\n", r.error.c_str());
    if (!r.counters.empty()) std::fprintf(out, "     ~ counters moved: %s\n", describeCounterNotes(r.counters).c_str());
    if (!r.spansSites.empty()) {
      // A collective's group is one scope that crosses sites: its numbers are a
      // WAN path. Point-to-point rows above are already split by scope, but a
      // kind's group-wide attributes (incast aggregate, KV aggregate) are not.
      const bool groupAcross = std::any_of(r.scopes.begin(), r.scopes.end(), [](const ScopeResult& s) {
        return s.summary.scope.crossesSites && s.summary.scope.name.rfind("group ", 0) == 0;
      });
      if (groupAcross || r.scopes.empty() || !labelled)
        std::fprintf(out, "     ! the measuring group spans sites %s: a WAN path, not one cluster fabric\n",
                     r.spansSites.c_str());
      else
        std::fprintf(out,
                     "     ! the measuring ranks span sites %s: rows are split by site scope; "
                     "group-wide attributes of this test (if any) span sites\n",
                     r.spansSites.c_str());
    }
  }
  std::fprintf(out,
               "\nlatency: one-way, microseconds; bandwidth: GB/s = 10^9 bytes/s at that sample time; "
               "impact: p99 congested/quiet for latency, quiet/congested for bandwidth (>1 is worse); "
               "batch: loop time / iterations, the way osu_latency and osu_bw report (point-to-point)\n");
  // The meaning of every known counter named above, once.
  std::set<std::string> named;
  for (const auto& r : results)
    for (std::size_t i = 0; i < r.counters.size() && i < 4; ++i) named.insert(r.counters[i].name);
  for (const auto& name : named) std::fprintf(out, "~ %s: %s\n", name.c_str(), counterMeaning(name).c_str());
  if (labelled)
    std::fprintf(out,
                 "scope: site=X both ends in site X; inter-site X<->Y between sites (a WAN path, never mixed "
                 "with a site's own fabric); group: a collective's whole group\n");
}

}  // namespace fabscope::driver
