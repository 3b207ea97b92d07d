#include "kinds/collectives/AllReduceNccl.hpp"

#include "fabscope/BuildConfig.hpp"

#if FABSCOPE_HAVE_NCCL
#include <string>

#include "cuda/CudaApi.hpp"
#include "kinds/collectives/NcclRunComm.hpp"
#include "transport/NcclComm.hpp"
#endif

namespace fabscope::suite {

#if FABSCOPE_HAVE_NCCL
using transport::checkNccl;
using transport::NcclComm;

namespace {
// The run-long communicator of one set of measuring ranks (RunCache).
struct NcclCommResource final : RunResource {
  NcclCommResource(const runtime::Communicator& group, int device, const runtime::Deadline& deadline)
      : comm(group, device, deadline) {}
  NcclComm comm;
};
}  // namespace

NcclOnThisRank ncclCommOfRun(RunContext& ctx) {
  const int devices = kernels::cuda::deviceCount();
  if (devices == 0) throw RuntimeFailure("memory: cuda was requested but this host has no GPU");
  kernels::cuda::setDevice(ctx.identity.localRank % devices);
  const int device = kernels::cuda::currentDevice();
  std::string key = "nccl-collectives";
  for (const int r : ctx.participants) key += " " + std::to_string(r);
  auto* cached = ctx.runCache.find<NcclCommResource>(key);
  if (!cached || !cached->comm.healthy())
    cached = &ctx.runCache.put(key, std::make_unique<NcclCommResource>(ctx.group, device, ctx.deadline));
  return {cached->comm, device};
}

std::vector<float> runNcclAllReduce(RunContext& ctx, std::size_t count, float (*contribution)(int, std::size_t),
                                    PipelinedBatch* pipelined) {
  auto [comm, device] = ncclCommOfRun(ctx);
  const std::size_t bytes = count * sizeof(float);
  std::vector<float> host(count);
  for (std::size_t i = 0; i < count; ++i) host[i] = contribution(ctx.group.rank(), i);
  kernels::cuda::DeviceBuffer send(bytes), recv(bytes);
  kernels::cuda::copy(send.data(), host.data(), bytes);
  kernels::cuda::Stream stream;
  // One all-reduce of this size on a bounded helper thread first, so NCCL's
  // lazy connection setup for the algorithm this size uses cannot hang the loop.
  comm.runBounded(
      [count](ncclComm_t c) {
        void* scratch = nullptr;
        cudaStream_t s = nullptr;
        auto done = [&](cudaError_t e, const char* what) {
          if (e != cudaSuccess) throw RuntimeFailure(std::string(what) + ": " + cudaGetErrorString(e));
        };
        done(cudaMalloc(&scratch, 2 * count * sizeof(float)), "cudaMalloc (NCCL connection setup)");
        done(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate (NCCL connection setup)");
        const auto rc = ncclAllReduce(scratch, static_cast<float*>(scratch) + count, count, ncclFloat, ncclSum, c, s);
        const auto synced = cudaStreamSynchronize(s);
        cudaStreamDestroy(s);
        cudaFree(scratch);
        checkNccl(rc, "ncclAllReduce (connection setup)");
        done(synced, "cudaStreamSynchronize (NCCL connection setup)");
      },
      device, ctx.deadline, "the first NCCL all-reduce of " + std::to_string(bytes) + " bytes (connection setup)");
  const auto& spec = *ctx.instance.spec;
  const int me = ctx.world.rank();
  for (int it = 0; it < spec.warmup + spec.iterations; ++it) {
    const auto t0 = runtime::monotonicNow();
    checkNccl(ncclAllReduce(send.data(), recv.data(), count, ncclFloat, ncclSum, comm.get(), stream.get()),
              "ncclAllReduce");
    comm.waitStream(stream.get(), ctx.deadline, "an NCCL all-reduce to complete on the GPU");
    const auto t1 = runtime::monotonicNow();
    if (it >= spec.warmup) ctx.samples.record(me, it - spec.warmup, -1, static_cast<std::int64_t>(bytes), t0, t1);
  }
  if (pipelined) {
    // nccl-tests' convention: every call enqueued on the stream back to back,
    // one wait at the end; the ranks start together from a barrier.
    const int calls = pipelined->calls;
    ctx.group.barrier(ctx.deadline);
    const auto t0 = runtime::monotonicNow();
    for (int i = 0; i < calls; ++i)
      checkNccl(ncclAllReduce(send.data(), recv.data(), count, ncclFloat, ncclSum, comm.get(), stream.get()),
                "ncclAllReduce (pipelined)");
    comm.waitStream(stream.get(), ctx.deadline, "NCCL all-reduces launched back to back to complete on the GPU");
    pipelined->start_ns = t0;
    pipelined->end_ns = runtime::monotonicNow();
  }
  kernels::cuda::copy(host.data(), recv.data(), bytes);
  return host;
}

#else

std::vector<float> runNcclAllReduce(RunContext&, std::size_t, float (*)(int, std::size_t), PipelinedBatch*) {
  throw RuntimeFailure("this build has no NCCL (configure with CUDA and NCCL to run transport: nccl)");
}

#endif

}  // namespace fabscope::suite
