#pragma once
// The NCCL communicator the collective tests share for the whole run, one per
// set of measuring ranks, as a serving engine keeps one (NCCL communicators on
// a GPU pair were seen to differ by ~7% in speed, so one per instance would
// give each size its own). Only in builds with NCCL.
#include "fabscope/BuildConfig.hpp"

#if FABSCOPE_HAVE_NCCL
#include "kinds/Kind.hpp"
#include "transport/NcclComm.hpp"

namespace fabscope::suite {

struct NcclOnThisRank {
  transport::NcclComm& comm;
  int device;  // the GPU of this rank, now the current one
};

// Selects this local rank's GPU and returns the run's communicator over
// ctx.participants (created under ctx.deadline when there is none or the last
// one broke). Throws RuntimeFailure on a host without a GPU.
NcclOnThisRank ncclCommOfRun(RunContext& ctx);

}  // namespace fabscope::suite
#endif
