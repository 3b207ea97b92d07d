#include "runtime/Mpi.hpp"

#include "fabscope/BuildConfig.hpp"
#include "runtime/Deadlines.hpp"
#include "runtime/LossChannel.hpp"
#include "runtime/Watchdog.hpp"

#include <cstring>
#include <utility>

namespace fabscope::runtime {

std::string mpiLibraryVersion() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(version, &length) != MPI_SUCCESS) return {};
  // Open MPI counts the terminating NUL in `length`; keep the text only.
  std::string text(version, strnlen(version, static_cast<std::size_t>(length)));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

int startDuplicate(MPI_Comm from, MPI_Comm* out, MPI_Request* request) {
#if FABSCOPE_SMPI
  *request = MPI_REQUEST_NULL;
  return MPI_Comm_dup(from, out);
#else
  return MPI_Comm_idup(from, out, request);
#endif
}

void checkMpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw RuntimeFailure(std::string(what) + " failed: " + std::string(text, len));
}

MpiEnvironment::MpiEnvironment(int& argc, char**& argv) {
  // Plain MPI_Init (thread level SINGLE): with any higher level Open MPI 4.1
  // takes locks on every call, which added ~140 ns to an 8-byte ping-pong
  // (measured with tests/bench/mpi_overhead.sh). Only the main thread calls MPI.
  checkMpi(MPI_Init(&argc, &argv), "MPI_Init");
  // Errors come back as codes so they turn into exceptions with context.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  // A rank the watchdog ends takes the job with it (see watchdog::setJobEnder).
  watchdog::setJobEnder([](int code) { MPI_Abort(MPI_COMM_WORLD, code); });
}

MpiEnvironment::~MpiEnvironment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // MPI_Finalize synchronises with every rank: one that died or was stopped
  // keeps it from returning. Bounded by the watchdog like any wait.
  const watchdog::Watch watch("MPI_Finalize (every rank leaves MPI together)",
                              watchdog::secondsFromNow(deadlines::finalizeSeconds), watchdog::everyRank);
  if (!finalized) MPI_Finalize();
  watchdog::setJobEnder(nullptr);  // MPI_Abort is not allowed after MPI_Finalize
}

void MpiEnvironment::abortJob(int code) {
  // MPI_Abort asks the launcher to end the job; if that never comes back the
  // watchdog ends this rank (with exit code 3) all the same.
  const watchdog::Watch watch("MPI_Abort (the launcher to end the job)",
                              watchdog::secondsFromNow(deadlines::abortSeconds));
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();
}

Communicator::Communicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Communicator::~Communicator() {
  if (owned_ && comm_ != MPI_COMM_NULL) {
    const watchdog::Watch watch("MPI_Comm_free", watchdog::secondsFromNow(deadlines::abortSeconds));
    MPI_Comm_free(&comm_);
  }
}

Communicator::Communicator(Communicator&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)),
      owned_(std::exchange(other.owned_, false)),
      losses_(other.losses_),
      rank_(other.rank_),
      size_(other.size_) {}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this != &other) {
    if (owned_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    owned_ = std::exchange(other.owned_, false);
    losses_ = other.losses_;
    rank_ = other.rank_;
    size_ = other.size_;
  }
  return *this;
}

void Communicator::complete(MPI_Request& request, const Deadline& deadline, const char* what) const {
#if FABSCOPE_SMPI
  // Simulated ranks cannot be lost, and SimGrid 3.32 keeps every receive that a
  // test completed in its actor's list of activities for the rest of the run, a
  // list searched from the front whenever one of them ends: polled, these control
  // messages (rank 0 receives one from every rank at each barrier) made that search
  // most of a 128-rank simulation's CPU. A wait removes what it completes.
  (void)deadline;
  checkMpi(MPI_Wait(&request, MPI_STATUS_IGNORE), what);
#else
  int done = 0;
  unsigned polls = 0;
  waitUntil(
      [&] {
        checkMpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
        if (done) return true;
        if (losses_ && (++polls & 255u) == 0) losses_->watch();
        return false;
      },
      deadline, what, watchdog::everyRank);
#endif
}

void Communicator::barrier(const Deadline& deadline) const {
  MPI_Request r;
  checkMpi(MPI_Ibarrier(comm_, &r), "MPI_Ibarrier");
  complete(r, deadline, "a barrier with all ranks");
}

void Communicator::broadcast(void* data, int bytes, int root, const Deadline& deadline) const {
  MPI_Request r;
  checkMpi(MPI_Ibcast(data, bytes, MPI_BYTE, root, comm_, &r), "MPI_Ibcast");
  complete(r, deadline, "a broadcast");
}

std::string Communicator::broadcastString(const std::string& text, int root, const Deadline& deadline) const {
  std::int64_t length = static_cast<std::int64_t>(text.size());
  broadcast(&length, sizeof length, root, deadline);
  std::string out = rank_ == root ? text : std::string(static_cast<std::size_t>(length), '\0');
  if (length > 0) broadcast(out.data(), static_cast<int>(length), root, deadline);
  return out;
}

std::int64_t Communicator::allreduce(std::int64_t value, MPI_Op op, const Deadline& deadline) const {
  std::int64_t out = 0;
  MPI_Request r;
  checkMpi(MPI_Iallreduce(&value, &out, 1, MPI_INT64_T, op, comm_, &r), "MPI_Iallreduce");
  complete(r, deadline, "an allreduce");
  return out;
}

std::vector<std::int64_t> Communicator::allgather(std::int64_t value, const Deadline& deadline) const {
  std::vector<std::int64_t> out(static_cast<std::size_t>(size_));
  MPI_Request r;
  checkMpi(MPI_Iallgather(&value, 1, MPI_INT64_T, out.data(), 1, MPI_INT64_T, comm_, &r), "MPI_Iallgather");
  complete(r, deadline, "an allgather");
  return out;
}

std::vector<std::byte> Communicator::gatherBytes(std::span<const std::byte> mine, int root, std::vector<int>& countsOut,
                                                 const Deadline& deadline) const {
  int count = static_cast<int>(mine.size());
  countsOut.assign(static_cast<std::size_t>(size_), 0);
  MPI_Request r;
  checkMpi(MPI_Igather(&count, 1, MPI_INT, countsOut.data(), 1, MPI_INT, root, comm_, &r), "MPI_Igather");
  complete(r, deadline, "a gather of sizes");
  std::vector<int> displacements(static_cast<std::size_t>(size_), 0);
  std::vector<std::byte> out;
  if (rank_ == root) {
    std::int64_t total = 0;
    for (int i = 0; i < size_; ++i) {
      displacements[static_cast<std::size_t>(i)] = static_cast<int>(total);
      total += countsOut[static_cast<std::size_t>(i)];
    }
    if (total > INT32_MAX) throw RuntimeFailure("gather of more than 2 GiB to one rank");
    out.resize(static_cast<std::size_t>(total));
  }
  checkMpi(MPI_Igatherv(mine.data(), count, MPI_BYTE, out.data(), countsOut.data(), displacements.data(), MPI_BYTE,
                        root, comm_, &r),
           "MPI_Igatherv");
  complete(r, deadline, "a gather of data");
  return out;
}

std::vector<std::string> Communicator::gatherStrings(const std::string& mine, int root,
                                                     const Deadline& deadline) const {
  std::vector<int> counts;
  auto bytes = gatherBytes(std::as_bytes(std::span(mine.data(), mine.size())), root, counts, deadline);
  std::vector<std::string> out;
  if (rank_ != root) return out;
  std::size_t offset = 0;
  for (int c : counts) {
    out.emplace_back(reinterpret_cast<const char*>(bytes.data()) + offset, static_cast<std::size_t>(c));
    offset += static_cast<std::size_t>(c);
  }
  return out;
}

Communicator Communicator::split(int color, int key, const Deadline& deadline) const {
  barrier(deadline);
  MPI_Comm out;
  {
    // Blocking, and its ranks do not leave it together: a rank stopped between
    // the barrier and here kept the others in it for ever, spinning with no
    // line at all (the no-hang campaign: three survivors silent for 32 s, rank
    // 0 never starting its loss round). The watchdog is its bound.
    const watchdog::Watch watch("every rank to split a communicator", deadline.at(), watchdog::everyRank);
    checkMpi(MPI_Comm_split(comm_, color, key, &out), "MPI_Comm_split");
  }
  Communicator split(out, true);
  split.losses_ = losses_;
  return split;
}

Communicator Communicator::duplicate(const Deadline& deadline) const {
  MPI_Comm out;
  MPI_Request r;
  checkMpi(startDuplicate(comm_, &out, &r), "MPI_Comm_idup");
  complete(r, deadline, "every rank to duplicate a communicator");
  MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN);
  Communicator copy(out, true);
  copy.losses_ = losses_;
  return copy;
}

}  // namespace fabscope::runtime
