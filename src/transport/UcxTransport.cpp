// The ucx transport's entry in the factory's table is compiled in every
// build; the data path only where the build has UCX.
#include "fabscope/BuildConfig.hpp"
#include "transport/TransportEntry.hpp"

#if FABSCOPE_HAVE_UCX
#include "transport/UcxTransport.hpp"

#include "runtime/LossChannel.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "transport/UcxExchange.hpp"
#include "transport/UcxTag.hpp"

namespace fabscope::transport {
namespace {

std::string statusText(ucs_status_t status) { return ucs_status_string(status); }

void checkUcs(ucs_status_t status, const char* what) {
  if (status != UCS_OK) throw RuntimeFailure(std::string("UCX: ") + what + " failed: " + statusText(status));
}

std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

// Captures what a UCX print function writes to a FILE*.
template <typename Print>
std::string printToString(Print&& print) {
  char* text = nullptr;
  std::size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  if (!stream) return {};
  print(stream);
  std::fclose(stream);
  std::string out(text ? text : "", size);
  std::free(text);
  return out;
}

// The "tl/device" names of an endpoint's lanes, read from ucp_ep_print_info
// (UCX 1.13 has no query for them). Lines look like
//   "#                lane[0]:  1:posix/memory.0 md[1]  ..."
std::set<std::string> laneTransports(const std::string& info) {
  std::set<std::string> out;
  std::size_t at = 0;
  while ((at = info.find("lane[", at)) != std::string::npos) {
    const auto colon = info.find(':', at);
    if (colon == std::string::npos) break;
    auto start = info.find_first_not_of(" \t", colon + 1);
    const auto lineEnd = info.find('\n', colon);
    if (start == std::string::npos || start >= lineEnd) break;
    // Skip the resource index "N:".
    const auto indexColon = info.find(':', start);
    if (indexColon != std::string::npos && indexColon < lineEnd) start = indexColon + 1;
    const auto end = info.find_first_of(" \t\n", start);
    out.insert(info.substr(start, end - start));
    at = lineEnd == std::string::npos ? info.size() : lineEnd;
  }
  return out;
}

}  // namespace

UcxTransport::UcxTransport(const runtime::Communicator& world, bool oneSided, const runtime::Deadline& deadline)
    : world_(world.duplicate(deadline)), me_(world.rank()), oneSided_(oneSided) {
  if (static_cast<std::uint64_t>(world.size()) > ucx_tag::maxSourceRank)
    throw UsageError("the UCX transport supports at most " + std::to_string(ucx_tag::maxSourceRank) + " ranks");
  // Shared-memory transports refuse endpoints that ask for peer error handling
  // unless told otherwise; without this UCX would silently fall back to TCP
  // between ranks of one host. The user's own setting wins.
  setenv("UCX_POSIX_ERROR_HANDLING", "y", 0);
  setenv("UCX_SYSV_ERROR_HANDLING", "y", 0);

  ucp_config_t* config = nullptr;
  checkUcs(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
  // RMA only when a test puts or gets: with it UCX 1.13 adds an RMA lane on a
  // second shared-memory transport (posix and sysv), and ucp_worker_progress
  // then polls both on every call (199 against 139 instructions a
  // poll; the latency path pays about half a poll per message).
  params.features = UCP_FEATURE_TAG | (oneSided ? UCP_FEATURE_RMA : 0);
  params.estimated_num_eps = static_cast<std::size_t>(world.size());
  ucp_context_h context = nullptr;
  const ucs_status_t initStatus = ucp_init(&params, config, &context);
  ucp_config_release(config);
  checkUcs(initStatus, "ucp_init (check UCX_TLS / UCX_NET_DEVICES)");
  context_.reset(context);

  ucp_worker_params_t workerParams{};
  workerParams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  workerParams.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h worker = nullptr;
  checkUcs(ucp_worker_create(context_.get(), &workerParams, &worker), "ucp_worker_create");
  worker_.reset(worker);

  ucp_address_t* address = nullptr;
  std::size_t addressBytes = 0;
  checkUcs(ucp_worker_get_address(worker_.get(), &address, &addressBytes), "ucp_worker_get_address");
  std::vector<std::byte> mine(reinterpret_cast<const std::byte*>(address),
                              reinterpret_cast<const std::byte*>(address) + addressBytes);
  ucp_worker_release_address(worker_.get(), address);

  auto all = allgatherBlobs(world_, mine, deadline);
  peers_.resize(all.size());
  for (std::size_t r = 0; r < all.size(); ++r) {
    peers_[r].owner = this;
    peers_[r].rank = static_cast<int>(r);
    peers_[r].address = std::move(all[r]);
  }
}

UcxTransport::~UcxTransport() {
  // Bounded: a dead peer must not keep the program from exiting. The polls
  // below check this deadline themselves; the watch also covers the calls
  // that do not return to a poll loop (closing an endpoint, destroying the
  // worker and the context), so a UCX stuck on a peer's shared memory ends
  // the rank (watchdog) instead of hanging it.
  const auto deadline = runtime::Deadline::afterSeconds(5);
  const runtime::watchdog::Watch watch("UCX to close its endpoints and destroy its worker", deadline.at());
  try {
    // Every request goes back to UCX before the worker does; else UCX warns
    // once per request at destroy ("... was not returned to mpool", hundreds
    // after a fault drill, whose client leaves requests to the lost worker
    // behind). Receives can be cancelled, sends cannot: they end when their
    // endpoint is closed by force (UCX completes them as cancelled). Waiting
    // for them first ran into this deadline (5 s on every survivor).
    for (auto& s : slots_)
      if (s.request) ucp_request_cancel(worker_.get(), s.request);
    for (auto& peer : peers_) closeEndpoint(peer, deadline);  // also drops the rkeys unpacked for it
    abandonPending(deadline);
    drainUnexpected(deadline);
    for (auto& region : regions_)
      if (region.live) ucp_mem_unmap(context_.get(), region.memory);
  } catch (const std::exception&) {
    // The worker is destroyed below either way; UCX releases what is left.
  }
  worker_.reset();
  context_.reset();
}

void UcxTransport::drainUnexpected(const runtime::Deadline& deadline) {
  // Messages no receive was posted for (a drill's late heartbeats and
  // replies) stay UCX's until received: take them, into a scratch buffer.
  std::vector<std::byte> scratch;
  ucp_request_param_t param{};
  for (int taken = 0; taken < maxDrainedMessages && !deadline.expired(); ++taken) {
    ucp_worker_progress(worker_.get());
    ucp_tag_recv_info_t info{};
    ucp_tag_message_h message = ucp_tag_probe_nb(worker_.get(), 0, 0, 1, &info);
    if (message == nullptr) return;
    scratch.resize(std::max<std::size_t>(info.length, 1));
    waitRequest(ucp_tag_msg_recv_nbx(worker_.get(), scratch.data(), info.length, message, &param), deadline,
                "UCX to hand over a message no test received");
  }
}

void UcxTransport::onEndpointError(void* arg, ucp_ep_h /*endpoint*/, ucs_status_t status) {
  auto* peer = static_cast<Peer*>(arg);
  peer->failed = true;
  peer->failure = status;
  peer->failedAt = runtime::monotonicNow();
  // Said at once, on this rank's own stderr: the run may be unable to reach
  // the point where errors are gathered (the peer is gone), and the admin
  // needs to know which link failed and when.
  std::fprintf(stderr, "fabscope: rank %d: UCX endpoint to rank %d failed (%s) at monotonic %.3f s\n", peer->owner->me_,
               peer->rank, ucs_status_string(status), static_cast<double>(peer->failedAt) / 1e9);
  peer->owner->reportError({peer->failedAt, peer->rank,
                            "UCX endpoint to rank " + std::to_string(peer->rank) + " failed: " + statusText(status)});
}

ucp_ep_h UcxTransport::connect(int peer) {
  Peer& p = peers_[static_cast<std::size_t>(peer)];
  ucp_ep_params_t params{};
  params.field_mask =
      UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(p.address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &UcxTransport::onEndpointError;
  params.err_handler.arg = &p;
  checkUcs(ucp_ep_create(worker_.get(), &params, &p.endpoint),
           ("ucp_ep_create to rank " + std::to_string(peer)).c_str());
  return p.endpoint;
}

void UcxTransport::reserve(int slots) {
  if (static_cast<int>(slots_.size()) < slots) slots_.resize(static_cast<std::size_t>(slots));
}

void UcxTransport::refusePost(int slot, int peer) const {
  throw RuntimeFailure("UCX: rank " + std::to_string(peer) + " was lost earlier (" +
                       statusText(peers_[static_cast<std::size_t>(peer)].failure) + "); not posting slot " +
                       std::to_string(slot));
}

void UcxTransport::failedToStart(int peer, ucs_status_ptr_t started, const char* operation) {
  throw RuntimeFailure(std::string("UCX: ") + operation + " with rank " + std::to_string(peer) +
                       " failed at once: " + statusText(UCS_PTR_STATUS(started)));
}

void UcxTransport::postSend(int slot, int peer, int tag, const void* buffer, std::size_t bytes) {
  checkSlot(slot, peer);
  ucp_request_param_t param;
  param.op_attr_mask = 0;
  const auto t = ucx_tag::pack(epoch_, static_cast<std::uint32_t>(me_), static_cast<std::uint32_t>(tag));
  track(slot, peer, ucp_tag_send_nbx(endpointTo(peer), buffer, bytes, t, &param), "tag send");
}

void UcxTransport::postRecv(int slot, int peer, int tag, void* buffer, std::size_t bytes) {
  checkSlot(slot, peer);
  ucp_request_param_t param;
  param.op_attr_mask = 0;
  const auto t = ucx_tag::pack(epoch_, static_cast<std::uint32_t>(peer), static_cast<std::uint32_t>(tag));
  track(slot, peer, ucp_tag_recv_nbx(worker_.get(), buffer, bytes, t, ucx_tag::fullMask, &param), "tag receive");
}

// Called once per poll of every wait: the empty poll's own instructions set
// how late a message that just arrived is seen, so the scan starts
// at the first pending slot and the failures are out of line.
inline bool UcxTransport::pollSlots(int first, int count) {
  Slot* s = slots_.data() + first;
  Slot* const end = s + count;
  // Progress only when something is pending: a small send completes in place
  // (no request), and the extra progress call was measurable on the latency path.
  while (s != end && !s->request) ++s;
  if (s == end) return true;
  ucp_worker_progress(worker_.get());
  bool allDone = true;
  for (; s != end; ++s) {
    if (!s->request) continue;
    const ucs_status_t status = ucp_request_check_status(s->request);
    if (status == UCS_INPROGRESS) {
      // A receive is posted on the worker, not on the endpoint, so UCX never
      // fails it when the sender dies: the endpoint's error flag does.
      if (peers_[static_cast<std::size_t>(s->peer)].failed) [[unlikely]]
        failPeer(static_cast<int>(s - slots_.data()));
      allDone = false;
      continue;
    }
    ucp_request_free(s->request);
    s->request = nullptr;
    if (status != UCS_OK) [[unlikely]]
      failSlot(static_cast<int>(s - slots_.data()), status);
  }
  return allDone;
}

bool UcxTransport::testSlots(int first, int count) { return pollSlots(first, count); }

void UcxTransport::waitSlots(int first, int count, const runtime::Deadline& deadline) {
  runtime::waitUntil([&] { return pollSlots(first, count); }, deadline, waitDescription(), peerOfSlots(first, count));
}

int UcxTransport::peerOfSlots(int first, int count) const {
  int peer = runtime::watchdog::noPeer;
  for (int i = first; i < first + count; ++i) {
    const Slot& s = slots_[static_cast<std::size_t>(i)];
    if (!s.request) continue;
    if (peer != runtime::watchdog::noPeer && s.peer != peer) return runtime::watchdog::noPeer;  // several
    peer = s.peer;
  }
  return peer;
}

void UcxTransport::failSlot(int slot, ucs_status_t status) {
  const int peer = slots_[static_cast<std::size_t>(slot)].peer;
  const auto now = runtime::monotonicNow();
  std::string message = "UCX: operation in slot " + std::to_string(slot) + " with rank " + std::to_string(peer) +
                        " completed with error: " + statusText(status);
  reportError({now, peer, message});
  abandonAfterFailure();
  // An error on an endpoint whose peer failed is the peer's loss, not this operation's.
  if (peers_[static_cast<std::size_t>(peer)].failed) throw runtime::PeerLost(message, peer);
  throw RuntimeFailure(message);
}

void UcxTransport::failPeer(int slot) {
  const int peer = slots_[static_cast<std::size_t>(slot)].peer;
  const Peer& p = peers_[static_cast<std::size_t>(peer)];
  char when[64];
  std::snprintf(when, sizeof when, "%.3f", static_cast<double>(p.failedAt) / 1e9);
  std::string message = "UCX lost peer rank " + std::to_string(peer) + " (" + statusText(p.failure) +
                        ", endpoint error at monotonic " + when + " s) while slot " + std::to_string(slot) +
                        " was waiting on it";
  abandonAfterFailure();
  throw runtime::PeerLost(message, peer);
}

void UcxTransport::waitRequest(void* request, const runtime::Deadline& deadline, const char* what, int peer) {
  if (request == nullptr) return;
  if (UCS_PTR_IS_ERR(request)) return;  // failed at once: nothing to wait for
  runtime::waitUntil(
      [&] {
        ucp_worker_progress(worker_.get());
        return ucp_request_check_status(request) != UCS_INPROGRESS;
      },
      deadline, what, peer);
  ucp_request_free(request);
}

void UcxTransport::abandonPending(const runtime::Deadline& deadline) {
  for (auto& s : slots_)
    if (s.request) ucp_request_cancel(worker_.get(), s.request);
  for (auto& s : slots_) {
    void* request = s.request;
    s.request = nullptr;
    waitRequest(request, deadline, "UCX to cancel outstanding requests", s.peer);
  }
}

runtime::Deadline UcxTransport::cancelDeadline() const {
  return runtime::Deadline(std::min(runtime::monotonicNow(), testDeadline_) +
                           static_cast<runtime::Nanoseconds>(cancelGraceSeconds * 1e9));
}

void UcxTransport::abandonAfterFailure() noexcept {
  try {
    abandonPending(cancelDeadline());
  } catch (const std::exception& e) {
    // The failure being raised says what went wrong; a request UCX would not
    // give back in time (a send to the lost peer) is said on stderr only.
    std::fprintf(stderr, "fabscope: rank %d: UCX requests left in flight after a failure: %s\n", me_, e.what());
  }
}

void UcxTransport::destroyRkeysOf(int peer) {
  for (auto& region : regions_) {
    if (!region.live) continue;
    auto& rkey = region.rkey[static_cast<std::size_t>(peer)];
    if (rkey) {
      ucp_rkey_destroy(rkey);
      rkey = nullptr;
    }
  }
}

void UcxTransport::closeEndpoint(Peer& peer, const runtime::Deadline& deadline) {
  if (!peer.endpoint) return;
  // ucp_ep_close_nbx itself may wait inside UCX for a peer that is gone.
  const runtime::watchdog::Watch watch("UCX to close an endpoint", deadline.at(), peer.rank);
  destroyRkeysOf(peer.rank);
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  // Forced: a flushing close waits for the peer, which may be gone.
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void* request = ucp_ep_close_nbx(peer.endpoint, &param);
  peer.endpoint = nullptr;
  waitRequest(request, deadline, "UCX to close an endpoint", peer.rank);
}

void UcxTransport::reset(const runtime::Deadline& deadline) {
  abandonPending(deadline);
  for (auto& peer : peers_)
    if (peer.failed) {
      closeEndpoint(peer, deadline);
      peer.failed = false;  // reconnected on next use; a dead peer fails again
      peer.failure = UCS_OK;
    }
  // Messages a timed-out test left in flight carry the old epoch and can
  // never match a receive of the next test.
  ++epoch_;
  world_.barrier(deadline);
}

std::vector<std::pair<std::string, std::string>> UcxTransport::describe() const {
  std::vector<std::pair<std::string, std::string>> facts{
      {"ucx_version", ucp_get_version_string()},
      {"UCX_TLS", envOr("UCX_TLS", "(unset: all)")},
      {"UCX_NET_DEVICES", envOr("UCX_NET_DEVICES", "(unset: all)")},
      {"UCX_POSIX_ERROR_HANDLING", envOr("UCX_POSIX_ERROR_HANDLING", "")},
      {"UCX_SYSV_ERROR_HANDLING", envOr("UCX_SYSV_ERROR_HANDLING", "")},
      {"UCX_KEEPALIVE_INTERVAL", envOr("UCX_KEEPALIVE_INTERVAL", "(unset: UCX default)")},
      {"ucx_error_handling", "peer"},
  };
  // Lanes of the endpoints opened so far (endpoints are created on first use).
  std::set<std::string> lanes;
  int connected = 0;
  for (const auto& peer : peers_) {
    if (!peer.endpoint || peer.failed) continue;
    ++connected;
    const auto info = printToString([&](FILE* f) { ucp_ep_print_info(peer.endpoint, f); });
    auto tl = laneTransports(info);
    lanes.insert(tl.begin(), tl.end());
  }
  std::string joined;
  for (const auto& l : lanes) joined += (joined.empty() ? "" : ",") + l;
  facts.emplace_back("ucx_selected_lanes", connected ? joined : "(no endpoint opened yet)");
  facts.emplace_back("ucx_endpoints_open", std::to_string(connected));
  return facts;
}

int UcxTransport::exposeRegion(void* base, std::size_t bytes, MemoryKind kind, const runtime::Deadline& deadline) {
  if (!oneSided_)  // a kind that puts or gets without saying so in its plan (InstancePlan::oneSided)
    throw RuntimeFailure(
        "the UCX transport was opened without one-sided operations (UCP_FEATURE_RMA): no test of "
        "this run declared puts or gets (InstancePlan::oneSided), yet one exposes a region");
  ucp_mem_map_params_t params{};
  params.field_mask =
      UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
  params.address = base;
  params.length = bytes;
  switch (kind) {
    case MemoryKind::host:
    case MemoryKind::cudaHost:
      params.memory_type = UCS_MEMORY_TYPE_HOST;
      break;
    case MemoryKind::cuda:
#if FABSCOPE_HAVE_CUDA
      params.memory_type = UCS_MEMORY_TYPE_CUDA;
      break;
#else
      throw UsageError("the UCX transport cannot expose CUDA memory: this build has no CUDA");
#endif
  }
  Region region;
  checkUcs(ucp_mem_map(context_.get(), &params, &region.memory),
           kind == MemoryKind::cuda ? "ucp_mem_map of CUDA memory (is UCX built with CUDA support?)" : "ucp_mem_map");
  void* packed = nullptr;
  std::size_t packedBytes = 0;
  const ucs_status_t packStatus = ucp_rkey_pack(context_.get(), region.memory, &packed, &packedBytes);
  if (packStatus != UCS_OK) {
    ucp_mem_unmap(context_.get(), region.memory);
    checkUcs(packStatus, "ucp_rkey_pack");
  }
  // Blob: base address (8 bytes), length (8 bytes), packed rkey.
  std::vector<std::byte> blob(16 + packedBytes);
  const auto baseValue = reinterpret_cast<std::uint64_t>(base);
  const auto length = static_cast<std::uint64_t>(bytes);
  std::memcpy(blob.data(), &baseValue, 8);
  std::memcpy(blob.data() + 8, &length, 8);
  std::memcpy(blob.data() + 16, packed, packedBytes);
  ucp_rkey_buffer_release(packed);

  std::vector<std::vector<std::byte>> all;
  try {
    all = allgatherBlobs(world_, blob, deadline);
  } catch (...) {
    ucp_mem_unmap(context_.get(), region.memory);
    throw;
  }
  const auto ranks = all.size();
  region.remoteBase.resize(ranks);
  region.remoteBytes.resize(ranks);
  region.packedRkey.resize(ranks);
  region.rkey.assign(ranks, nullptr);
  for (std::size_t r = 0; r < ranks; ++r) {
    std::uint64_t b = 0, n = 0;
    std::memcpy(&b, all[r].data(), 8);
    std::memcpy(&n, all[r].data() + 8, 8);
    region.remoteBase[r] = b;
    region.remoteBytes[r] = static_cast<std::size_t>(n);
    region.packedRkey[r].assign(all[r].begin() + 16, all[r].end());
  }
  region.live = true;
  regions_.push_back(std::move(region));
  return static_cast<int>(regions_.size() - 1);
}

void UcxTransport::withdrawRegion(int region, const runtime::Deadline& deadline) {
  // Nobody may still be writing into a region that is unmapped.
  world_.barrier(deadline);
  auto& r = regions_.at(static_cast<std::size_t>(region));
  if (!r.live) return;
  for (auto& rkey : r.rkey)
    if (rkey) ucp_rkey_destroy(rkey);
  ucp_mem_unmap(context_.get(), r.memory);
  r = Region{};
}

UcxTransport::RemoteTarget UcxTransport::remoteTarget(int peer, int region, std::size_t remoteOffset, std::size_t bytes,
                                                      const char* operation) {
  Region& r = regions_.at(static_cast<std::size_t>(region));
  const auto p = static_cast<std::size_t>(peer);
  if (!r.live || remoteOffset + bytes > r.remoteBytes[p])
    throw UsageError(std::string("UCX ") + operation + " of " + std::to_string(bytes) + " bytes at offset " +
                     std::to_string(remoteOffset) + " does not fit region " + std::to_string(region) + " of rank " +
                     std::to_string(peer));
  ucp_ep_h ep = endpointTo(peer);
  if (!r.rkey[p])  // first access to this peer's region: unpack its key for this endpoint
    checkUcs(ucp_ep_rkey_unpack(ep, r.packedRkey[p].data(), &r.rkey[p]), "ucp_ep_rkey_unpack");
  return {ep, r.remoteBase[p] + remoteOffset, r.rkey[p]};
}

void UcxTransport::postPut(int slot, int peer, int region, std::size_t remoteOffset, const void* local,
                           std::size_t bytes) {
  checkSlot(slot, peer);
  const auto target = remoteTarget(peer, region, remoteOffset, bytes, "put");
  ucp_request_param_t param;
  param.op_attr_mask = 0;
  track(slot, peer, ucp_put_nbx(target.endpoint, local, bytes, target.address, target.rkey, &param), "put");
}

void UcxTransport::postGet(int slot, int peer, int region, std::size_t remoteOffset, void* local, std::size_t bytes) {
  checkSlot(slot, peer);
  const auto target = remoteTarget(peer, region, remoteOffset, bytes, "get");
  ucp_request_param_t param;
  param.op_attr_mask = 0;
  // Unlike a put, a get's request completes only once the data is in `local`.
  track(slot, peer, ucp_get_nbx(target.endpoint, local, bytes, target.address, target.rkey, &param), "get");
}

void UcxTransport::postFlush(int slot, int peer) {
  checkSlot(slot, peer);
  ucp_request_param_t param;
  param.op_attr_mask = 0;
  track(slot, peer, ucp_ep_flush_nbx(endpointTo(peer), &param), "endpoint flush");
}

}  // namespace fabscope::transport

#endif  // FABSCOPE_HAVE_UCX

namespace fabscope::transport {

#if FABSCOPE_HAVE_UCX
namespace {
std::unique_ptr<Transport> openUcxTransport(const runtime::Communicator& world, int, const OpenRequest& request,
                                            const runtime::Deadline& deadline) {
  return std::make_unique<UcxTransport>(world, request.oneSided, deadline);
}
}  // namespace
#else
constexpr Opener openUcxTransport = nullptr;
#endif

const TransportEntry& ucxTransportEntry() {
  static const TransportEntry entry{
      "ucx",
      FABSCOPE_HAVE_UCX ? "" : "built without UCX",
      {.put = true,
       .get = true,
       .survivesPeerLoss = true,
       .peerLossReport = "UCX endpoint error callback (UCP_ERR_HANDLING_MODE_PEER): over TCP a dead process's "
                         "socket reset arrives at once; a hung process or a dead link is never reported (UCX "
                         "keepalive aside), heartbeats catch those"},
      std::nullopt,
      openUcxTransport};
  return entry;
}

}  // namespace fabscope::transport
