#pragma once
// One rank's side of an MoE dispatch + combine over MPI on host memory, shared
// by the `alltoall` kind and the `mix` kind's all-to-all class: the routing
// (MoeRouting), the counts and displacements of the two MPI_Ialltoallv, the
// token copies written before the timed loop, and the byte check after it.
// Every copy carries a 16-byte TokenHeader and a payload derived from it.
#include <cstdint>
#include <string>
#include <vector>

#include "kinds/collectives/AllToAllConfig.hpp"
#include "kinds/collectives/MoeRouting.hpp"
#include "memory/BufferArena.hpp"
#include "runtime/Mpi.hpp"

namespace fabscope::suite::moe {

// The byte counts and displacements of one MPI_Ialltoallv, made before the
// timed loop (MPI takes int counts: one block per peer stays under 2 GiB).
struct ExchangeLayout {
  std::vector<int> sendCounts, sendDispls, recvCounts, recvDispls;
  std::int64_t sendBytes = 0, recvBytes = 0;

  static ExchangeLayout of(const std::vector<std::int64_t>& sendItems, const std::vector<std::int64_t>& recvItems,
                           std::int64_t itemBytes);
};

void writeCopy(std::byte* at, const TokenHeader& h, std::int64_t bytes);
// "" when the copy at `at` is the one expected, else what is wrong.
std::string checkCopy(const std::byte* at, const TokenHeader& expected, std::int64_t bytes);

// One all-to-all over `group`, waited for within `deadline`.
void alltoallv(const std::byte* send, std::byte* recv, const ExchangeLayout& l, const runtime::Communicator& group,
               const runtime::Deadline& deadline, const char* what);

// Set up (collective over `group`): routes this rank's tokens, exchanges the
// counts, takes its buffers from `buffers` (a timed-out collective may still
// use them), writes the copies, and runs one untimed dispatch that tells each
// rank which tokens it holds, so its combine results are written before the
// timed loop; then the inbound buffers are cleared, so verify() sees the
// timed data.
class MoeExchange {
 public:
  MoeExchange(const RoutingSpec& routing, std::int64_t dispatchTokenBytes, std::int64_t combineTokenBytes,
              std::int64_t tokens, const runtime::Communicator& group, BufferArena& buffers, std::uint64_t seed,
              const runtime::Deadline& deadline);

  // The timed operations: no allocation, one MPI_Ialltoallv each.
  void dispatch(const runtime::Deadline& deadline) const;
  void combine(const runtime::Deadline& deadline) const;

  // After the timed loop: "" when the last dispatch and combine delivered
  // every byte as due, else the first problem. `corruptLast` spoils this
  // rank's inbound dispatch first (fabscope's self-test of the check).
  std::string verify(bool corruptLast);

  const ExchangeLayout& dispatchLayout() const { return dispatch_; }
  const ExchangeLayout& combineLayout() const { return combine_; }
  const std::vector<std::int64_t>& sendCopies() const { return sendCopies_; }
  const std::vector<std::int64_t>& recvCopies() const { return recvCopies_; }
  // Bytes that cross the network in one dispatch / combine (own copies left out).
  std::int64_t dispatchNetBytes() const;
  std::int64_t combineNetBytes() const;

 private:
  const runtime::Communicator& group_;
  std::int64_t D_, C_;
  RankRouting routing_;
  std::vector<std::int64_t> sendCopies_, recvCopies_;
  ExchangeLayout dispatch_, combine_;
  std::byte *dispatchOut_, *dispatchIn_, *combineOut_, *combineIn_;
  std::vector<std::vector<std::int32_t>> heldTokens_;
};

}  // namespace fabscope::suite::moe
