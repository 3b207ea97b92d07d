#pragma once
// Rows of the api test's /tests/NNNN/api_requests table (docs/file-format.md):
// one per measured request, written by the client rank that made it. Times on
// the global clock (ns); durations in ns, -1 where the request never got there.
#include <cstddef>
#include <cstdint>

#include "output/Records.hpp"

namespace fabscope::output {

struct ApiRequestRecord {
  std::int64_t request_id;   // client rank x requests per client + index (warm-up included)
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
};

template <>
inline H5Type compoundTypeOf<ApiRequestRecord>() {
  H5Type type(H5Tcreate(H5T_COMPOUND, sizeof(ApiRequestRecord)), "H5Tcreate");
  auto field = [&](const char* name, std::size_t offset, hid_t t) {
    checkH5(H5Tinsert(type.get(), name, offset, t), std::string("H5Tinsert ") + name);
  };
  field("request_id", offsetof(ApiRequestRecord, request_id), H5T_NATIVE_INT64);
  field("client_rank", offsetof(ApiRequestRecord, client_rank), H5T_NATIVE_INT32);
  field("server_rank", offsetof(ApiRequestRecord, server_rank), H5T_NATIVE_INT32);
  field("t_arrival_ns", offsetof(ApiRequestRecord, t_arrival_ns), H5T_NATIVE_INT64);
  field("t_start_ns", offsetof(ApiRequestRecord, t_start_ns), H5T_NATIVE_INT64);
  field("connect_ns", offsetof(ApiRequestRecord, connect_ns), H5T_NATIVE_INT64);
  field("ttfb_ns", offsetof(ApiRequestRecord, ttfb_ns), H5T_NATIVE_INT64);
  field("t_done_ns", offsetof(ApiRequestRecord, t_done_ns), H5T_NATIVE_INT64);
  field("gap_max_ns", offsetof(ApiRequestRecord, gap_max_ns), H5T_NATIVE_INT64);
  field("chunks", offsetof(ApiRequestRecord, chunks), H5T_NATIVE_INT32);
  field("bytes", offsetof(ApiRequestRecord, bytes), H5T_NATIVE_INT64);
  H5Type text = fixedStringType(sizeof(ApiRequestRecord::status));
  field("status", offsetof(ApiRequestRecord, status), text.get());
  field("network", offsetof(ApiRequestRecord, network), text.get());
  field("interface", offsetof(ApiRequestRecord, interface), text.get());
  return type;
}

}  // namespace fabscope::output
