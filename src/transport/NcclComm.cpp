#include "transport/NcclComm.hpp"

#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <thread>
#include <type_traits>

namespace fabscope::transport {

namespace {

// Runs `work` on a detached thread (GPU `device` selected there) and returns
// its result, or fails `deadline` if it has not finished by then.
template <typename Result>
Result onHelperThread(std::function<Result()> work, int device, const runtime::Deadline& deadline,
                      const std::string& what) {
  // Shared with the thread, which outlives this call if the deadline passes.
  auto promise = std::make_shared<std::promise<Result>>();
  auto future = promise->get_future();
  std::thread([promise, work = std::move(work), device] {
    try {
      if (cudaSetDevice(device) != cudaSuccess) throw RuntimeFailure("cudaSetDevice on an NCCL helper thread");
      if constexpr (std::is_void_v<Result>) {
        work();
        promise->set_value();
      } else {
        promise->set_value(work());
      }
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  }).detach();
  const auto left = std::chrono::nanoseconds(std::max<runtime::Nanoseconds>(0, deadline.at() - runtime::monotonicNow()));
  if (future.wait_for(left) != std::future_status::ready) deadline.fail(what);
  return future.get();
}

}  // namespace

NcclComm::NcclComm(const runtime::Communicator& group, int device, const runtime::Deadline& deadline,
                   const std::function<void(ncclComm_t)>& connect) {
  ncclUniqueId id{};
  if (group.rank() == 0) checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  group.broadcast(&id, sizeof id, 0, deadline);
  const int ranks = group.size(), rank = group.rank();
  comm_ = onHelperThread<ncclComm_t>(
      [id, ranks, rank, connect] {
        ncclComm_t comm = nullptr;
        checkNccl(ncclCommInitRank(&comm, ranks, id, rank), "ncclCommInitRank");
        try {
          if (connect) connect(comm);
        } catch (...) {
          ncclCommAbort(comm);
          throw;
        }
        return comm;
      },
      device, deadline,
      "NCCL communicator creation and first connection to every peer (" + std::to_string(ranks) + " ranks)");
}

void NcclComm::runBounded(std::function<void(ncclComm_t)> work, int device, const runtime::Deadline& deadline,
                          const std::string& what) {
  try {
    onHelperThread<void>([work = std::move(work), comm = comm_] { work(comm); }, device, deadline, what);
  } catch (...) {
    healthy_ = false;
    throw;
  }
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
