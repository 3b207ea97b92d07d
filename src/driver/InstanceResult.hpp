#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "driver/CounterSummary.hpp"
#include "kinds/Kind.hpp"
#include "stats/SiteScopes.hpp"
#include "stats/Statistics.hpp"

namespace fabscope::driver {

// One site scope of an instance (stats/SiteScopes.hpp) and its impact factors.
struct ScopeResult {
  stats::ScopeSummary summary;
  double impactMean = 0, impactP99 = 0;  // 0 = not computed
};

// What rank 0 keeps of a finished instance for the closing table.
struct InstanceResult {
  int index = 0;
  std::string name, kind, caseId, condition, pattern, pass, status, error;
  std::int64_t bytes = 0;
  int replicate = 0, repeats = 1;  // scenario `repeats`: which measurement of the case, of how many
  suite::Metric metric = suite::Metric::latency;
  // Headline: the statistics of the one scope, NaN (count = all samples) when
  // the samples fall into several site scopes, which are never mixed.
  stats::LatencyStats latency;  // per sample, after sample_divisor (ns)
  double bytesPerSample = 0;    // bandwidth: mean bytes in one sample
  double gbpsMean = 0;
  // The batch figure (point-to-point kinds; NaN elsewhere): loop time / iterations
  // as OSU reports it, beside the per-sample statistics (driver/BatchFigure.hpp).
  double batchMeanNs = std::nan(""), batchGbps = std::nan("");
  double impactMean = 0, impactP99 = 0;  // 0 = not computed
  std::string spansSites;                // the sites of a measuring group that spans more than one
  bool labelled = false;                 // the run has site labels: `scopes` are named and printed
  std::vector<ScopeResult> scopes;       // display order; one unnamed scope without site labels
  std::vector<CounterNote> counters;     // known counters that moved while it ran
};

}  // namespace fabscope::driver
