#pragma once
// An NCCL communicator over an MPI communicator's ranks, shared by the NCCL
// transport and the all-reduce test. Non-blocking mode, so that creation and
// every launch can be bounded by a deadline; a communicator that saw an error
// or a missed deadline is aborted, not destroyed, because ncclCommDestroy
// would wait for a peer that may be gone. Compiled only with NCCL.
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "runtime/Deadline.hpp"
#include "runtime/Errors.hpp"
#include "runtime/Mpi.hpp"

namespace fabscope::transport {

inline void checkNccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess && rc != ncclInProgress)
    throw RuntimeFailure(std::string(what) + " failed: " + ncclGetErrorString(rc));
}

class NcclComm {
 public:
  // Collective over `group`; the caller has selected this rank's GPU.
  NcclComm(const runtime::Communicator& group, const runtime::Deadline& deadline);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  void markBroken() { healthy_ = false; }

  // After a non-blocking call answered ncclInProgress: waits until NCCL has
  // finished it (enqueued the work, or initialised), bounded by `deadline`.
  void waitReady(const runtime::Deadline& deadline, const char* what);
  // Throws (and marks the communicator broken) if NCCL reports an
  // asynchronous error, e.g. a peer lost by the proxy thread.
  void checkAsyncError(const char* what);
  // Polls `stream` and NCCL's asynchronous error state until the work is done.
  void waitStream(cudaStream_t stream, const runtime::Deadline& deadline, const char* what);

 private:
  ncclComm_t comm_ = nullptr;
  bool healthy_ = true;
};

}  // namespace fabscope::transport
