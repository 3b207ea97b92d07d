#pragma once
// The alltoall kind's records: rows of /tests/NNNN/alltoall_ranks
// (docs/file-format.md), one per measuring rank, its routing and the bytes it
// moved in one iteration (the routing is the same every iteration), and the
// sample flags of its phases.
#include <cstdint>
#include <vector>

#include "output/RecordLayout.hpp"

namespace fabscope::suite::moe {

// An all-to-all's dispatch and combine phases, beside the headline round
// (dispatch + combine): auxiliary (output::sample_flags).
namespace sample_flags {
inline constexpr std::uint32_t dispatchPhase = 1u << 11;
inline constexpr std::uint32_t combinePhase = 1u << 12;
}  // namespace sample_flags

struct AllToAllRankRecord {
  std::int32_t rank;
  std::int64_t tokens;                   // tokens of this rank routed each iteration
  std::int64_t dispatch_copies_sent;     // token copies to other ranks (one per rank holding >= 1 of its experts)
  std::int64_t dispatch_copies_local;    // copies to experts on this rank (no network)
  std::int64_t dispatch_bytes_sent;      // to other ranks
  std::int64_t dispatch_bytes_received;  // from other ranks
  std::int64_t combine_bytes_sent;       // to other ranks
  std::int64_t combine_bytes_received;   // from other ranks
  std::uint8_t verified;                 // 1: every received byte matched what its sender wrote
  static std::vector<output::Column> columns();
};

inline std::vector<output::Column> AllToAllRankRecord::columns() {
  using R = AllToAllRankRecord;
  using output::column;
  return {column("rank", &R::rank),
          column("tokens", &R::tokens),
          column("dispatch_copies_sent", &R::dispatch_copies_sent),
          column("dispatch_copies_local", &R::dispatch_copies_local),
          column("dispatch_bytes_sent", &R::dispatch_bytes_sent, "B"),
          column("dispatch_bytes_received", &R::dispatch_bytes_received, "B"),
          column("combine_bytes_sent", &R::combine_bytes_sent, "B"),
          column("combine_bytes_received", &R::combine_bytes_received, "B"),
          column("verified", &R::verified)};
}

}  // namespace fabscope::suite::moe
