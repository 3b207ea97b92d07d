// The MPI path of the all-to-all test: MPI_Ialltoallv on the host buffers.
#include "kinds/collectives/AllToAllExchange.hpp"

#include <cstring>

namespace fabscope::suite {
namespace {

class MpiAllToAll final : public AllToAllExchange {
 public:
  MpiAllToAll(const runtime::Communicator& group, const runtime::Deadline& deadline, const ExchangeLayout& dispatch,
              const ExchangeLayout& combine, const AllToAllHostBuffers& host)
      : group_(group),
        deadline_(deadline),
        dispatch_(MpiExchangeCounts::of(dispatch)),
        combine_(MpiExchangeCounts::of(combine)),
        dispatchInBytes_(dispatch.recvBytes),
        combineInBytes_(combine.recvBytes),
        host_(host) {}

  void firstDispatch() override { exchange(AllToAllPhase::dispatch); }
  void prepareTimed() override {
    std::memset(host_.dispatchIn, 0, static_cast<std::size_t>(dispatchInBytes_));
    std::memset(host_.combineIn, 0, static_cast<std::size_t>(combineInBytes_));
  }
  void exchange(AllToAllPhase phase) override {
    if (phase == AllToAllPhase::dispatch)
      run(host_.dispatchOut, host_.dispatchIn, dispatch_, "an MoE dispatch (all-to-all) with the other ranks");
    else
      run(host_.combineOut, host_.combineIn, combine_, "an MoE combine (all-to-all) with the other ranks");
  }
  // MPI has no stream to queue on: back to back is one call after the other,
  // each rank starting the next as soon as its part of the last is done.
  void exchangeBatch(AllToAllPhase phase, int calls) override {
    for (int i = 0; i < calls; ++i) exchange(phase);
  }
  void fetchResults() override {}

 private:
  void run(const std::byte* send, std::byte* recv, const MpiExchangeCounts& l, const char* what) {
    MPI_Request r;
    runtime::checkMpi(MPI_Ialltoallv(send, l.sendCounts.data(), l.sendDispls.data(), MPI_BYTE, recv,
                                     l.recvCounts.data(), l.recvDispls.data(), MPI_BYTE, group_.handle(), &r),
                      "MPI_Ialltoallv");
    group_.complete(r, deadline_, what);
  }

  const runtime::Communicator& group_;
  const runtime::Deadline& deadline_;
  MpiExchangeCounts dispatch_, combine_;
  std::int64_t dispatchInBytes_, combineInBytes_;
  AllToAllHostBuffers host_;
};

}  // namespace

std::unique_ptr<AllToAllExchange> makeMpiAllToAll(const runtime::Communicator& group, const runtime::Deadline& deadline,
                                                  const ExchangeLayout& dispatch, const ExchangeLayout& combine,
                                                  const AllToAllHostBuffers& host) {
  return std::make_unique<MpiAllToAll>(group, deadline, dispatch, combine, host);
}

}  // namespace fabscope::suite
