#pragma once
// Rows of the tables in the result file (docs/file-format.md). Plain structs so
// a rank can fill a preallocated array of them inside a timed loop.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "output/Hdf5.hpp"

namespace fabscope::output {

namespace sample_flags {
inline constexpr std::uint32_t dataCheckFailed = 1u << 0;
// Bit 1 is unused: a missed deadline ends the timed loop with the instance's
// status `timeout`; no sample is recorded for the operation that missed it.
// Samples that are not part of the instance's headline statistics:
inline constexpr std::uint32_t incastReceiver = 1u << 8;  // receiver's aggregate per iteration
inline constexpr std::uint32_t latencyProbe = 1u << 9;    // probe ping-pong during the incast
// A serial retest's control pair (drawn from the middle of the parallel pass,
// measured alone like the retested pairs): the reference, not the subject.
inline constexpr std::uint32_t controlPair = 1u << 10;
// An all-to-all's phases, beside the headline round (dispatch + combine):
inline constexpr std::uint32_t dispatchPhase = 1u << 11;
inline constexpr std::uint32_t combinePhase = 1u << 12;
// A front-end request's time to first byte and the gaps between its chunks,
// beside the headline row (connect -> last byte):
inline constexpr std::uint32_t firstByte = 1u << 13;
inline constexpr std::uint32_t chunkGap = 1u << 14;
inline constexpr std::uint32_t auxiliaryMask = 0xff00u;
// A mix instance's samples: the traffic class + 1 in bits 16-18 (1 allreduce,
// 2 alltoall, 3 kvpush, 4 api) and the phase (set: together; clear: isolated).
inline constexpr std::uint32_t mixClassShift = 16;
inline constexpr std::uint32_t mixClassMask = 0x7u << mixClassShift;
inline constexpr std::uint32_t mixTogether = 1u << 19;
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
};

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
};

struct SummaryRecord {
  std::int32_t rank;
  std::int64_t samples;
  double min_ns, mean_ns, p50_ns, p99_ns, p999_ns, max_ns;
  std::int64_t bytes;
  std::int64_t errors;
  char scope[64];  // site scope (stats/SiteScopes.hpp); "" in a run without site labels
};

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
};

struct EventRecord {
  std::int32_t rank;
  std::int64_t t_ns;
  char kind[32];
  std::int32_t peer;
  char detail[160];
};

struct CounterRecord {
  std::int32_t rank;
  char source[64];
  char name[64];
  std::int64_t before;
  std::int64_t after;
  std::int64_t delta;
};

// /validity: one finding that makes the run's numbers meaningless or doubtful.
struct ValidityRecord {
  char host[64];  // a hostname, or "*" for every host of the run
  char what[32];  // oversubscribed, clock_uncertainty, cpu_governor, busy_host
  double value;
  double limit;
  char effect[512];
};

// Copies `text` into a fixed-size field, truncating and NUL-padding.
template <std::size_t N>
void setText(char (&field)[N], std::string_view text) {
  std::memset(field, 0, N);
  std::memcpy(field, text.data(), text.size() < N ? text.size() : N);
}

// The HDF5 compound type describing each record (memory layout = file layout).
template <typename Record>
H5Type compoundTypeOf();

template <> H5Type compoundTypeOf<SampleRecord>();
template <> H5Type compoundTypeOf<RankRecord>();
template <> H5Type compoundTypeOf<SummaryRecord>();
template <> H5Type compoundTypeOf<ScopeRecord>();
template <> H5Type compoundTypeOf<EventRecord>();
template <> H5Type compoundTypeOf<CounterRecord>();
template <> H5Type compoundTypeOf<ValidityRecord>();

}  // namespace fabscope::output

namespace fabscope::output {

// /hosts/<host>/inventory: one fact per row.
struct KeyValueRecord {
  char key[96];
  char value[256];
};

// /hosts/<host>/consistency: differences between hosts that usually mean trouble.
struct ConsistencyRecord {
  char severity[16];
  char host[64];
  char component[96];
  char what[256];
  char expected[128];
  char found[128];
};

// /hosts/<host>/manifest: intended (manifest) vs discovered.
struct ManifestRecord {
  char component[96];
  char host[64];
  char intended[128];
  char discovered[128];
  char status[16];
  std::int32_t must_match;
  char validation[32];
};

template <> H5Type compoundTypeOf<KeyValueRecord>();
template <> H5Type compoundTypeOf<ConsistencyRecord>();
template <> H5Type compoundTypeOf<ManifestRecord>();

}  // namespace fabscope::output
