#pragma once
// Rows of the tables in the result file (docs/file-format.md). Plain structs so
// a rank can fill a preallocated array of them inside a timed loop.
#include <cstdint>
#include <cstring>
#include <string_view>

#include <vector>

#include "output/RecordLayout.hpp"

namespace fabscope::output {

namespace sample_flags {
inline constexpr std::uint32_t dataCheckFailed = 1u << 0;
// Bit 1 is unused: a missed deadline ends the timed loop with the instance's
// status `timeout`; no sample is recorded for the operation that missed it.
// Bits 8-15 mark samples that are not part of the instance's headline
// statistics; each kind declares its own in its folder (incast's receiver
// aggregate and latency probe, all-to-all's phases, api's first byte and
// chunk gaps), kinds whose traffic another kind reuses keeping theirs apart.
inline constexpr std::uint32_t auxiliaryMask = 0xff00u;
// A serial retest's control pair (drawn from the middle of the parallel pass,
// measured alone like the retested pairs): the reference, not the subject.
inline constexpr std::uint32_t controlPair = 1u << 10;
// A serial retest's second visit of a retested pair (after every other pair of
// the retest, and kRevisitGapNs at least): a fault is slow on both visits, a
// burst on one. Apart from the headline, which stays the first visit's.
inline constexpr std::uint32_t retestSecondVisit = 1u << 15;
// Bits 16-23: a kind's own labels of its headline samples (the mix's traffic
// class and phase), declared in its folder.
}  // namespace sample_flags

struct SampleRecord {
  std::int32_t rank;
  std::int32_t iter;
  std::int32_t peer;
  std::int64_t bytes;
  std::int64_t t_post_ns;
  std::int64_t t_done_ns;
  std::uint32_t flags;
  // The topology level the sample's pair crosses (suite::Level: 0 unknown or no
  // pair, 1 same node, 2 same leaf, 3 same pod, 4 cross pod, 5 cross node
  // without labels). In the record's tail padding: no memory per sample.
  std::uint8_t level = 0;
  static std::vector<Column> columns();
};

inline std::vector<Column> SampleRecord::columns() {
  using R = SampleRecord;
  return {column("rank", &R::rank),
          column("iter", &R::iter),
          column("peer", &R::peer),
          column("bytes", &R::bytes, "B"),
          column("t_post_ns", &R::t_post_ns, "ns"),
          column("t_done_ns", &R::t_done_ns, "ns"),
          column("flags", &R::flags),
          column("level", &R::level)};
}

struct RankRecord {
  std::int32_t rank;
  char host[64];
  std::int32_t local_rank;
  std::int32_t local_size;
  std::int32_t pid;
  std::int32_t gpu;
  char nic[32];
  std::int64_t clock_offset_ns;
  std::int64_t clock_uncertainty_ns;
  char site[32];
  char pod[32];
  char leaf[32];
  static std::vector<Column> columns();
};

inline std::vector<Column> RankRecord::columns() {
  using R = RankRecord;
  return {column("rank", &R::rank),
          column("host", &R::host),
          column("local_rank", &R::local_rank),
          column("local_size", &R::local_size),
          column("pid", &R::pid),
          column("gpu", &R::gpu),
          column("nic", &R::nic),
          column("clock_offset_ns", &R::clock_offset_ns, "ns"),
          column("clock_uncertainty_ns", &R::clock_uncertainty_ns, "ns"),
          column("site", &R::site),
          column("pod", &R::pod),
          column("leaf", &R::leaf)};
}

struct SummaryRecord {
  std::int32_t rank;
  std::int64_t samples;
  double min_ns, mean_ns, p50_ns, p99_ns, p999_ns, max_ns;
  std::int64_t bytes;
  std::int64_t errors;
  char scope[64];  // site scope (stats/SiteScopes.hpp); "" in a run without site labels
  static std::vector<Column> columns();
};

inline std::vector<Column> SummaryRecord::columns() {
  using R = SummaryRecord;
  return {column("rank", &R::rank),
          column("samples", &R::samples),
          column("min_ns", &R::min_ns, "ns"),
          column("mean_ns", &R::mean_ns, "ns"),
          column("p50_ns", &R::p50_ns, "ns"),
          column("p99_ns", &R::p99_ns, "ns"),
          column("p999_ns", &R::p999_ns, "ns"),
          column("max_ns", &R::max_ns, "ns"),
          column("bytes", &R::bytes, "B"),
          column("errors", &R::errors),
          column("scope", &R::scope)};
}

// /tests/NNNN/scopes: the instance's statistics per site scope (runs with site labels).
struct ScopeRecord {
  char scope[64];
  char sites[64];
  std::int32_t crosses_sites;
  std::int64_t samples;
  double min_ns, mean_ns, p50_ns, p99_ns, p999_ns, max_ns;
  std::int64_t bytes;
  double gbps_p50, gbps_p99, gbps_mean;  // NaN for latency tests
  double impact_mean, impact_p99;        // NaN unless a congested instance with a quiet partner
  static std::vector<Column> columns();
};

inline std::vector<Column> ScopeRecord::columns() {
  using R = ScopeRecord;
  return {column("scope", &R::scope),
          column("sites", &R::sites),
          column("crosses_sites", &R::crosses_sites),
          column("samples", &R::samples),
          column("min_ns", &R::min_ns, "ns"),
          column("mean_ns", &R::mean_ns, "ns"),
          column("p50_ns", &R::p50_ns, "ns"),
          column("p99_ns", &R::p99_ns, "ns"),
          column("p999_ns", &R::p999_ns, "ns"),
          column("max_ns", &R::max_ns, "ns"),
          column("bytes", &R::bytes, "B"),
          column("gbps_p50", &R::gbps_p50, "GB/s"),
          column("gbps_p99", &R::gbps_p99, "GB/s"),
          column("gbps_mean", &R::gbps_mean, "GB/s"),
          column("impact_mean", &R::impact_mean, "ratio"),
          column("impact_p99", &R::impact_p99, "ratio")};
}

struct CounterRecord {
  std::int32_t rank;
  char source[64];
  char name[64];
  std::int64_t before;
  std::int64_t after;
  std::int64_t delta;
  static std::vector<Column> columns();
};

inline std::vector<Column> CounterRecord::columns() {
  using R = CounterRecord;
  return {column("rank", &R::rank),     column("source", &R::source), column("name", &R::name),
          column("before", &R::before), column("after", &R::after),   column("delta", &R::delta)};
}

// /validity: one finding that makes the run's numbers meaningless or doubtful.
struct ValidityRecord {
  char host[64];  // a hostname, or "*" for every host of the run
  char what[32];  // oversubscribed, clock_uncertainty, cpu_governor, busy_host
  double value;
  double limit;
  char effect[512];
  static std::vector<Column> columns();
};

inline std::vector<Column> ValidityRecord::columns() {
  using R = ValidityRecord;
  return {column("host", &R::host), column("what", &R::what), column("value", &R::value), column("limit", &R::limit),
          column("effect", &R::effect)};
}

// Copies `text` into a fixed-size field, truncating and NUL-padding.
template <std::size_t N>
void setText(char (&field)[N], std::string_view text) {
  std::memset(field, 0, N);
  std::memcpy(field, text.data(), text.size() < N ? text.size() : N);
}

// /hosts/<host>/inventory: one fact per row.
struct KeyValueRecord {
  char key[96];
  char value[256];
  static std::vector<Column> columns() {
    return {column("key", &KeyValueRecord::key), column("value", &KeyValueRecord::value)};
  }
};

// /hosts/<host>/consistency: differences between hosts that usually mean trouble.
struct ConsistencyRecord {
  char severity[16];
  char host[64];
  char component[96];
  char what[256];
  char expected[128];
  char found[128];
  static std::vector<Column> columns();
};

inline std::vector<Column> ConsistencyRecord::columns() {
  using R = ConsistencyRecord;
  return {column("severity", &R::severity), column("host", &R::host),         column("component", &R::component),
          column("what", &R::what),         column("expected", &R::expected), column("found", &R::found)};
}

// /hosts/<host>/manifest: intended (manifest) vs discovered.
struct ManifestRecord {
  char component[96];
  char host[64];
  char intended[128];
  char discovered[128];
  char status[16];
  std::int32_t must_match;
  char validation[32];
  static std::vector<Column> columns();
};

inline std::vector<Column> ManifestRecord::columns() {
  using R = ManifestRecord;
  return {column("component", &R::component),   column("host", &R::host),     column("intended", &R::intended),
          column("discovered", &R::discovered), column("status", &R::status), column("must_match", &R::must_match),
          column("validation", &R::validation)};
}

}  // namespace fabscope::output
