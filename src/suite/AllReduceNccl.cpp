#include "suite/AllReduceNccl.hpp"

#include "fabscope/BuildConfig.hpp"

#if FABSCOPE_HAVE_NCCL
#include "cuda/CudaApi.hpp"
#include "transport/NcclComm.hpp"
#endif

namespace fabscope::suite {

#if FABSCOPE_HAVE_NCCL
using transport::checkNccl;
using transport::NcclComm;

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
    checkNccl(rc, "ncclAllReduce");
    if (rc == ncclInProgress) comm.waitReady(ctx.deadline, "ncclAllReduce to be enqueued");
    comm.waitStream(stream.get(), ctx.deadline, "an NCCL all-reduce to complete on the GPU");
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
