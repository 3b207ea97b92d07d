#include "driver/ScopedStatistics.hpp"

#include <cmath>
#include <map>

namespace fabscope::driver {

std::vector<stats::ScopedSample> headlineSamples(std::span<const output::SampleRecord> samples, double divisor) {
  std::vector<stats::ScopedSample> out;
  out.reserve(samples.size());
  for (const auto& s : samples) {
    if (s.flags & output::sample_flags::auxiliaryMask) continue;
    const double duration = static_cast<double>(s.t_done_ns - s.t_post_ns);
    out.push_back({s.rank, s.peer, duration / divisor, duration, static_cast<double>(s.bytes)});
  }
  return out;
}

namespace {

// The columns a rank's summary row and a scope row share.
template <class Row>
void setLatencyColumns(Row& r, const stats::ScopeSummary& s) {
  r.samples = static_cast<std::int64_t>(s.latency.count);
  r.min_ns = s.latency.min;
  r.mean_ns = s.latency.mean;
  r.p50_ns = s.latency.p50;
  r.p99_ns = s.latency.p99;
  r.p999_ns = s.latency.p999;
  r.max_ns = s.latency.max;
  r.bytes = static_cast<std::int64_t>(s.totalBytes);
}

}  // namespace

std::vector<output::SummaryRecord> rankSummaryRows(int rank, std::span<const stats::ScopedSample> samples,
                                                   stats::SiteScopes& scopes, bool dataCheckFailed) {
  std::vector<output::SummaryRecord> rows;
  if (samples.empty()) return rows;
  for (const auto& s : stats::summarizeByScope(scopes, samples)) {
    output::SummaryRecord r{};
    r.rank = rank;
    setLatencyColumns(r, s);
    r.errors = dataCheckFailed ? 1 : 0;
    output::setText(r.scope, s.scope.name);
    rows.push_back(r);
  }
  return rows;
}

void summarizeInstance(InstanceResult& result, std::span<const stats::ScopedSample> samples,
                       stats::SiteScopes& scopes) {
  result.labelled = scopes.labelled();
  result.scopes.clear();
  for (auto& s : stats::summarizeByScope(scopes, samples)) result.scopes.push_back({std::move(s), 0, 0});
  if (result.scopes.size() == 1) {
    const auto& only = result.scopes.front().summary;
    result.latency = only.latency;
    result.bytesPerSample = only.bytesPerSample;
    result.gbpsMean = only.gbpsMean;
    return;
  }
  // Several scopes (or none): a number over all samples would mix a WAN path
  // with a cluster fabric, so the headline says "not one number".
  result.latency = stats::summarize(std::span<double>{});
  result.latency.count = samples.size();
  result.bytesPerSample = std::nan("");
  result.gbpsMean = std::nan("");
}

bool compareWithQuiet(InstanceResult& congested, const InstanceResult& quiet) {
  std::map<std::string, const stats::ScopeSummary*> quietByName;
  for (const auto& q : quiet.scopes) quietByName[q.summary.scope.name] = &q.summary;
  bool any = false;
  for (auto& c : congested.scopes) {
    const auto it = quietByName.find(c.summary.scope.name);
    if (it == quietByName.end()) continue;
    c.impactMean = c.summary.latency.mean / it->second->latency.mean;
    c.impactP99 = c.summary.latency.p99 / it->second->latency.p99;
    any = true;
  }
  if (congested.scopes.size() == 1 && quiet.scopes.size() == 1 && any) {
    // NaN when either side has no samples, as before site scopes existed.
    congested.impactMean = congested.scopes.front().impactMean;
    congested.impactP99 = congested.scopes.front().impactP99;
  }
  return any;
}

std::vector<output::ScopeRecord> scopeRows(const InstanceResult& result) {
  std::vector<output::ScopeRecord> rows;
  const bool bandwidth = result.metric == suite::Metric::bandwidth;
  for (const auto& s : result.scopes) {
    const auto& m = s.summary;
    output::ScopeRecord r{};
    output::setText(r.scope, m.scope.name);
    output::setText(r.sites, m.scope.sites);
    r.crosses_sites = m.scope.crossesSites ? 1 : 0;
    setLatencyColumns(r, m);
    const double nan = std::nan("");
    r.gbps_p50 = bandwidth ? m.bytesPerSample / m.latency.p50 : nan;
    r.gbps_p99 = bandwidth ? m.bytesPerSample / m.latency.p99 : nan;
    r.gbps_mean = bandwidth ? m.gbpsMean : nan;
    r.impact_mean = s.impactMean > 0 ? s.impactMean : nan;
    r.impact_p99 = s.impactP99 > 0 ? s.impactP99 : nan;
    rows.push_back(r);
  }
  return rows;
}

std::string scopeList(const InstanceResult& result) {
  std::string out;
  for (const auto& s : result.scopes) out += (out.empty() ? "" : ";") + s.summary.scope.name;
  return out;
}

}  // namespace fabscope::driver
