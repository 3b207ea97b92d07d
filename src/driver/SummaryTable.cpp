#include "driver/SummaryTable.hpp"

#include <cmath>
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

void printSummaryTable(std::FILE* out, const std::vector<InstanceResult>& results) {
  std::fprintf(out, "\n%-4s %-22s %-9s %-8s %-13s %-8s %8s %13s %13s %13s %13s %7s  %s\n", "#", "test", "kind", "size",
               "pattern", "cond", "samples", "p50", "p99", "p99.9", "worst", "impact", "status");
  for (const auto& r : results) {
    std::string cells[4];
    const auto& s = r.latency;
    if (r.metric == suite::Metric::latency) {
      cells[0] = latencyCell(s.p50), cells[1] = latencyCell(s.p99), cells[2] = latencyCell(s.p999),
      cells[3] = latencyCell(s.max);
    } else {
      cells[0] = bandwidthCell(r.bytesPerSample, s.p50), cells[1] = bandwidthCell(r.bytesPerSample, s.p99),
      cells[2] = bandwidthCell(r.bytesPerSample, s.p999), cells[3] = bandwidthCell(r.bytesPerSample, s.max);
    }
    char impact[16] = "-";
    if (r.impactP99 > 0) std::snprintf(impact, sizeof impact, "%.2fx", r.impactP99);
    const std::string pattern = r.pass == "parallel" ? r.pattern : r.pattern + "/" + r.pass;
    std::fprintf(out, "%-4d %-22.22s %-9s %-8s %-13.13s %-8.8s %8zu %13s %13s %13s %13s %7s  %s\n", r.index,
                 r.name.c_str(), r.kind.c_str(), scenario::formatSize(r.bytes).c_str(), pattern.c_str(),
                 r.condition.c_str(), s.count, cells[0].c_str(), cells[1].c_str(), cells[2].c_str(), cells[3].c_str(),
                 impact, r.status.c_str());
    if (!r.error.empty()) std::fprintf(out, "     ! %s\n", r.error.c_str());
    if (!r.spansSites.empty())
      std::fprintf(out, "     ! the measuring ranks span sites %s: a WAN path, not one cluster fabric\n",
                   r.spansSites.c_str());
  }
  std::fprintf(out, "\nlatency: one-way, microseconds; bandwidth: GB/s = 10^9 bytes/s at that sample time; "
                    "impact: congested/quiet p99 (>1 is worse)\n");
}

}  // namespace fabscope::driver
