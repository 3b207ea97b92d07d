#include "transport/NcclComm.hpp"

#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <thread>

namespace fabscope::transport {

NcclComm::NcclComm(const runtime::Communicator& group, int device, const runtime::Deadline& deadline,
                   const std::function<void(ncclComm_t)>& connect) {
  ncclUniqueId id{};
  if (group.rank() == 0) checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  group.broadcast(&id, sizeof id, 0, deadline);
  // Shared with the helper thread, which outlives this constructor if the
  // deadline passes.
  struct Setup {
    std::promise<ncclComm_t> result;
    std::function<void(ncclComm_t)> connect;
  };
  auto setup = std::make_shared<Setup>();
  setup->connect = connect;
  auto future = setup->result.get_future();
  const int ranks = group.size(), rank = group.rank();
  std::thread([setup, id, ranks, rank, device] {
    try {
      if (cudaSetDevice(device) != cudaSuccess) throw RuntimeFailure("cudaSetDevice on the NCCL setup thread");
      ncclComm_t comm = nullptr;
      checkNccl(ncclCommInitRank(&comm, ranks, id, rank), "ncclCommInitRank");
      try {
        if (setup->connect) setup->connect(comm);
      } catch (...) {
        ncclCommAbort(comm);
        throw;
      }
      setup->result.set_value(comm);
    } catch (...) {
      setup->result.set_exception(std::current_exception());
    }
  }).detach();
  const auto left = std::chrono::nanoseconds(std::max<runtime::Nanoseconds>(0, deadline.at() - runtime::monotonicNow()));
  if (future.wait_for(left) != std::future_status::ready)
    deadline.fail("NCCL communicator creation and first connection to every peer (" + std::to_string(ranks) +
                  " ranks)");
  comm_ = future.get();
}

NcclComm::~NcclComm() {
  if (comm_) (healthy_ ? ncclCommDestroy(comm_) : ncclCommAbort(comm_));
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
          const auto state = cudaStreamQuery(stream);
          if (state == cudaSuccess) return true;
          if (state != cudaErrorNotReady)
            throw RuntimeFailure(std::string(what) + ": CUDA error " + cudaGetErrorString(state));
          checkAsyncError(what);
          return false;
        },
        deadline, what);
  } catch (...) {
    healthy_ = false;
    throw;
  }
}

}  // namespace fabscope::transport
