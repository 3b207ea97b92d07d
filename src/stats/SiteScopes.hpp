#pragma once
// Site scopes: results between ranks in different sites are never mixed with
// results inside one site (a WAN path is not a cluster fabric). Every sample
// belongs to exactly one scope, decided by the sites of its two ends:
//   "site=A"            rank and peer both in site A
//   "inter-site A<->B"  rank in A, peer in B (or the reverse; names sorted)
//   "group site=A" / "group across A,B"   collective samples (peer < 0): the
//                       sites of the whole measuring group
// A rank without a site label is in site "?": it never joins a known site.
// A run in which no rank has a site label has a single unnamed scope "", so
// its statistics are exactly those over all samples.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "stats/Statistics.hpp"

namespace fabscope::stats {

struct SiteScope {
  std::string name;           // as above; "" in a run without site labels
  std::string sites;          // the sites involved, sorted, comma-separated ("A" or "A,B")
  bool crossesSites = false;  // an inter-site pair or a collective group across sites
};

class SiteScopes {
 public:
  // siteOfRank: world rank -> site ("" = unknown). group: the world ranks that
  // measured (their sites give the scope of collective samples).
  SiteScopes(std::vector<std::string> siteOfRank, std::span<const int> group);

  // True when at least one rank of the run has a site label.
  bool labelled() const { return labelled_; }

  // Index into scopes() of a sample measured by `rank` with `peer` (< 0: a collective).
  std::size_t indexOf(int rank, int peer);

  // Scopes in first-seen order; sortedOrder() gives the display order.
  const std::vector<SiteScope>& scopes() const { return scopes_; }

  // Display order: per-site scopes first (by site), then inter-site pairs,
  // then collective groups across sites.
  std::vector<std::size_t> sortedOrder() const;

 private:
  std::string siteOf(int rank) const;
  std::size_t intern(SiteScope scope);

  std::vector<std::string> siteOfRank_;
  bool labelled_ = false;
  SiteScope group_;
  std::vector<SiteScope> scopes_;
};

// One headline sample: who measured it, with whom, and its time.
struct ScopedSample {
  int rank = 0;
  int peer = -1;
  double value = 0;     // ns after the sample divisor (the latency statistic)
  double duration = 0;  // ns, t_done - t_post (bandwidth = bytes / duration)
  double bytes = 0;
};

struct ScopeSummary {
  SiteScope scope;
  LatencyStats latency;       // of `value`
  double bytesPerSample = 0;  // mean bytes of one sample
  double totalBytes = 0;
  double gbpsMean = 0;  // total bytes / total duration (bytes per ns = GB/s)
};

// Statistics per scope in display order: one entry, named "", when the run
// has no site labels (even without samples); no entry for a labelled run
// without samples.
std::vector<ScopeSummary> summarizeByScope(SiteScopes& scopes, std::span<const ScopedSample> samples);

}  // namespace fabscope::stats
