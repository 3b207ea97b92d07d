#pragma once
// The api kind's records: rows of /tests/NNNN/api_requests (docs/file-format.md),
// one per measured request, written by the client rank that made it, and its
// sample flags. Times on the global clock (ns); durations in ns, -1 where the
// request never got there.
#include <cstdint>
#include <vector>

#include "output/RecordLayout.hpp"

namespace fabscope::suite::api {

// A request's time to first byte and the gaps between its chunks, beside the
// headline sample (connect -> last byte): auxiliary (output::sample_flags).
namespace sample_flags {
inline constexpr std::uint32_t firstByte = 1u << 13;
inline constexpr std::uint32_t chunkGap = 1u << 14;
}  // namespace sample_flags

struct ApiRequestRecord {
  std::int64_t request_id;  // client rank x requests per client + index (warm-up included)
  std::int32_t client_rank;
  std::int32_t server_rank;
  std::int64_t t_arrival_ns;  // its Poisson arrival
  std::int64_t t_start_ns;    // a connection slot was free and the connect began (>= arrival)
  std::int64_t connect_ns;    // connect began -> connected
  std::int64_t ttfb_ns;       // connect began -> first byte of the answer
  std::int64_t t_done_ns;     // last byte of the answer (or the error)
  std::int64_t gap_max_ns;    // the longest gap between two chunks
  std::int32_t chunks;        // chunks received whole
  std::int64_t bytes;         // answer bytes received
  char status[16];            // ok | refused | reset | timeout | busy | bad-data | server-error
  char network[16];           // fabric | frontend (the scenario's label)
  char interface[16];         // the client's interface
  static std::vector<output::Column> columns();
};

inline std::vector<output::Column> ApiRequestRecord::columns() {
  using R = ApiRequestRecord;
  using output::column;
  return {column("request_id", &R::request_id),
          column("client_rank", &R::client_rank),
          column("server_rank", &R::server_rank),
          column("t_arrival_ns", &R::t_arrival_ns, "ns"),
          column("t_start_ns", &R::t_start_ns, "ns"),
          column("connect_ns", &R::connect_ns, "ns"),
          column("ttfb_ns", &R::ttfb_ns, "ns"),
          column("t_done_ns", &R::t_done_ns, "ns"),
          column("gap_max_ns", &R::gap_max_ns, "ns"),
          column("chunks", &R::chunks),
          column("bytes", &R::bytes, "B"),
          column("status", &R::status),
          column("network", &R::network),
          column("interface", &R::interface)};
}

}  // namespace fabscope::suite::api
