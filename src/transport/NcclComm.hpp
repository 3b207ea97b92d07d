#pragma once
// An NCCL communicator over an MPI communicator's ranks, shared by the NCCL
// transport and the all-reduce test. Compiled only with NCCL.
//
// Blocking mode, as a plain NCCL program uses it: non-blocking communicators
// run every launch as an asynchronous group job on a thread of its own, which
// cost 40 us per all-reduce on an H200 pair, and 4 ms (a scheduler tick) when
// mpirun bound each rank to one core. The calls that can block on a peer —
// creation and the first connection to each peer — run on a helper thread
// that the caller waits for under its deadline; if the deadline passes, the
// run fails (that thread cannot be interrupted and ends with the process).
// Launches after that only enqueue work, and completion is polled on the
// stream together with NCCL's asynchronous error state, under the deadline.
// A communicator that saw an error or a missed deadline is aborted, not
// destroyed, because ncclCommDestroy would wait for a peer that may be gone.
#include <cuda_runtime.h>
#include <nccl.h>

#include <functional>
#include <string>

#include "runtime/Deadline.hpp"
#include "runtime/Errors.hpp"
#include "runtime/Mpi.hpp"

namespace fabscope::transport {

inline void checkNccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess) throw RuntimeFailure(std::string(what) + " failed: " + ncclGetErrorString(rc));
}

class NcclComm {
 public:
  // Collective over `group`, on GPU `device`. `connect` (optional) runs on the
  // helper thread right after creation, e.g. one small operation with every
  // peer so that NCCL's lazy connection setup is inside the bounded part; it
  // must leave its work finished on the GPU.
  NcclComm(const runtime::Communicator& group, int device, const runtime::Deadline& deadline,
           const std::function<void(ncclComm_t)>& connect = {});
  // A non-blocking communicator (ncclConfig_t::blocking = 0), for a fault
  // drill whose survivors must never block inside NCCL: creation returns at
  // once and is polled under `deadline`; a launch may return ncclInProgress
  // (enqueued when asyncState() is ncclSuccess again). Costs a group job per
  // launch (see above), which a drill does not measure.
  struct NonBlocking {};
  NcclComm(const runtime::Communicator& group, int device, const runtime::Deadline& deadline, NonBlocking);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  void markBroken() { healthy_ = false; }
  bool healthy() const { return healthy_; }

  // Runs `work` (NCCL calls that may block on a peer, e.g. the first operation
  // of a new size, which connects lazily) on a helper thread on GPU `device`
  // and waits for it under `deadline`; past the deadline the communicator is
  // marked broken and DeadlineExceeded is thrown (the thread ends with the
  // process). `work` must own everything it touches.
  void runBounded(std::function<void(ncclComm_t)> work, int device, const runtime::Deadline& deadline,
                  const std::string& what);

  // Throws (and marks the communicator broken) if NCCL reports an
  // asynchronous error, e.g. a peer lost by the proxy thread.
  void checkAsyncError(const char* what);
  // NCCL's asynchronous error state, polled once: ncclSuccess, ncclInProgress or the error.
  ncclResult_t asyncState() const;
  // ncclCommAbort on a helper thread on GPU `device` (it may block, also on a
  // non-blocking communicator), waited for until `deadline`: true when it
  // returned (false also when the helper thread could not select the GPU).
  // Either way the communicator is gone from this object; an abort
  // that did not return keeps its thread, which ends with the process.
  bool abortBy(int device, const runtime::Deadline& deadline);
  // Polls `stream` and NCCL's asynchronous error state until the work is done.
  void waitStream(cudaStream_t stream, const runtime::Deadline& deadline, const char* what);

 private:
  ncclComm_t comm_ = nullptr;
  bool healthy_ = true;
};

}  // namespace fabscope::transport
