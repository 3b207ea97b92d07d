#include "stats/SiteScopes.hpp"

#include <algorithm>
#include <set>
#include <tuple>

namespace fabscope::stats {
namespace {

constexpr const char* unknownSite = "?";

std::string joinSites(const std::set<std::string>& sites) {
  std::string out;
  for (const auto& s : sites) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

SiteScopes::SiteScopes(std::vector<std::string> siteOfRank, std::span<const int> group)
    : siteOfRank_(std::move(siteOfRank)) {
  labelled_ = std::any_of(siteOfRank_.begin(), siteOfRank_.end(), [](const std::string& s) { return !s.empty(); });
  if (!labelled_) return;
  std::set<std::string> sites;
  for (int r : group) sites.insert(siteOf(r));
  group_.sites = joinSites(sites);
  group_.crossesSites = sites.size() > 1;
  group_.name = group_.crossesSites ? "group across " + group_.sites : "group site=" + group_.sites;
}

std::string SiteScopes::siteOf(int rank) const {
  if (rank < 0 || static_cast<std::size_t>(rank) >= siteOfRank_.size()) return unknownSite;
  const auto& s = siteOfRank_[static_cast<std::size_t>(rank)];
  return s.empty() ? unknownSite : s;
}

std::size_t SiteScopes::intern(SiteScope scope) {
  for (std::size_t i = 0; i < scopes_.size(); ++i)
    if (scopes_[i].name == scope.name) return i;
  scopes_.push_back(std::move(scope));
  return scopes_.size() - 1;
}

std::size_t SiteScopes::indexOf(int rank, int peer) {
  if (!labelled_) return intern({});
  if (peer < 0) return intern(group_);
  auto a = siteOf(rank), b = siteOf(peer);
  if (a == b) return intern({"site=" + a, a, false});
  if (b < a) std::swap(a, b);
  return intern({"inter-site " + a + "<->" + b, a + "," + b, true});
}

std::vector<std::size_t> SiteScopes::sortedOrder() const {
  std::vector<std::size_t> order(scopes_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto rankOf = [&](std::size_t i) {
    const auto& s = scopes_[i];
    const bool group = s.name.rfind("group ", 0) == 0;
    return std::tuple(s.crossesSites, group, s.sites);
  };
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return rankOf(x) < rankOf(y); });
  return order;
}

std::vector<ScopeSummary> summarizeByScope(SiteScopes& scopes, std::span<const ScopedSample> samples) {
  std::vector<std::vector<double>> values;
  std::vector<double> bytes, durations;
  for (const auto& s : samples) {
    const auto i = scopes.indexOf(s.rank, s.peer);
    if (i >= values.size()) {
      values.resize(i + 1);
      bytes.resize(i + 1, 0);
      durations.resize(i + 1, 0);
    }
    values[i].push_back(s.value);
    bytes[i] += s.bytes;
    durations[i] += s.duration;
  }
  if (values.empty() && !scopes.labelled()) {
    // No samples in a run without labels: the one scope, empty, as before the split.
    scopes.indexOf(0, 0);
    values.resize(1);
    bytes.resize(1, 0);
    durations.resize(1, 0);
  }
  std::vector<ScopeSummary> out;
  for (auto i : scopes.sortedOrder()) {
    if (i >= values.size()) continue;
    ScopeSummary s;
    s.scope = scopes.scopes()[i];
    s.latency = summarize(values[i]);
    s.totalBytes = bytes[i];
    s.bytesPerSample = values[i].empty() ? 0 : bytes[i] / static_cast<double>(values[i].size());
    s.gbpsMean = durations[i] > 0 ? bytes[i] / durations[i] : 0;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace fabscope::stats
