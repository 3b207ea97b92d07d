#pragma once
// One rank's side of an MoE dispatch + combine, shared by the `alltoall` kind
// and the `mix` kind's all-to-all class: the routing (MoeRouting), the counts
// and the two ExchangeLayouts, the host buffers, the token copies written
// before the timed loop, and the byte check after it. Every copy carries a
// 16-byte TokenHeader and a payload derived from it. The blocks move through
// an AllToAllExchange the caller chooses (MPI over a group on host memory, or
// NCCL on GPU memory).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kinds/collectives/AllToAllConfig.hpp"
#include "kinds/collectives/AllToAllExchange.hpp"
#include "kinds/collectives/ExchangeLayout.hpp"
#include "kinds/collectives/MoeRouting.hpp"
#include "memory/BufferArena.hpp"
#include "runtime/Mpi.hpp"

namespace fabscope::suite::moe {

void writeCopy(std::byte* at, const TokenHeader& h, std::int64_t bytes);
// "" when the copy at `at` is the one expected, else what is wrong.
std::string checkCopy(const std::byte* at, const TokenHeader& expected, std::int64_t bytes);

// Set up (collective over `group`): routes this rank's tokens, exchanges the
// counts, takes its buffers from `buffers` (a timed-out collective may still
// use them), writes the copies, makes the mover and runs one untimed dispatch
// that tells each rank which tokens it holds, so its combine results are
// written before the timed loop; then the inbound buffers are cleared, so
// verify() sees the timed data.
class MoeExchange {
 public:
  using MakeMover = std::function<std::unique_ptr<AllToAllExchange>(
      const ExchangeLayout& dispatch, const ExchangeLayout& combine, const AllToAllHostBuffers& host)>;

  MoeExchange(const RoutingSpec& routing, std::int64_t dispatchTokenBytes, std::int64_t combineTokenBytes,
              std::int64_t tokens, const runtime::Communicator& group, BufferArena& buffers, std::uint64_t seed,
              const runtime::Deadline& deadline, const MakeMover& makeMover);

  // The timed operations: no allocation, each complete on this rank when it returns.
  void dispatch() { mover_->exchange(AllToAllPhase::dispatch); }
  void combine() { mover_->exchange(AllToAllPhase::combine); }
  // `calls` of one phase back to back (the pipelined figure).
  void batch(AllToAllPhase phase, int calls) { mover_->exchangeBatch(phase, calls); }

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
  int rank_, size_;
  std::int64_t D_, C_;
  RankRouting routing_;
  std::vector<std::int64_t> sendCopies_, recvCopies_;
  ExchangeLayout dispatch_, combine_;
  AllToAllHostBuffers host_;
  std::unique_ptr<AllToAllExchange> mover_;
  std::vector<std::vector<std::int32_t>> heldTokens_;
};

}  // namespace fabscope::suite::moe
