#include "transport/MpiTransport.hpp"

#include <algorithm>

namespace fabscope::transport {

namespace {
// How long reset() lets in-flight transfers finish before cancelling them.
constexpr runtime::Nanoseconds resetGraceNs = 2'000'000'000;
}  // namespace

using runtime::checkMpi;

MpiTransport::MpiTransport(const runtime::Communicator& world, const runtime::Deadline& deadline)
    : world_(world.handle()) {
  duplicate(world_, deadline);
}

MpiTransport::~MpiTransport() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiTransport::duplicate(MPI_Comm from, const runtime::Deadline& deadline) {
  MPI_Request r;
  checkMpi(MPI_Comm_idup(from, &comm_, &r), "MPI_Comm_idup");
  int done = 0;
  runtime::waitUntil(
      [&] {
        checkMpi(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test(comm dup)");
        return done != 0;
      },
      deadline, "all ranks to set up the MPI transport");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
}

void MpiTransport::reserve(int slots) {
  if (static_cast<int>(requests_.size()) < slots) requests_.resize(static_cast<std::size_t>(slots), MPI_REQUEST_NULL);
  if (static_cast<int>(peers_.size()) < slots) peers_.resize(static_cast<std::size_t>(slots), runtime::watchdog::noPeer);
}

void MpiTransport::postSend(int slot, int peer, int tag, const void* buffer, std::size_t bytes) {
  peers_[static_cast<std::size_t>(slot)] = peer;
  checkMpi(MPI_Isend(buffer, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_,
                     &requests_[static_cast<std::size_t>(slot)]),
           "MPI_Isend");
}

void MpiTransport::postRecv(int slot, int peer, int tag, void* buffer, std::size_t bytes) {
  peers_[static_cast<std::size_t>(slot)] = peer;
  checkMpi(MPI_Irecv(buffer, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_,
                     &requests_[static_cast<std::size_t>(slot)]),
           "MPI_Irecv");
}

bool MpiTransport::testSlots(int first, int count) {
  // One MPI_Test on the first request still pending, not MPI_Testall over the
  // whole window: Open MPI's Testall looks at every request on every poll, and a
  // 4 MiB message over shared memory takes a hundred or more polls (one fragment
  // each), so a window of 64 paid 64 checks per fragment (MPI_Waitall, which the
  // minimal program uses, pays one). A completed request is MPI_REQUEST_NULL, so
  // the slots before the pending one cost a comparison each, not a call.
  for (int i = first; i < first + count; ++i) {
    MPI_Request& request = requests_[static_cast<std::size_t>(i)];
    if (request == MPI_REQUEST_NULL) continue;
    int done = 0;
    const int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      reportError({runtime::monotonicNow(), peers_[static_cast<std::size_t>(i)], "MPI_Test returned an error"});
      checkMpi(rc, "MPI_Test");
    }
    if (!done) return false;
  }
  return true;
}

int MpiTransport::peerOfSlots(int first, int count) const {
  int peer = runtime::watchdog::noPeer;
  for (int i = first; i < first + count; ++i) {
    if (requests_[static_cast<std::size_t>(i)] == MPI_REQUEST_NULL) continue;
    const int p = peers_[static_cast<std::size_t>(i)];
    if (peer != runtime::watchdog::noPeer && p != peer) return runtime::watchdog::noPeer;  // several
    peer = p;
  }
  return peer;
}

void MpiTransport::reset(const runtime::Deadline& deadline) {
  // First let what is in flight finish (a matched rendezvous can be neither
  // cancelled nor abandoned: its peer would wait for it); then cancel what is
  // left, which is unmatched; then wait until MPI has let go of every buffer.
  int done = 0;
  auto allDone = [&] {
    MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE);
    return done != 0;
  };
  const auto grace = runtime::Deadline(std::min(deadline.at(), runtime::monotonicNow() + resetGraceNs));
  {
    const runtime::watchdog::Watch watch("transfers in flight to finish after a timeout", grace.at());
    while (!allDone() && !grace.expired()) runtime::betweenPolls();
  }
  if (!done) {
    for (auto& r : requests_)
      if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
    runtime::waitUntil(allDone, deadline, "outstanding transfers to be cancelled after a timeout");
  }
  MPI_Comm old = comm_;
  duplicate(world_, deadline);
  MPI_Comm_free(&old);
}

}  // namespace fabscope::transport
