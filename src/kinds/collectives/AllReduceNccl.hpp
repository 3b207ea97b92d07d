#pragma once
// The NCCL path of the all-reduce test (GPU memory). Defined only in builds
// with NCCL; elsewhere it reports that the build has no NCCL.
#include <vector>

#include "kinds/Kind.hpp"
#include "kinds/collectives/CollectiveTimes.hpp"

namespace fabscope::suite {

// Runs warmup + iterations of ncclAllReduce over ctx.group on the GPU chosen
// by the local rank, records samples, and returns the reduced buffer (host copy).
// With `pipelined`, then runs pipelined->calls all-reduces back to back and
// stamps the batch in it (the result is that of the last call either way).
std::vector<float> runNcclAllReduce(RunContext& ctx, std::size_t count, float (*contribution)(int, std::size_t),
                                    PipelinedBatch* pipelined = nullptr);

}  // namespace fabscope::suite
