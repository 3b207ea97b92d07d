#pragma once
// The kvpush kind's records: rows of /tests/NNNN/requests (docs/file-format.md),
// one per measured request, written by the decode rank that received it.
// Times are on the global clock (ns).
#include <cstdint>
#include <vector>

#include "output/RecordLayout.hpp"

namespace fabscope::suite::kvpush {

struct KvRequestRecord {
  std::int64_t request_id;
  std::int32_t prefill_rank;
  std::int32_t decode_rank;
  std::int64_t bytes;
  std::int64_t blocks;
  std::int64_t messages;
  std::int64_t t_arrival_ns;  // the request was ready to send (prefill side)
  std::int64_t t_start_ns;    // its transfer began (prefill side)
  std::int64_t t_done_ns;     // its KV was usable in the decode pool (decode side)
  std::int64_t gather_ns;     // staged: prefill gather into staging (inside start..done)
  std::int64_t scatter_ns;    // staged: decode scatter out of staging (inside start..done)
  std::int64_t copy_ns;       // memory: cuda: device<->pinned host copies, both ends (inside start..done)
  char strategy[16];
  char direction[16];     // push | push-put | pull
  std::uint8_t verified;  // 1: every byte matched the request's fill pattern
  static std::vector<output::Column> columns();
};

inline std::vector<output::Column> KvRequestRecord::columns() {
  using R = KvRequestRecord;
  using output::column;
  return {column("request_id", &R::request_id),
          column("prefill_rank", &R::prefill_rank),
          column("decode_rank", &R::decode_rank),
          column("bytes", &R::bytes, "B"),
          column("blocks", &R::blocks),
          column("messages", &R::messages),
          column("t_arrival_ns", &R::t_arrival_ns, "ns"),
          column("t_start_ns", &R::t_start_ns, "ns"),
          column("t_done_ns", &R::t_done_ns, "ns"),
          column("gather_ns", &R::gather_ns, "ns"),
          column("scatter_ns", &R::scatter_ns, "ns"),
          column("copy_ns", &R::copy_ns, "ns"),
          column("strategy", &R::strategy),
          column("direction", &R::direction),
          column("verified", &R::verified)};
}

}  // namespace fabscope::suite::kvpush
