#include "transport/NcclComm.hpp"

namespace fabscope::transport {

NcclComm::NcclComm(const runtime::Communicator& group, const runtime::Deadline& deadline) {
  ncclUniqueId id{};
  if (group.rank() == 0) checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  group.broadcast(&id, sizeof id, 0, deadline);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  checkNccl(ncclCommInitRankConfig(&comm_, group.size(), id, group.rank(), &config), "ncclCommInitRankConfig");
  waitReady(deadline, "NCCL communicator initialisation");
}

NcclComm::~NcclComm() {
  if (comm_) (healthy_ ? ncclCommDestroy(comm_) : ncclCommAbort(comm_));
}

void NcclComm::waitReady(const runtime::Deadline& deadline, const char* what) {
  ncclResult_t state = ncclInProgress;
  try {
    runtime::waitUntil(
        [&] {
          ncclCommGetAsyncError(comm_, &state);
          return state != ncclInProgress;
        },
        deadline, what);
  } catch (const DeadlineExceeded&) {
    healthy_ = false;
    throw;
  }
  if (state != ncclSuccess) {
    healthy_ = false;
    checkNccl(state, what);
  }
}

void NcclComm::checkAsyncError(const char* what) {
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(comm_, &async);
  if (async != ncclSuccess && async != ncclInProgress) {
    healthy_ = false;
    throw RuntimeFailure(std::string(what) + ": NCCL reported an asynchronous error: " + ncclGetErrorString(async));
  }
}

void NcclComm::waitStream(cudaStream_t stream, const runtime::Deadline& deadline, const char* what) {
  try {
    runtime::waitUntil(
        [&] {
          checkAsyncError(what);
          return cudaStreamQuery(stream) == cudaSuccess;
        },
        deadline, what);
  } catch (const DeadlineExceeded&) {
    healthy_ = false;
    throw;
  }
}

}  // namespace fabscope::transport
