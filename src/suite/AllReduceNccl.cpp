#include "suite/AllReduceNccl.hpp"

#include "fabscope/BuildConfig.hpp"

#if FABSCOPE_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>

#include "cuda/CudaApi.hpp"
#endif

namespace fabscope::suite {

#if FABSCOPE_HAVE_NCCL
namespace {

void checkNccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess) throw RuntimeFailure(std::string(what) + " failed: " + ncclGetErrorString(rc));
}

// Owns an NCCL communicator; aborts it (not destroys) when a peer may be gone,
// because ncclCommDestroy would wait for that peer.
class NcclComm {
 public:
  NcclComm(const runtime::Communicator& group, const runtime::Deadline& deadline) {
    ncclUniqueId id{};
    if (group.rank() == 0) checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    group.broadcast(&id, sizeof id, 0, deadline);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // so initialisation can be bounded by the deadline
    const auto rc = ncclCommInitRankConfig(&comm_, group.size(), id, group.rank(), &config);
    if (rc != ncclInProgress) checkNccl(rc, "ncclCommInitRankConfig");
    waitReady(deadline, "NCCL communicator initialisation");
  }
  ~NcclComm() {
    if (comm_) (healthy_ ? ncclCommDestroy(comm_) : ncclCommAbort(comm_));
  }
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ncclComm_t get() const { return comm_; }

  void waitReady(const runtime::Deadline& deadline, const char* what) {
    ncclResult_t state = ncclInProgress;
    runtime::waitUntil(
        [&] {
          ncclCommGetAsyncError(comm_, &state);
          return state != ncclInProgress;
        },
        deadline, what);
    if (state != ncclSuccess) {
      healthy_ = false;
      checkNccl(state, what);
    }
  }
  // Polls the stream and NCCL's asynchronous error state until the work is done.
  void waitStream(cudaStream_t stream, const runtime::Deadline& deadline) {
    try {
      runtime::waitUntil(
          [&] {
            ncclResult_t async = ncclSuccess;
            ncclCommGetAsyncError(comm_, &async);
            if (async != ncclSuccess && async != ncclInProgress) {
              healthy_ = false;
              checkNccl(async, "NCCL (asynchronous error)");
            }
            return cudaStreamQuery(stream) == cudaSuccess;
          },
          deadline, "an NCCL all-reduce to complete on the GPU");
    } catch (const DeadlineExceeded&) {
      healthy_ = false;
      throw;
    }
  }

 private:
  ncclComm_t comm_ = nullptr;
  bool healthy_ = true;
};

}  // namespace

std::vector<float> runNcclAllReduce(RunContext& ctx, std::size_t count, float (*contribution)(int, std::size_t)) {
  const int devices = kernels::cuda::deviceCount();
  if (devices == 0) throw RuntimeFailure("memory: cuda was requested but this host has no GPU");
  kernels::cuda::setDevice(ctx.identity.localRank % devices);
  const std::size_t bytes = count * sizeof(float);
  std::vector<float> host(count);
  for (std::size_t i = 0; i < count; ++i) host[i] = contribution(ctx.group.rank(), i);
  kernels::cuda::DeviceBuffer send(bytes), recv(bytes);
  kernels::cuda::copy(send.data(), host.data(), bytes);
  kernels::cuda::Stream stream;
  NcclComm comm(ctx.group, ctx.deadline);
  const auto& spec = *ctx.instance.spec;
  const int me = ctx.world.rank();
  for (int it = 0; it < spec.warmup + spec.iterations; ++it) {
    const auto t0 = runtime::monotonicNow();
    const auto rc = ncclAllReduce(send.data(), recv.data(), count, ncclFloat, ncclSum, comm.get(), stream.get());
    if (rc == ncclInProgress) comm.waitReady(ctx.deadline, "ncclAllReduce to be enqueued");
    else checkNccl(rc, "ncclAllReduce");
    comm.waitStream(stream.get(), ctx.deadline);
    const auto t1 = runtime::monotonicNow();
    if (it >= spec.warmup) ctx.samples.record(me, it - spec.warmup, -1, static_cast<std::int64_t>(bytes), t0, t1);
  }
  kernels::cuda::copy(host.data(), recv.data(), bytes);
  return host;
}

#else

std::vector<float> runNcclAllReduce(RunContext&, std::size_t, float (*)(int, std::size_t)) {
  throw RuntimeFailure("this build has no NCCL (configure with CUDA and NCCL to run transport: nccl)");
}

#endif

}  // namespace fabscope::suite
