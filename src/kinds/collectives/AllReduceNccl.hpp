#pragma once
// The NCCL path of the all-reduce test (GPU memory). Defined only in builds
// with NCCL; elsewhere it reports that the build has no NCCL.
#include <vector>

#include "kinds/Kind.hpp"

namespace fabscope::suite {

// Runs warmup + iterations of ncclAllReduce over ctx.group on the GPU chosen
// by the local rank, records samples, and returns the reduced buffer (host copy).
std::vector<float> runNcclAllReduce(RunContext& ctx, std::size_t count, float (*contribution)(int, std::size_t));

}  // namespace fabscope::suite
