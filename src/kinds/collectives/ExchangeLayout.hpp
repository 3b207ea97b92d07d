#pragma once
// The per-peer blocks of one all-to-all: byte counts and offsets, one block
// per peer, contiguous in peer order, made before the timed loop. Shared by
// the MPI path (MPI_Ialltoallv, which counts in int) and the NCCL path (one
// ncclSend/ncclRecv per peer, which counts in size_t), so both move exactly
// the same bytes to the same places. Pure; unit-tested.
#include <cstdint>
#include <vector>

namespace fabscope::suite {

struct ExchangeLayout {
  std::vector<std::int64_t> sendCounts, sendDispls, recvCounts, recvDispls;  // bytes, per peer
  std::int64_t sendBytes = 0, recvBytes = 0;

  // sendItems[p] items of itemBytes each go to peer p, recvItems[p] come from it.
  static ExchangeLayout of(const std::vector<std::int64_t>& sendItems, const std::vector<std::int64_t>& recvItems,
                           std::int64_t itemBytes);
};

// The same layout in MPI's int counts; throws UsageError when a count or an
// offset is beyond int (MPI_Alltoallv's limit: use fewer tokens per rank).
struct MpiExchangeCounts {
  std::vector<int> sendCounts, sendDispls, recvCounts, recvDispls;
  static MpiExchangeCounts of(const ExchangeLayout& layout);
};

}  // namespace fabscope::suite
