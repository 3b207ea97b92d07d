#include "transport/NcclComm.hpp"

#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>

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
  const auto left =
      std::chrono::nanoseconds(std::max<runtime::Nanoseconds>(0, deadline.at() - runtime::monotonicNow()));
  if (future.wait_for(left) != std::future_status::ready) deadline.fail(what);
  return future.get();
}

// Rank 0's unique id, known to every rank of `group`.
ncclUniqueId sharedUniqueId(const runtime::Communicator& group, const runtime::Deadline& deadline) {
  ncclUniqueId id{};
  if (group.rank() == 0) checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  group.broadcast(&id, sizeof id, 0, deadline);
  return id;
}

}  // namespace

NcclComm::NcclComm(const runtime::Communicator& group, int device, const runtime::Deadline& deadline,
                   const std::function<void(ncclComm_t)>& connect) {
  const ncclUniqueId id = sharedUniqueId(group, deadline);
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

NcclComm::NcclComm(const runtime::Communicator& group, int device, const runtime::Deadline& deadline, NonBlocking) {
  const ncclUniqueId id = sharedUniqueId(group, deadline);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const auto rc = ncclCommInitRankConfig(&comm_, group.size(), id, group.rank(), &config);
  if (rc != ncclInProgress) checkNccl(rc, "ncclCommInitRankConfig (non-blocking)");
  try {
    runtime::waitUntil(
        [&] {
          const auto state = asyncState();
          if (state != ncclInProgress) checkNccl(state, "non-blocking NCCL communicator creation");
          return state == ncclSuccess;
        },
        deadline, "non-blocking NCCL communicator creation with every peer");
  } catch (...) {
    // Nothing to wait for on a peer that never came: aborted, bounded.
    (void)abortBy(device, runtime::Deadline::afterSeconds(5));
    throw;
  }
}

ncclResult_t NcclComm::asyncState() const {
  ncclResult_t state = ncclSuccess;
  const auto rc = ncclCommGetAsyncError(comm_, &state);
  return rc == ncclSuccess ? state : rc;
}

bool NcclComm::abortBy(int device, const runtime::Deadline& deadline) {
  if (!comm_) return true;
  const ncclComm_t comm = std::exchange(comm_, nullptr);
  healthy_ = false;
  try {
    // Its status is not waited on: whatever it says, the communicator is gone.
    onHelperThread<void>([comm] { (void)ncclCommAbort(comm); }, device, deadline, "ncclCommAbort");
    return true;
  } catch (const RuntimeFailure&) {
    // Past the deadline, or the helper thread could not select the GPU: not aborted.
    return false;
  }
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
