// The NCCL path of the all-to-all test: one ncclSend and one ncclRecv per peer
// with a non-empty block (the same ExchangeLayout as the MPI path), grouped in
// ncclGroupStart/End, on this local rank's GPU. The token copies are written
// and checked in host memory and copied to and from the GPU outside the timed
// parts. The first exchange runs on a bounded helper thread on scratch memory,
// so NCCL's lazy connection to each peer cannot hang the test past its
// deadline; every later wait polls the stream and NCCL's error state under it.
#include "kinds/collectives/AllToAllExchange.hpp"

#include "fabscope/BuildConfig.hpp"

#if FABSCOPE_HAVE_NCCL
#include <algorithm>
#include <string>

#include "cuda/CudaApi.hpp"
#include "kinds/collectives/NcclRunComm.hpp"
#endif

namespace fabscope::suite {

#if FABSCOPE_HAVE_NCCL
namespace {

using transport::checkNccl;

// One grouped exchange enqueued on `stream` (returns before it completes).
void enqueueExchange(const std::byte* send, std::byte* recv, const ExchangeLayout& l, ncclComm_t comm,
                     cudaStream_t stream) {
  checkNccl(ncclGroupStart(), "ncclGroupStart");
  ncclResult_t rc = ncclSuccess;
  // A block is empty on both sides or on neither (each side's counts are the
  // other's, exchanged before), so skipping the empty ones keeps the pairs.
  for (std::size_t p = 0; p < l.sendCounts.size() && rc == ncclSuccess; ++p) {
    if (l.sendCounts[p] > 0)
      rc = ncclSend(send + l.sendDispls[p], static_cast<std::size_t>(l.sendCounts[p]), ncclUint8, static_cast<int>(p),
                    comm, stream);
    if (rc == ncclSuccess && l.recvCounts[p] > 0)
      rc = ncclRecv(recv + l.recvDispls[p], static_cast<std::size_t>(l.recvCounts[p]), ncclUint8, static_cast<int>(p),
                    comm, stream);
  }
  const auto ended = ncclGroupEnd();
  checkNccl(rc, "ncclSend/ncclRecv (all-to-all)");
  checkNccl(ended, "ncclGroupEnd (all-to-all)");
}

class NcclAllToAll final : public AllToAllExchange {
 public:
  NcclAllToAll(RunContext& ctx, const ExchangeLayout& dispatch, const ExchangeLayout& combine,
               const AllToAllHostBuffers& host)
      : ctx_(ctx),
        nccl_(ncclCommOfRun(ctx)),
        dispatch_(dispatch),
        combine_(combine),
        host_(host),
        dispatchOut_(bytesOf(dispatch.sendBytes)),
        dispatchIn_(bytesOf(dispatch.recvBytes)),
        combineOut_(bytesOf(combine.sendBytes)),
        combineIn_(bytesOf(combine.recvBytes)) {
    // Connection setup: one dispatch and one combine on scratch memory the
    // helper thread owns (it outlives this call if the deadline passes).
    const std::size_t scratchBytes = static_cast<std::size_t>(
        std::max({dispatch.sendBytes + dispatch.recvBytes, combine.sendBytes + combine.recvBytes, std::int64_t{2}}));
    nccl_.comm.runBounded(
        [dispatch, combine, scratchBytes](ncclComm_t c) {
          void* scratch = nullptr;
          cudaStream_t s = nullptr;
          auto done = [](cudaError_t e, const char* what) {
            if (e != cudaSuccess) throw RuntimeFailure(std::string(what) + ": " + cudaGetErrorString(e));
          };
          done(cudaMalloc(&scratch, scratchBytes), "cudaMalloc (NCCL all-to-all connection setup)");
          done(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate (NCCL connection setup)");
          auto* base = static_cast<std::byte*>(scratch);
          try {
            enqueueExchange(base, base + dispatch.sendBytes, dispatch, c, s);
            enqueueExchange(base, base + combine.sendBytes, combine, c, s);
          } catch (...) {
            cudaStreamSynchronize(s);
            cudaStreamDestroy(s);
            cudaFree(scratch);
            throw;
          }
          const auto synced = cudaStreamSynchronize(s);
          cudaStreamDestroy(s);
          cudaFree(scratch);
          done(synced, "cudaStreamSynchronize (NCCL all-to-all connection setup)");
        },
        nccl_.device, ctx.deadline, "the first NCCL all-to-all with every peer (connection setup)");
  }

  void firstDispatch() override {
    kernels::cuda::copy(dispatchOut_.data(), host_.dispatchOut, static_cast<std::size_t>(dispatch_.sendBytes));
    exchange(AllToAllPhase::dispatch);
    kernels::cuda::copy(host_.dispatchIn, dispatchIn_.data(), static_cast<std::size_t>(dispatch_.recvBytes));
  }
  void prepareTimed() override {
    kernels::cuda::copy(combineOut_.data(), host_.combineOut, static_cast<std::size_t>(combine_.sendBytes));
    kernels::cuda::memsetAsync(dispatchIn_.data(), 0, dispatchIn_.size(), stream_);
    kernels::cuda::memsetAsync(combineIn_.data(), 0, combineIn_.size(), stream_);
    nccl_.comm.waitStream(stream_.get(), ctx_.deadline, "clearing the all-to-all's GPU buffers");
  }
  void exchange(AllToAllPhase phase) override {
    enqueue(phase);
    nccl_.comm.waitStream(stream_.get(), ctx_.deadline,
                          phase == AllToAllPhase::dispatch ? "an NCCL MoE dispatch (all-to-all) to complete"
                                                           : "an NCCL MoE combine (all-to-all) to complete");
  }
  void exchangeBatch(AllToAllPhase phase, int calls) override {
    for (int i = 0; i < calls; ++i) enqueue(phase);
    nccl_.comm.waitStream(stream_.get(), ctx_.deadline, "NCCL all-to-alls launched back to back to complete");
  }
  void fetchResults() override {
    kernels::cuda::copy(host_.dispatchIn, dispatchIn_.data(), static_cast<std::size_t>(dispatch_.recvBytes));
    kernels::cuda::copy(host_.combineIn, combineIn_.data(), static_cast<std::size_t>(combine_.recvBytes));
  }

 private:
  static std::size_t bytesOf(std::int64_t bytes) { return static_cast<std::size_t>(std::max<std::int64_t>(bytes, 1)); }
  void enqueue(AllToAllPhase phase) {
    if (phase == AllToAllPhase::dispatch)
      enqueueExchange(static_cast<const std::byte*>(dispatchOut_.data()), static_cast<std::byte*>(dispatchIn_.data()),
                      dispatch_, nccl_.comm.get(), stream_.get());
    else
      enqueueExchange(static_cast<const std::byte*>(combineOut_.data()), static_cast<std::byte*>(combineIn_.data()),
                      combine_, nccl_.comm.get(), stream_.get());
  }

  RunContext& ctx_;
  NcclOnThisRank nccl_;
  ExchangeLayout dispatch_, combine_;
  AllToAllHostBuffers host_;
  kernels::cuda::DeviceBuffer dispatchOut_, dispatchIn_, combineOut_, combineIn_;
  kernels::cuda::Stream stream_;
};

}  // namespace

std::unique_ptr<AllToAllExchange> makeNcclAllToAll(RunContext& ctx, const ExchangeLayout& dispatch,
                                                   const ExchangeLayout& combine, const AllToAllHostBuffers& host) {
  return std::make_unique<NcclAllToAll>(ctx, dispatch, combine, host);
}

#else

std::unique_ptr<AllToAllExchange> makeNcclAllToAll(RunContext&, const ExchangeLayout&, const ExchangeLayout&,
                                                   const AllToAllHostBuffers&) {
  throw RuntimeFailure("this build has no NCCL (configure with CUDA and NCCL to run transport: nccl)");
}

#endif

}  // namespace fabscope::suite
