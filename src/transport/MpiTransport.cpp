#include "transport/MpiTransport.hpp"

#include <algorithm>

#include "scenario/TestSource.hpp"
#include "transport/TransportEntry.hpp"

namespace fabscope::transport {

// transports: {mpi: {wait: polled|blocking}}: blocking waits in MPI_Wait
// (osu_latency's way, the reply seen sooner) with the watchdog as their only
// deadline; polled (the default) waits in MPI_Test loops that end at the
// test's deadline and let the run go on (docs/transports.md). The struct, its
// keys and its parse step are here, beside the code that acts on them, so a new
// key of the MPI transport touches this file only.
struct MpiSettings : scenario::TransportSettings {
  bool blockingWaits = false;
  std::string waitFrom;  // "file:line:column" that set it

  std::vector<scenario::TransportSettingValue> values() const override {
    return {{"wait", blockingWaits ? "blocking" : "polled", waitFrom}};
  }

  static scenario::TransportRules rules() { return {{"wait"}, "{wait: blocking}", parse}; }

  static std::shared_ptr<const scenario::TransportSettings> parse(const scenario::TransportSource& source) {
    auto settings = std::make_shared<MpiSettings>();
    if (source.has("wait")) {
      const std::string wait = source.text("wait");
      if (wait != "polled" && wait != "blocking")
        source.fail("wait", "'wait' is '" + wait + "'; expected polled or blocking");
      settings->blockingWaits = wait == "blocking";
      settings->waitFrom = source.where("wait");
    }
    return settings;
  }
};

namespace {
// How long reset() lets in-flight transfers finish before cancelling them.
constexpr runtime::Nanoseconds resetGraceNs = 2'000'000'000;
}  // namespace

using runtime::checkMpi;

// A data-path call failed: the error goes to the transport's report (with the
// peer, for the result file), then up as an exception.
void MpiTransport::fail(int rc, int peer, const char* call) const {
  reportError({runtime::monotonicNow(), peer, std::string(call) + " returned an error"});
  checkMpi(rc, call);
}

MpiTransport::MpiTransport(const runtime::Communicator& world, const MpiSettings& settings,
                           const runtime::Deadline& deadline)
    : world_(world.handle()), blockingWaits_(settings.blockingWaits) {
  duplicate(world_, deadline);
}

MpiTransport::~MpiTransport() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiTransport::duplicate(MPI_Comm from, const runtime::Deadline& deadline) {
  MPI_Request r;
  checkMpi(runtime::startDuplicate(from, &comm_, &r), "MPI_Comm_idup");
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
  if (static_cast<int>(peers_.size()) < slots)
    peers_.resize(static_cast<std::size_t>(slots), runtime::watchdog::noPeer);
  if (static_cast<int>(deferred_.size()) < slots) deferred_.resize(static_cast<std::size_t>(slots));
}

void MpiTransport::postSend(int slot, int peer, int tag, const void* buffer, std::size_t bytes) {
  peers_[static_cast<std::size_t>(slot)] = peer;
  if (blockingWaits_ && bytes <= inlineBytes) {
    const runtime::watchdog::Watch watch("an MPI_Send to a peer rank", testDeadline_, peer);
    const int rc = MPI_Send(buffer, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_);
    if (rc != MPI_SUCCESS) fail(rc, peer, "MPI_Send");
    requests_[static_cast<std::size_t>(slot)] = MPI_REQUEST_NULL;  // done: nothing to wait for
    return;
  }
  checkMpi(MPI_Isend(buffer, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_,
                     &requests_[static_cast<std::size_t>(slot)]),
           "MPI_Isend");
}

void MpiTransport::postRecv(int slot, int peer, int tag, void* buffer, std::size_t bytes) {
  peers_[static_cast<std::size_t>(slot)] = peer;
  if (blockingWaits_ && bytes <= inlineBytes) {
    deferred_[static_cast<std::size_t>(slot)] = {buffer, static_cast<int>(bytes), tag, true};
    return;
  }
  checkMpi(MPI_Irecv(buffer, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm_,
                     &requests_[static_cast<std::size_t>(slot)]),
           "MPI_Irecv");
}

void MpiTransport::postDeferred(int slot) {
  auto& d = deferred_[static_cast<std::size_t>(slot)];
  d.pending = false;
  checkMpi(MPI_Irecv(d.buffer, d.bytes, MPI_BYTE, peers_[static_cast<std::size_t>(slot)], d.tag, comm_,
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
    if (blockingWaits_ && deferred_[static_cast<std::size_t>(i)].pending) postDeferred(i);
    MPI_Request& request = requests_[static_cast<std::size_t>(i)];
    if (request == MPI_REQUEST_NULL) continue;
    int done = 0;
    const int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) fail(rc, peers_[static_cast<std::size_t>(i)], "MPI_Test");
    if (!done) return false;
  }
  return true;
}

void MpiTransport::waitSlots(int first, int count, const runtime::Deadline& deadline) {
  if (!blockingWaits_) {
    Transport::waitSlots(first, count, deadline);
    return;
  }
  // A test that runs past its deadline fails within 64 waits of it, as a polled
  // wait would (a clock read per wait would cost what MPI_Wait saves). A wait
  // that never returns (a silent peer) is the watchdog's: MPI_Wait cannot end
  // at a deadline.
  if (++waitsSinceClock_ >= 64) {
    waitsSinceClock_ = 0;
    if (deadline.expired()) deadline.fail(waitDescription());
  }
  const runtime::watchdog::Watch watch(waitDescription(), deadline.at(), peerOfSlots(first, count));
  if (count == 1 && deferred_[static_cast<std::size_t>(first)].pending) {
    auto& d = deferred_[static_cast<std::size_t>(first)];
    d.pending = false;
    const int peer = peers_[static_cast<std::size_t>(first)];
    const int rc = MPI_Recv(d.buffer, d.bytes, MPI_BYTE, peer, d.tag, comm_, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) fail(rc, peer, "MPI_Recv");
    return;
  }
  // Several slots: every noted receive is posted before any wait, so none of
  // them waits for another's message.
  for (int i = first; i < first + count; ++i)
    if (deferred_[static_cast<std::size_t>(i)].pending) postDeferred(i);
  for (int i = first; i < first + count; ++i) {
    MPI_Request& request = requests_[static_cast<std::size_t>(i)];
    if (request == MPI_REQUEST_NULL) continue;
    const int rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) fail(rc, peers_[static_cast<std::size_t>(i)], "MPI_Wait");
  }
}

// Only the choice away from the default is recorded: a default run's file keeps
// the structure it always had (no /transports/mpi).
std::vector<std::pair<std::string, std::string>> MpiTransport::describe() const {
  if (!blockingWaits_) return {};
  return {{"mpi_wait", "blocking (MPI_Wait; MPI_Send and MPI_Recv up to " + std::to_string(inlineBytes) +
                           " bytes; bounded by the watchdog, which ends the run)"}};
}

int MpiTransport::peerOfSlots(int first, int count) const {
  int peer = runtime::watchdog::noPeer;
  for (int i = first; i < first + count; ++i) {
    const bool noted = static_cast<std::size_t>(i) < deferred_.size() && deferred_[static_cast<std::size_t>(i)].pending;
    if (requests_[static_cast<std::size_t>(i)] == MPI_REQUEST_NULL && !noted) continue;
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
  // A noted receive was never posted: whatever its peer sent stays with the old
  // communicator, freed below.
  for (auto& d : deferred_) d.pending = false;
  MPI_Comm old = comm_;
  duplicate(world_, deadline);
  MPI_Comm_free(&old);
}

namespace {
std::unique_ptr<Transport> openMpiTransport(const runtime::Communicator& world, int, const OpenRequest& request,
                                            const runtime::Deadline& deadline) {
  return std::make_unique<MpiTransport>(world, settingsIn<MpiSettings>(request, "mpi"), deadline);
}
}  // namespace

const TransportEntry& mpiTransportEntry() {
  static const TransportEntry entry{
      "mpi", "", {.collectives = Collectives::host}, MpiSettings::rules(), openMpiTransport};
  return entry;
}

}  // namespace fabscope::transport
