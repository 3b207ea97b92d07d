#pragma once
// Rows of the alltoall test's /tests/NNNN/alltoall_ranks table
// (docs/file-format.md): one per measuring rank, its routing and the bytes it
// moved in one iteration (the routing is the same every iteration).
#include <cstddef>
#include <cstdint>

#include "output/Records.hpp"

namespace fabscope::output {

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
};

// Header-only, as KvRecords.hpp; the layout rules are those of Records.cpp.
template <>
inline H5Type compoundTypeOf<AllToAllRankRecord>() {
  H5Type type(H5Tcreate(H5T_COMPOUND, sizeof(AllToAllRankRecord)), "H5Tcreate");
  auto field = [&](const char* name, std::size_t offset, hid_t t) {
    checkH5(H5Tinsert(type.get(), name, offset, t), std::string("H5Tinsert ") + name);
  };
  field("rank", offsetof(AllToAllRankRecord, rank), H5T_NATIVE_INT32);
  field("tokens", offsetof(AllToAllRankRecord, tokens), H5T_NATIVE_INT64);
  field("dispatch_copies_sent", offsetof(AllToAllRankRecord, dispatch_copies_sent), H5T_NATIVE_INT64);
  field("dispatch_copies_local", offsetof(AllToAllRankRecord, dispatch_copies_local), H5T_NATIVE_INT64);
  field("dispatch_bytes_sent", offsetof(AllToAllRankRecord, dispatch_bytes_sent), H5T_NATIVE_INT64);
  field("dispatch_bytes_received", offsetof(AllToAllRankRecord, dispatch_bytes_received), H5T_NATIVE_INT64);
  field("combine_bytes_sent", offsetof(AllToAllRankRecord, combine_bytes_sent), H5T_NATIVE_INT64);
  field("combine_bytes_received", offsetof(AllToAllRankRecord, combine_bytes_received), H5T_NATIVE_INT64);
  field("verified", offsetof(AllToAllRankRecord, verified), H5T_NATIVE_UINT8);
  return type;
}

}  // namespace fabscope::output
