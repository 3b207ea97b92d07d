#pragma once
// An instance's statistics split by site scope (stats/SiteScopes.hpp): what
// the per-rank summary, the instance's attributes, its /scopes table and the
// closing table are made of. Results between sites are never mixed with
// results inside one.
#include <span>
#include <vector>

#include "driver/InstanceResult.hpp"
#include "output/Records.hpp"
#include "stats/SiteScopes.hpp"

namespace fabscope::driver {

// The samples that make the headline statistics (auxiliary rows such as an
// incast receiver's aggregate or a latency probe are left out).
std::vector<stats::ScopedSample> headlineSamples(std::span<const output::SampleRecord> samples, double divisor);

// One rank's /tests/NNNN/summary rows: one per scope its samples fall in.
std::vector<output::SummaryRecord> rankSummaryRows(int rank, std::span<const stats::ScopedSample> samples,
                                                   stats::SiteScopes& scopes, bool dataCheckFailed);

// Fills result.scopes, result.labelled and the headline (latency,
// bytesPerSample, gbpsMean): the one scope's numbers, or NaN when there are several.
void summarizeInstance(InstanceResult& result, std::span<const stats::ScopedSample> samples, stats::SiteScopes& scopes);

// Impact factors against the quiet instance of the same case, scope by scope
// (same scope name); the headline impact only when both have a single scope.
// Returns false when no scope could be compared.
bool compareWithQuiet(InstanceResult& congested, const InstanceResult& quiet);

// /tests/NNNN/scopes rows.
std::vector<output::ScopeRecord> scopeRows(const InstanceResult& result);

// "site=A;inter-site A<->B" for the instance's `site_scopes` attribute.
std::string scopeList(const InstanceResult& result);

}  // namespace fabscope::driver
