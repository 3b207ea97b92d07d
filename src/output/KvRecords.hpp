#pragma once
// Rows of the kvpush test's /tests/NNNN/requests table (docs/file-format.md):
// one per measured request, written by the decode rank that received it.
// Times are on the global clock (ns).
#include <cstddef>
#include <cstdint>

#include "output/Records.hpp"

namespace fabscope::output {

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
  char direction[16];         // push | push-put | pull
  std::uint8_t verified;      // 1: every byte matched the request's fill pattern
};

// Header-only so the output layer's build lists stay untouched; the layout
// rules are those of Records.cpp (memory layout = file layout).
template <>
inline H5Type compoundTypeOf<KvRequestRecord>() {
  H5Type type(H5Tcreate(H5T_COMPOUND, sizeof(KvRequestRecord)), "H5Tcreate");
  auto field = [&](const char* name, std::size_t offset, hid_t t) {
    checkH5(H5Tinsert(type.get(), name, offset, t), std::string("H5Tinsert ") + name);
  };
  field("request_id", offsetof(KvRequestRecord, request_id), H5T_NATIVE_INT64);
  field("prefill_rank", offsetof(KvRequestRecord, prefill_rank), H5T_NATIVE_INT32);
  field("decode_rank", offsetof(KvRequestRecord, decode_rank), H5T_NATIVE_INT32);
  field("bytes", offsetof(KvRequestRecord, bytes), H5T_NATIVE_INT64);
  field("blocks", offsetof(KvRequestRecord, blocks), H5T_NATIVE_INT64);
  field("messages", offsetof(KvRequestRecord, messages), H5T_NATIVE_INT64);
  field("t_arrival_ns", offsetof(KvRequestRecord, t_arrival_ns), H5T_NATIVE_INT64);
  field("t_start_ns", offsetof(KvRequestRecord, t_start_ns), H5T_NATIVE_INT64);
  field("t_done_ns", offsetof(KvRequestRecord, t_done_ns), H5T_NATIVE_INT64);
  field("gather_ns", offsetof(KvRequestRecord, gather_ns), H5T_NATIVE_INT64);
  field("scatter_ns", offsetof(KvRequestRecord, scatter_ns), H5T_NATIVE_INT64);
  field("copy_ns", offsetof(KvRequestRecord, copy_ns), H5T_NATIVE_INT64);
  H5Type text = fixedStringType(sizeof(KvRequestRecord::strategy));
  field("strategy", offsetof(KvRequestRecord, strategy), text.get());
  field("direction", offsetof(KvRequestRecord, direction), text.get());
  field("verified", offsetof(KvRequestRecord, verified), H5T_NATIVE_UINT8);
  return type;
}

}  // namespace fabscope::output
