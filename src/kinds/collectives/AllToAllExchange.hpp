#pragma once
// How the all-to-all test moves its blocks: MPI_Ialltoallv on host memory, or
// grouped ncclSend/ncclRecv on GPU memory. The kind writes and checks the
// token copies in host buffers either way; the NCCL path copies them to and
// from the GPU outside the timed parts. Every call returns when its
// exchange is complete on this rank, bounded by the test's deadline.
#include <cstddef>
#include <memory>

#include "kinds/Kind.hpp"
#include "kinds/collectives/ExchangeLayout.hpp"

namespace fabscope::suite {

enum class AllToAllPhase { dispatch, combine };

// The kind's host buffers (from the arena), laid out by the two layouts.
struct AllToAllHostBuffers {
  std::byte* dispatchOut = nullptr;
  std::byte* dispatchIn = nullptr;
  std::byte* combineOut = nullptr;
  std::byte* combineIn = nullptr;
};

class AllToAllExchange {
 public:
  virtual ~AllToAllExchange() = default;
  // Makes `dispatchOut` (host) the data the dispatch sends and runs one
  // untimed dispatch; its result is in the host `dispatchIn` afterwards.
  virtual void firstDispatch() = 0;
  // Makes `combineOut` (host) the data the combine sends and clears the
  // inbound buffers, so the check after the loop sees the timed data only.
  virtual void prepareTimed() = 0;
  // One exchange of `phase`, complete on this rank when it returns.
  virtual void exchange(AllToAllPhase phase) = 0;
  // `calls` exchanges of `phase` launched back to back (NCCL: all enqueued,
  // then one wait), complete when it returns. Nothing allocates or logs.
  virtual void exchangeBatch(AllToAllPhase phase, int calls) = 0;
  // Brings the inbound buffers to the host `dispatchIn`/`combineIn`.
  virtual void fetchResults() = 0;
};

// MPI_Ialltoallv over `group` (the test's group, or a role's sub-communicator
// in the mix) on the host buffers themselves, each bounded by `deadline`.
std::unique_ptr<AllToAllExchange> makeMpiAllToAll(const runtime::Communicator& group, const runtime::Deadline& deadline,
                                                  const ExchangeLayout& dispatch, const ExchangeLayout& combine,
                                                  const AllToAllHostBuffers& host);
// Grouped ncclSend/ncclRecv over ctx.group on the GPU of this local rank;
// throws RuntimeFailure in a build without NCCL or on a host without a GPU.
std::unique_ptr<AllToAllExchange> makeNcclAllToAll(RunContext& ctx, const ExchangeLayout& dispatch,
                                                   const ExchangeLayout& combine, const AllToAllHostBuffers& host);

}  // namespace fabscope::suite
