#include "conditions/NeighbourLoad.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "fabscope/BuildConfig.hpp"
#include "memory/HostBuffer.hpp"
#if FABSCOPE_HAVE_CUDA
#include "cuda/CopyLoad.hpp"
#include "cuda/CudaApi.hpp"
#endif

namespace fabscope::conditions {
namespace {

constexpr int loadTag = 901;
constexpr int stopTag = 902;
constexpr int loadWindow = 4;

}  // namespace

int minCongestors(const std::string& condition) {
  return condition == "incast" || condition == "alltoall" || condition == "bidirectional" ? 2 : 0;
}

LoadGraph planLoad(const std::string& condition, const suite::RoleAssignment& roles,
                   const std::vector<std::string>& hostOfRank) {
  const int world = static_cast<int>(hostOfRank.size());
  LoadGraph g;
  g.destinations.assign(static_cast<std::size_t>(world), {});
  g.sourceCount.assign(static_cast<std::size_t>(world), 0);
  const auto& c = roles.congestors;
  auto link = [&](int from, int to) {
    g.destinations[static_cast<std::size_t>(from)].push_back(to);
    ++g.sourceCount[static_cast<std::size_t>(to)];
  };
  if (condition == "incast") {
    if (static_cast<int>(c.size()) < minCongestors(condition))
      throw UsageError("condition 'incast' needs at least 2 congestor ranks (a target and a sender)");
    int target = c.front();
    const auto& victimHost = hostOfRank[static_cast<std::size_t>(roles.canaries.back())];
    for (int r : c)
      if (hostOfRank[static_cast<std::size_t>(r)] == victimHost) target = r;
    for (int r : c)
      if (r != target) link(r, target);
    g.description = std::to_string(c.size() - 1) + " congestors stream to rank " + std::to_string(target) + " on " +
                    hostOfRank[static_cast<std::size_t>(target)];
  } else if (condition == "alltoall") {
    if (static_cast<int>(c.size()) < minCongestors(condition))
      throw UsageError("condition 'alltoall' needs at least 2 congestor ranks");
    for (int a : c)
      for (int b : c)
        if (a != b) link(a, b);
    g.description = "all-to-all among " + std::to_string(c.size()) + " congestors";
  } else if (condition == "bidirectional") {
    if (static_cast<int>(c.size()) < minCongestors(condition))
      throw UsageError("condition 'bidirectional' needs at least 2 congestor ranks");
    // Pair congestors across hosts where possible: first half with second half.
    const std::size_t half = c.size() / 2;
    for (std::size_t i = 0; i < half; ++i) {
      link(c[i], c[i + half]);
      link(c[i + half], c[i]);
    }
    g.description = std::to_string(half) + " congestor pairs streaming both ways";
  } else if (condition == "copy") {
    g.description =
        std::to_string(c.size()) + " congestors copying: host<->GPU over PCIe on GPU hosts, host memory otherwise";
  } else {
    throw UsageError("unknown condition '" + condition + "'");
  }
  return g;
}

GatedLoad::GatedLoad(const runtime::Communicator& world, const runtime::Deadline& deadline, int localRank)
    : world_(world), deadline_(deadline), localRank_(localRank) {
  MPI_Request r;
  runtime::checkMpi(runtime::startDuplicate(world.handle(), &comm_, &r), "MPI_Comm_idup(load)");
  int done = 0;
  runtime::waitUntil(
      [&] {
        runtime::checkMpi(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test(load comm)");
        return done != 0;
      },
      deadline_, "all ranks to set up the neighbour load");
}

GatedLoad::~GatedLoad() {
  for (MPI_Request* r : {&startGate_, &stopGate_})
    if (*r != MPI_REQUEST_NULL) MPI_Request_free(r);
  MPI_Comm_free(&comm_);
}

void GatedLoad::postGate(MPI_Request& gate) { runtime::checkMpi(MPI_Ibarrier(comm_, &gate), "MPI_Ibarrier(gate)"); }

bool GatedLoad::gateDone(MPI_Request& gate) {
  int done = 0;
  runtime::checkMpi(MPI_Test(&gate, &done, MPI_STATUS_IGNORE), "MPI_Test(gate)");
  return done != 0;
}

void GatedLoad::waitGate(MPI_Request& gate, const char* what) {
  runtime::waitUntil([&] { return gateDone(gate); }, deadline_, what);
}

void GatedLoad::canaryBeforeMeasuring() {
  postGate(startGate_);
  waitGate(startGate_, "the congestors' load to start");
}

void GatedLoad::canaryAfterMeasuring() {
  postGate(stopGate_);
  waitGate(stopGate_, "all canaries to finish measuring");
}

void GatedLoad::idle() {
  canaryBeforeMeasuring();
  canaryAfterMeasuring();
}

LoadReport GatedLoad::congest(const std::string& condition, const LoadGraph& graph, std::int64_t messageBytes) {
  // The load's loops check this deadline between polls; the watch covers the
  // blocking calls among them (stop markers, cancelled receives).
  const runtime::watchdog::Watch watch("the neighbour load to start, run and drain", deadline_.at(),
                                       runtime::watchdog::everyRank);
  if (condition == "copy") {
#if FABSCOPE_HAVE_CUDA
    // On a GPU host the copy load is what serving does: host<->GPU copies over PCIe.
    if (kernels::cuda::deviceCount() > 0) return copyToGpu(std::max<std::int64_t>(messageBytes, 8 << 20));
#endif
    return copyMemory(std::max<std::int64_t>(messageBytes, 32 << 20));
  }
  return stream(graph, messageBytes);
}

#if FABSCOPE_HAVE_CUDA
LoadReport GatedLoad::copyToGpu(std::int64_t chunkBytes) {
  kernels::cuda::CopyLoadConfig config;
  config.device = localRank_ % kernels::cuda::deviceCount();
  config.chunkBytes = static_cast<std::uint64_t>(chunkBytes);
  kernels::cuda::CopyLoad copies(config);
  const auto t0 = runtime::monotonicNow();
  // The copy threads stop on their own at the deadline at the latest.
  copies.start(std::chrono::nanoseconds(std::max<runtime::Nanoseconds>(deadline_.at() - t0, 1)));
  postGate(startGate_);
  waitGate(startGate_, "all ranks to see the copy load start");
  postGate(stopGate_);
  waitGate(stopGate_, "the measurement to finish while copying to the GPU");
  const auto stats = copies.stop();
  LoadReport report;
  report.bytesSent = static_cast<std::int64_t>(stats.hostToDeviceBytes + stats.deviceToHostBytes);
  report.seconds = static_cast<double>(runtime::monotonicNow() - t0) / 1e9;
  return report;
}
#endif

// Senders keep `loadWindow` messages in flight to each destination; receivers
// keep receives posted from any source until every source sent its stop
// marker, so nobody waits on a peer that already stopped.
LoadReport GatedLoad::stream(const LoadGraph& graph, std::int64_t messageBytes) {
  const int me = world_.rank();
  const auto& destinations = graph.destinations[static_cast<std::size_t>(me)];
  const int sources = graph.sourceCount[static_cast<std::size_t>(me)];
  const auto bytes = static_cast<std::size_t>(messageBytes);
  transport::HostBuffer sendBuffer(bytes);
  transport::HostBuffer recvBuffer(bytes * loadWindow);
  std::vector<MPI_Request> sends(destinations.size() * loadWindow, MPI_REQUEST_NULL);
  std::vector<MPI_Request> recvs(sources > 0 ? loadWindow : 0, MPI_REQUEST_NULL);
  std::vector<int> stopMarkers(destinations.size(), 0);
  int stopsReceived = 0;
  int stopSink = 0;
  MPI_Request stopRecv = MPI_REQUEST_NULL;
  LoadReport report;
  const auto t0 = runtime::monotonicNow();

  auto postRecv = [&](std::size_t slot) {
    runtime::checkMpi(MPI_Irecv(recvBuffer.data() + slot * bytes, static_cast<int>(bytes), MPI_BYTE, MPI_ANY_SOURCE,
                                loadTag, comm_, &recvs[slot]),
                      "MPI_Irecv(load)");
  };
  for (std::size_t s = 0; s < recvs.size(); ++s) postRecv(s);
  if (sources > 0)
    runtime::checkMpi(MPI_Irecv(&stopSink, 1, MPI_INT, MPI_ANY_SOURCE, stopTag, comm_, &stopRecv), "MPI_Irecv(stop)");

  bool started = false, stopping = false, markersSent = false;
  std::int64_t completedSends = 0;
  for (;;) {
    // Senders: refill every completed slot unless the measurement is over.
    for (std::size_t s = 0; s < sends.size(); ++s) {
      int done = 0;
      if (sends[s] != MPI_REQUEST_NULL) {
        runtime::checkMpi(MPI_Test(&sends[s], &done, MPI_STATUS_IGNORE), "MPI_Test(load send)");
        if (!done) continue;
        ++completedSends;
      }
      if (stopping) continue;
      const int dest = destinations[s / loadWindow];
      runtime::checkMpi(
          MPI_Isend(sendBuffer.data(), static_cast<int>(bytes), MPI_BYTE, dest, loadTag, comm_, &sends[s]),
          "MPI_Isend(load)");
      report.bytesSent += messageBytes;
      ++report.messagesSent;
    }
    // Receivers: repost every completed receive.
    for (std::size_t s = 0; s < recvs.size(); ++s) {
      int done = 0;
      runtime::checkMpi(MPI_Test(&recvs[s], &done, MPI_STATUS_IGNORE), "MPI_Test(load recv)");
      if (done) postRecv(s);
    }
    while (sources > 0 && stopsReceived < sources) {
      int done = 0;
      runtime::checkMpi(MPI_Test(&stopRecv, &done, MPI_STATUS_IGNORE), "MPI_Test(stop)");
      if (!done) break;
      if (++stopsReceived < sources)
        runtime::checkMpi(MPI_Irecv(&stopSink, 1, MPI_INT, MPI_ANY_SOURCE, stopTag, comm_, &stopRecv),
                          "MPI_Irecv(stop)");
    }
    // Gate 1 once load is really flowing (one send done, or this rank only receives).
    if (!started && (completedSends > 0 || destinations.empty())) {
      postGate(startGate_);
      started = true;
    }
    if (started && !stopping && startGate_ == MPI_REQUEST_NULL) {
      if (stopGate_ == MPI_REQUEST_NULL) postGate(stopGate_);
    }
    if (started && startGate_ != MPI_REQUEST_NULL) gateDone(startGate_);  // completes and nulls the request
    if (stopGate_ != MPI_REQUEST_NULL && !stopping && gateDone(stopGate_)) stopping = true;
    if (stopping && !markersSent &&
        std::all_of(sends.begin(), sends.end(), [](MPI_Request r) { return r == MPI_REQUEST_NULL; })) {
      // Stop markers only after every data message completed, so a receiver
      // that counted all markers is owed nothing more.
      for (std::size_t d = 0; d < destinations.size(); ++d)
        runtime::checkMpi(MPI_Send(&stopMarkers[d], 1, MPI_INT, destinations[d], stopTag, comm_), "MPI_Send(stop)");
      markersSent = true;
    }
    if (markersSent && stopsReceived >= sources) break;
    if (deadline_.expired()) deadline_.fail("the neighbour load to drain");
  }
  // Receives still posted would match nothing now: cancel them.
  for (auto& r : recvs) {
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  report.seconds = static_cast<double>(runtime::monotonicNow() - t0) / 1e9;
  return report;
}

LoadReport GatedLoad::copyMemory(std::int64_t bufferBytes) {
  const auto bytes = static_cast<std::size_t>(bufferBytes);
  transport::HostBuffer a(bytes), b(bytes);
  LoadReport report;
  const auto t0 = runtime::monotonicNow();
  postGate(startGate_);
  bool stopPosted = false;
  for (;;) {
    std::memcpy(b.data(), a.data(), bytes);
    report.bytesSent += bufferBytes;
    ++report.messagesSent;
    if (startGate_ != MPI_REQUEST_NULL) {
      gateDone(startGate_);
      continue;
    }
    if (!stopPosted) {
      postGate(stopGate_);
      stopPosted = true;
    }
    if (gateDone(stopGate_)) break;
    if (deadline_.expired()) deadline_.fail("the measurement to finish while copying memory");
  }
  report.seconds = static_cast<double>(runtime::monotonicNow() - t0) / 1e9;
  return report;
}

}  // namespace fabscope::conditions
