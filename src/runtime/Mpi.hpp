#pragma once
// MPI is fabscope's control plane. Every collective here is the non-blocking
// form completed under a Deadline, so a lost rank becomes an error, not a hang.
#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/Deadline.hpp"

namespace fabscope::runtime {

class LossChannel;

// Owns MPI_Init/MPI_Finalize for the life of the program.
class MpiEnvironment {
 public:
  MpiEnvironment(int& argc, char**& argv);
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  // Ends the whole job now (used when a peer is lost and collectives cannot finish).
  [[noreturn]] static void abortJob(int code);
};

// A communicator; owns it (MPI_Comm_free) unless it is MPI_COMM_WORLD/SELF.
class Communicator {
 public:
  explicit Communicator(MPI_Comm comm, bool owned = false);
  ~Communicator();
  Communicator(Communicator&& other) noexcept;
  Communicator& operator=(Communicator&& other) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  static Communicator world() { return Communicator(MPI_COMM_WORLD); }

  MPI_Comm handle() const noexcept { return comm_; }
  // Waits on this communicator (and on those split from it) also watch
  // `channel`: a loss round another rank started ends them at once
  // (LossRoundStarted) instead of at their deadline.
  void watchLosses(const LossChannel* channel) noexcept { losses_ = channel; }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

  void barrier(const Deadline& deadline) const;
  void broadcast(void* data, int bytes, int root, const Deadline& deadline) const;
  std::string broadcastString(const std::string& text, int root, const Deadline& deadline) const;
  std::int64_t allreduceMax(std::int64_t v, const Deadline& d) const { return allreduce(v, MPI_MAX, d); }
  std::int64_t allreduceMin(std::int64_t v, const Deadline& d) const { return allreduce(v, MPI_MIN, d); }
  std::int64_t allreduceSum(std::int64_t v, const Deadline& d) const { return allreduce(v, MPI_SUM, d); }
  // Every rank's value, on every rank.
  std::vector<std::int64_t> allgather(std::int64_t value, const Deadline& deadline) const;
  // Concatenation of every rank's bytes at `root` (empty elsewhere), with the
  // byte count each rank sent.
  std::vector<std::byte> gatherBytes(std::span<const std::byte> mine, int root, std::vector<int>& countsOut,
                                     const Deadline& deadline) const;
  std::vector<std::string> gatherStrings(const std::string& mine, int root, const Deadline& deadline) const;

  // MPI has no non-blocking split. Every rank first shows up in a barrier
  // bounded by `deadline` (a lost peer becomes DeadlineExceeded there), then
  // the split runs with every rank known to be present.
  Communicator split(int color, int key, const Deadline& deadline) const;
  // A duplicate (MPI_Comm_idup, completed under `deadline`): the same ranks
  // with a separate matching of messages and collectives.
  Communicator duplicate(const Deadline& deadline) const;

  // Waits for a non-blocking operation on this communicator (a collective a kind
  // posted itself), bounded by `deadline`, watching for lost ranks meanwhile.
  void complete(MPI_Request& request, const Deadline& deadline, const char* what) const;

 private:
  std::int64_t allreduce(std::int64_t value, MPI_Op op, const Deadline& deadline) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
  const LossChannel* losses_ = nullptr;
  int rank_ = 0;
  int size_ = 0;
};

// The MPI library's own version text (callable before MPI_Init), "" if unknown.
std::string mpiLibraryVersion();

// Throws RuntimeFailure with `what` and MPI's own error text when rc != MPI_SUCCESS.
void checkMpi(int rc, const char* what);

// Starts a duplicate of `from` into `out` (MPI_Comm_idup); the caller completes
// `request` under its deadline. Built for SimGrid SMPI (FABSCOPE_SMPI), which has
// no MPI_Comm_idup, the duplicate is made at once with MPI_Comm_dup and
// `request` is MPI_REQUEST_NULL (complete at its first test).
int startDuplicate(MPI_Comm from, MPI_Comm* out, MPI_Request* request);

}  // namespace fabscope::runtime
