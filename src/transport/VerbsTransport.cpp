// The verbs transport's settings and its entry in the factory's table are
// compiled in every build, so a scenario with verbs keys loads the same
// everywhere; the data path only where the build has libibverbs.
#include <memory>
#include <string>
#include <vector>

#include "fabscope/BuildConfig.hpp"
#include "scenario/TestSource.hpp"
#include "transport/TransportEntry.hpp"

namespace fabscope::transport {

// transports: {verbs: {max_rd_atomic: N}} (1..255): RDMA reads in flight per
// queue pair; 0 = the limit the two devices agree on. The struct, its keys and
// its parse step are here, beside the code that acts on them, so a new key of
// the verbs transport touches this file only.
struct VerbsSettings : scenario::TransportSettings {
  int maxReadsInFlight = 0;
  std::string maxReadsInFlightFrom;  // "file:line:column" that set it

  std::vector<scenario::TransportSettingValue> values() const override {
    return {{"max_rd_atomic", std::to_string(maxReadsInFlight), maxReadsInFlightFrom}};
  }

  static scenario::TransportRules rules() { return {{"max_rd_atomic"}, "{max_rd_atomic: 4}", parse}; }

  static std::shared_ptr<const scenario::TransportSettings> parse(const scenario::TransportSource& source) {
    auto settings = std::make_shared<VerbsSettings>();
    if (source.has("max_rd_atomic")) {
      settings->maxReadsInFlight = static_cast<int>(source.integer("max_rd_atomic", 1, 255));
      settings->maxReadsInFlightFrom = source.where("max_rd_atomic");
    }
    return settings;
  }
};

}  // namespace fabscope::transport

#if FABSCOPE_HAVE_VERBS
#include "transport/VerbsTransport.hpp"

#include <arpa/inet.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include <random>
#include <span>
#include <string>

#include "transport/UcxExchange.hpp"

namespace fabscope::transport {
namespace {

constexpr int completionQueueDepth = 8192;
constexpr int maxWorkRequests = 1024;  // per queue, per peer
constexpr std::uint64_t flushSlotMarker = std::uint64_t{1} << 63;

std::string errnoText(int e) { return std::strerror(e); }

const char* gidTypeName(ibv_gid_type t) {
  switch (t) {
    case IBV_GID_TYPE_IB:
      return "IB";
    case IBV_GID_TYPE_ROCE_V1:
      return "RoCE v1";
    case IBV_GID_TYPE_ROCE_V2:
      return "RoCE v2";
  }
  return "?";
}

}  // namespace

VerbsTransport::VerbsTransport(const runtime::Communicator& world, const VerbsSettings& settings,
                               const runtime::Deadline& deadline)
    : world_(world.duplicate(deadline)), me_(world.rank()) {
  // Every rank opens its device first and then all agree, so a rank without
  // hardware fails the whole open together instead of leaving peers waiting.
  std::string problem;
  try {
    options_ = verbs::verbsOptionsFromEnvironment();
    verbs::lowerReadsInFlight(options_, settings.maxReadsInFlight,
                              "transports.verbs.max_rd_atomic at " + settings.maxReadsInFlightFrom);
    openLocal();
  } catch (const UsageError&) {
    throw;
  } catch (const RuntimeFailure& e) {
    problem = e.what();
  }
  const auto failures = world_.allreduceSum(problem.empty() ? 0 : 1, deadline);
  if (!problem.empty()) throw RuntimeFailure("verbs transport on rank " + std::to_string(me_) + ": " + problem);
  if (failures > 0)
    throw RuntimeFailure("verbs transport: " + std::to_string(failures) +
                         " other rank(s) could not open their RDMA device (see their messages)");
  connectAll(deadline);
}

VerbsTransport::~VerbsTransport() {
  // Queue pairs go before the memory they may still point into.
  qps_.clear();
  regions_.clear();
  registrations_.clear();
}

void VerbsTransport::openLocal() {
  int count = 0;
  std::unique_ptr<ibv_device*, DeviceListDeleter> list(ibv_get_device_list(&count));
  if (!list || count == 0)
    throw RuntimeFailure("no RDMA device found (ibv_get_device_list: " +
                         std::string(list              ? "empty list"
                                     : errno == ENOSYS ? "the kernel has no RDMA support loaded"
                                                       : errnoText(errno)) +
                         (options_.device.empty() ? std::string("; wanted any device")
                                                  : "; wanted FABSCOPE_VERBS_DEVICE=" + options_.device) +
                         "; /sys/class/infiniband lists the devices this host has)");
  ibv_device* chosen = nullptr;
  std::string available;
  for (int i = 0; i < count; ++i) {
    const char* n = ibv_get_device_name(list.get()[i]);
    available += (available.empty() ? "" : ", ") + std::string(n);
    if (!chosen && (options_.device.empty() || options_.device == n)) chosen = list.get()[i];
  }
  if (!chosen)
    throw RuntimeFailure("RDMA device '" + options_.device +
                         "' (FABSCOPE_VERBS_DEVICE) not found; this host has: " + available);
  deviceName_ = ibv_get_device_name(chosen);
  context_.reset(ibv_open_device(chosen));
  if (!context_) throw RuntimeFailure("ibv_open_device(" + deviceName_ + "): " + errnoText(errno));

  ibv_device_attr device{};
  if (int rc = ibv_query_device(context_.get(), &device); rc != 0)
    throw RuntimeFailure("ibv_query_device(" + deviceName_ + "): " + errnoText(rc));
  deviceMaxInitiatorReads_ = device.max_qp_init_rd_atom;
  deviceMaxResponderReads_ = device.max_qp_rd_atom;

  ibv_port_attr port{};
  if (ibv_query_port(context_.get(), static_cast<std::uint8_t>(options_.port), &port) != 0)
    throw RuntimeFailure(deviceName_ + " port " + std::to_string(options_.port) +
                         " (FABSCOPE_VERBS_PORT): ibv_query_port failed: " + errnoText(errno));
  if (port.state != IBV_PORT_ACTIVE)
    throw RuntimeFailure(deviceName_ + " port " + std::to_string(options_.port) + " is not active (state " +
                         ibv_port_state_str(port.state) + ")");
  linkLayer_ = port.link_layer == IBV_LINK_LAYER_ETHERNET ? verbs::LinkLayer::ethernet : verbs::LinkLayer::infiniband;

  std::vector<verbs::GidEntry> table;
  for (int i = 0; i < port.gid_tbl_len; ++i) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(context_.get(), static_cast<std::uint32_t>(options_.port), static_cast<std::uint32_t>(i),
                         &entry, 0) != 0)
      continue;  // unpopulated entries report an error on some drivers
    verbs::GidEntry g;
    g.index = i;
    std::memcpy(g.gid.data(), entry.gid.raw, 16);
    g.type = static_cast<ibv_gid_type>(entry.gid_type);
    table.push_back(g);
  }
  gid_ = verbs::chooseGid(linkLayer_, table, options_.gidIndex);

  pd_.reset(ibv_alloc_pd(context_.get()));
  if (!pd_) throw RuntimeFailure("ibv_alloc_pd on " + deviceName_ + ": " + errnoText(errno));
  cq_.reset(ibv_create_cq(context_.get(), completionQueueDepth, nullptr, nullptr, 0));
  if (!cq_) throw RuntimeFailure("ibv_create_cq on " + deviceName_ + ": " + errnoText(errno));

  const int ranks = world_.size();
  std::mt19937 random(std::random_device{}());
  verbs::QpEndpointInfo base;
  base.lid = port.lid;
  base.mtu = static_cast<std::uint8_t>(port.active_mtu);
  base.maxInitiatorReads = verbs::readLimitOf(deviceMaxInitiatorReads_);
  base.maxResponderReads = verbs::readLimitOf(deviceMaxResponderReads_);
  if (gid_.index >= 0) {
    ibv_gid g{};
    if (ibv_query_gid(context_.get(), static_cast<std::uint8_t>(options_.port), gid_.index, &g) != 0)
      throw RuntimeFailure("ibv_query_gid index " + std::to_string(gid_.index) + ": " + errnoText(errno));
    std::memcpy(base.gid.data(), g.raw, 16);
  }
  for (int p = 0; p < ranks; ++p) {
    ibv_qp_init_attr init{};
    init.send_cq = cq_.get();
    init.recv_cq = cq_.get();
    init.qp_type = IBV_QPT_RC;
    init.sq_sig_all = 0;
    init.cap.max_send_wr = maxWorkRequests;
    init.cap.max_recv_wr = maxWorkRequests;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    qps_.emplace_back(ibv_create_qp(pd_.get(), &init));
    if (!qps_.back()) throw RuntimeFailure("ibv_create_qp (RC) on " + deviceName_ + ": " + errnoText(errno));
    auto info = base;
    info.qpn = qps_.back()->qp_num;
    info.psn = random() & 0xffffff;
    localInfo_.push_back(info);
  }
  peerFailed_.assign(static_cast<std::size_t>(ranks), false);
  // Never more sends in flight than a send queue holds, nor more work in
  // flight than the shared completion queue holds (cq_->cqe: what the driver gave).
  window_.configure(ranks, maxWorkRequests, cq_->cqe);
}

void VerbsTransport::bringUp(int peer) {
  const auto p = static_cast<std::size_t>(peer);
  ibv_qp* qp = qps_[p].get();
  auto apply = [&](verbs::QpTransition t, const char* state) {
    if (ibv_modify_qp(qp, &t.attr, t.mask) != 0)
      throw RuntimeFailure(std::string("ibv_modify_qp to ") + state + " for the queue pair to rank " +
                           std::to_string(peer) + ": " + errnoText(errno));
  };
  apply(verbs::toInit(options_.port), "INIT");
  apply(verbs::toReadyToReceive(options_, localInfo_[p], remoteInfo_[p], gid_.index), "RTR");
  apply(verbs::toReadyToSend(options_, localInfo_[p], remoteInfo_[p]), "RTS");
}

void VerbsTransport::connectAll(const runtime::Deadline& deadline) {
  // Each rank publishes one QpEndpointInfo per peer; rank r reads entry [me] of r's list.
  std::vector<std::byte> mine(localInfo_.size() * sizeof(verbs::QpEndpointInfo));
  std::memcpy(mine.data(), localInfo_.data(), mine.size());
  const auto all = allgatherBlobs(world_, mine, deadline);
  remoteInfo_.resize(all.size());
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].size() != all.size() * sizeof(verbs::QpEndpointInfo))
      throw RuntimeFailure("verbs: rank " + std::to_string(r) + " sent queue-pair information of the wrong size");
    std::memcpy(&remoteInfo_[r], all[r].data() + static_cast<std::size_t>(me_) * sizeof(verbs::QpEndpointInfo),
                sizeof(verbs::QpEndpointInfo));
  }
  for (int p = 0; p < world_.size(); ++p) bringUp(p);
  // No rank sends before every peer's receive side is ready.
  world_.barrier(deadline);
}

void VerbsTransport::reserve(int slots) {
  if (static_cast<int>(slots_.size()) < slots) slots_.resize(static_cast<std::size_t>(slots));
  if (static_cast<int>(waitingSends_.size()) < slots) waitingSends_.resize(static_cast<std::size_t>(slots));
  window_.reserve(slots);
}

std::uint32_t VerbsTransport::localKey(const void* buffer, std::size_t bytes) {
  const auto* b = static_cast<const std::byte*>(buffer);
  for (const auto& mr : registrations_) {
    const auto* base = static_cast<const std::byte*>(mr->addr);
    if (b >= base && b + bytes <= base + mr->length) return mr->lkey;
  }
  for (const auto& region : regions_) {
    if (!region.mr) continue;
    const auto* base = static_cast<const std::byte*>(region.mr->addr);
    if (b >= base && b + bytes <= base + region.mr->length) return region.mr->lkey;
  }
  // First use of this buffer (a warm-up iteration): register it.
  registrations_.emplace_back(ibv_reg_mr(pd_.get(), const_cast<void*>(buffer), bytes ? bytes : 1, verbs::remoteAccess));
  if (!registrations_.back()) {
    registrations_.pop_back();
    throw RuntimeFailure("ibv_reg_mr of " + std::to_string(bytes) + " bytes: " + errnoText(errno));
  }
  return registrations_.back()->lkey;
}

void VerbsTransport::postSendRequest(int slot, int peer, ibv_send_wr& wr) {
  if (peerFailed_[static_cast<std::size_t>(peer)])
    throw RuntimeFailure("verbs: rank " + std::to_string(peer) + " was lost earlier; not posting slot " +
                         std::to_string(slot));
  // Kept by slot until posted: the window may hold it back until completions
  // free room in the send queue and the completion queue.
  WaitingSend& w = waitingSends_[static_cast<std::size_t>(slot)];
  w.wr = wr;
  w.wr.next = nullptr;
  if (wr.num_sge > 0) {
    w.sge = *wr.sg_list;
    w.wr.sg_list = &w.sge;
  }
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  s.state = SlotState::pending;
  s.peer = peer;
  s.isReceive = false;
  window_.submit(peer, slot, [this](int item) { postWaitingSend(item); });
}

void VerbsTransport::postWaitingSend(int slot) {
  const int peer = slots_[static_cast<std::size_t>(slot)].peer;
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(qps_[static_cast<std::size_t>(peer)].get(),
                               &waitingSends_[static_cast<std::size_t>(slot)].wr, &bad);
  if (rc != 0) throw RuntimeFailure("ibv_post_send to rank " + std::to_string(peer) + ": " + errnoText(rc));
}

void VerbsTransport::postSend(int slot, int peer, int tag, const void* buffer, std::size_t bytes) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(buffer), static_cast<std::uint32_t>(bytes), localKey(buffer, bytes)};
  ibv_send_wr wr{};
  wr.wr_id = static_cast<std::uint64_t>(slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.imm_data = htonl(static_cast<std::uint32_t>(tag));
  wr.send_flags = IBV_SEND_SIGNALED;
  postSendRequest(slot, peer, wr);
}

void VerbsTransport::postRecv(int slot, int peer, int tag, void* buffer, std::size_t bytes) {
  if (peerFailed_[static_cast<std::size_t>(peer)])
    throw RuntimeFailure("verbs: rank " + std::to_string(peer) + " was lost earlier; not posting slot " +
                         std::to_string(slot));
  ibv_sge sge{reinterpret_cast<std::uint64_t>(buffer), static_cast<std::uint32_t>(bytes), localKey(buffer, bytes)};
  ibv_recv_wr wr{};
  wr.wr_id = static_cast<std::uint64_t>(slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  const int rc = ibv_post_recv(qps_[static_cast<std::size_t>(peer)].get(), &wr, &bad);
  if (rc != 0) throw RuntimeFailure("ibv_post_recv from rank " + std::to_string(peer) + ": " + errnoText(rc));
  window_.receivePosted();
  Slot& s = slots_[static_cast<std::size_t>(slot)];
  s.state = SlotState::pending;
  s.peer = peer;
  s.isReceive = true;
  s.expectedTag = static_cast<std::uint32_t>(tag);
}

bool VerbsTransport::testSlots(int first, int count) {
  ibv_wc wc[16];
  const int n = ibv_poll_cq(cq_.get(), 16, wc);
  if (n < 0) throw RuntimeFailure("ibv_poll_cq failed");
  for (int i = 0; i < n; ++i) {
    if (wc[i].status != IBV_WC_SUCCESS) failCompletion(wc[i]);
    if (wc[i].wr_id & flushSlotMarker) wc[i].wr_id &= ~flushSlotMarker;
    Slot& s = slots_[static_cast<std::size_t>(wc[i].wr_id)];
    if (s.isReceive && (wc[i].wc_flags & IBV_WC_WITH_IMM) && ntohl(wc[i].imm_data) != s.expectedTag)
      throw RuntimeFailure("verbs: a message with tag " + std::to_string(ntohl(wc[i].imm_data)) + " from rank " +
                           std::to_string(s.peer) + " landed in slot " + std::to_string(wc[i].wr_id) +
                           ", posted for tag " + std::to_string(s.expectedTag) +
                           " (verbs matches receives in posting order)");
    s.state = SlotState::done;
    // Room freed in the queues: held-back sends go out now.
    if (s.isReceive)
      window_.receiveCompleted([this](int item) { postWaitingSend(item); });
    else
      window_.complete(s.peer, [this](int item) { postWaitingSend(item); });
  }
  for (int i = first; i < first + count; ++i)
    if (slots_[static_cast<std::size_t>(i)].state == SlotState::pending) return false;
  return true;
}

void VerbsTransport::failCompletion(const ibv_wc& wc) {
  const auto slot = static_cast<std::size_t>(wc.wr_id & ~flushSlotMarker);
  const int peer = slot < slots_.size() ? slots_[slot].peer : -1;
  std::string message = "verbs: work request in slot " + std::to_string(slot) + " with rank " + std::to_string(peer) +
                        " failed: " + ibv_wc_status_str(wc.status);
  if (wc.status == IBV_WC_RETRY_EXC_ERR) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.3f", verbs::lostPeerSeconds(options_.timeout, options_.retryCount));
    message += " (no ACK after " + std::string(seconds) + " s = 4.096 us x 2^" + std::to_string(options_.timeout) +
               " x (" + std::to_string(options_.retryCount) + "+1): peer or link lost)";
  }
  if (peer >= 0) peerFailed_[static_cast<std::size_t>(peer)] = true;
  reportError({runtime::monotonicNow(), peer, message});
  throw RuntimeFailure(message);
}

void VerbsTransport::drainAfterError(const runtime::Deadline& deadline) {
  // Moving a QP to ERR flushes its outstanding work requests into the CQ.
  for (auto& qp : qps_) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(qp.get(), &attr, IBV_QP_STATE);
  }
  // Sends still held back never reached the hardware: nothing will flush them.
  window_.dropWaiting([&](int slot) { slots_[static_cast<std::size_t>(slot)].state = SlotState::done; });
  auto anyPending = [&] {
    return std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.state == SlotState::pending; });
  };
  runtime::waitUntil(
      [&] {
        ibv_wc wc[16];
        const int n = ibv_poll_cq(cq_.get(), 16, wc);
        for (int i = 0; i < n; ++i) {
          const auto slot = static_cast<std::size_t>(wc[i].wr_id & ~flushSlotMarker);
          if (slot < slots_.size()) slots_[slot].state = SlotState::done;
        }
        return !anyPending();
      },
      deadline, "flushed RDMA work requests after a reset");
  for (auto& s : slots_) s.state = SlotState::idle;
  window_.clearInFlight();
}

void VerbsTransport::reset(const runtime::Deadline& deadline) {
  drainAfterError(deadline);
  for (auto& qp : qps_) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RESET;
    if (ibv_modify_qp(qp.get(), &attr, IBV_QP_STATE) != 0)
      throw RuntimeFailure("ibv_modify_qp to RESET: " + errnoText(errno));
  }
  // Same QP numbers and PSNs: both sides reconnect the same pairs. A peer
  // that is really gone fails again on first use.
  world_.barrier(deadline);
  for (int p = 0; p < world_.size(); ++p) bringUp(p);
  std::fill(peerFailed_.begin(), peerFailed_.end(), false);
  world_.barrier(deadline);
}

std::vector<std::pair<std::string, std::string>> VerbsTransport::describe() const {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.6g", verbs::lostPeerSeconds(options_.timeout, options_.retryCount));
  // RDMA reads in flight per queue pair, as agreed with each peer.
  int fewestReads = 255, mostReads = 1;
  for (std::size_t p = 0; p < localInfo_.size() && p < remoteInfo_.size(); ++p) {
    const int n = verbs::agreedReadsInFlight(localInfo_[p], remoteInfo_[p], options_.maxReadsInFlight);
    fewestReads = std::min(fewestReads, n);
    mostReads = std::max(mostReads, n);
  }
  const std::string readsInFlight = fewestReads == mostReads
                                        ? std::to_string(mostReads)
                                        : std::to_string(fewestReads) + ".." + std::to_string(mostReads);
  std::string gidType = "none";
  if (gid_.index >= 0) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(context_.get(), static_cast<std::uint32_t>(options_.port),
                         static_cast<std::uint32_t>(gid_.index), &entry, 0) == 0)
      gidType = gidTypeName(static_cast<ibv_gid_type>(entry.gid_type));
  }
  return {
      {"verbs_device", deviceName_},
      {"verbs_port", std::to_string(options_.port)},
      {"verbs_link_layer", linkLayer_ == verbs::LinkLayer::ethernet ? "Ethernet (RoCE)" : "InfiniBand"},
      {"verbs_gid_index", std::to_string(gid_.index)},
      {"verbs_gid_type", gidType},
      {"verbs_gid_choice", gid_.why},
      {"verbs_timeout", std::to_string(options_.timeout)},
      {"verbs_retry_cnt", std::to_string(options_.retryCount)},
      {"verbs_lost_peer_seconds", seconds},
      {"verbs_max_rd_atomic", readsInFlight},
      {"verbs_device_max_qp_rd_atom", std::to_string(deviceMaxResponderReads_)},
      {"verbs_device_max_qp_init_rd_atom", std::to_string(deviceMaxInitiatorReads_)},
      {"verbs_max_rd_atomic_limit", options_.maxReadsInFlight > 0 ? std::to_string(options_.maxReadsInFlight) + " (" +
                                                                        options_.maxReadsInFlightFrom + ")"
                                                                  : "none"},
      {"verbs_send_queue_depth", std::to_string(maxWorkRequests)},
      {"verbs_completion_queue_depth", std::to_string(cq_ ? cq_->cqe : 0)},
  };
}

int VerbsTransport::exposeRegion(void* base, std::size_t bytes, MemoryKind kind, const runtime::Deadline& deadline) {
  (void)kind;  // CUDA memory needs GPUDirect (nvidia-peermem); ibv_reg_mr fails clearly without it
  Region region;
  region.mr.reset(ibv_reg_mr(pd_.get(), base, bytes ? bytes : 1, verbs::remoteAccess));
  if (!region.mr) throw RuntimeFailure("ibv_reg_mr of an exposed region: " + errnoText(errno));
  std::uint64_t blob[3] = {reinterpret_cast<std::uint64_t>(base), bytes, region.mr->rkey};
  const auto all = allgatherBlobs(world_, std::as_bytes(std::span(blob)), deadline);
  for (const auto& b : all) {
    std::uint64_t v[3];
    std::memcpy(v, b.data(), sizeof v);
    region.remoteBase.push_back(v[0]);
    region.remoteBytes.push_back(v[1]);
    region.remoteKey.push_back(static_cast<std::uint32_t>(v[2]));
  }
  regions_.push_back(std::move(region));
  return static_cast<int>(regions_.size() - 1);
}

void VerbsTransport::withdrawRegion(int region, const runtime::Deadline& deadline) {
  world_.barrier(deadline);
  regions_.at(static_cast<std::size_t>(region)).mr.reset();
}

void VerbsTransport::postRdma(int slot, int peer, int region, std::size_t remoteOffset, const void* local,
                              std::size_t bytes, ibv_wr_opcode opcode, const char* operation) {
  const Region& r = regions_.at(static_cast<std::size_t>(region));
  const auto p = static_cast<std::size_t>(peer);
  if (!r.mr || remoteOffset + bytes > r.remoteBytes[p])
    throw UsageError(std::string("verbs ") + operation + " of " + std::to_string(bytes) + " bytes at offset " +
                     std::to_string(remoteOffset) + " does not fit region " + std::to_string(region) + " of rank " +
                     std::to_string(peer));
  ibv_sge sge{reinterpret_cast<std::uint64_t>(local), static_cast<std::uint32_t>(bytes), localKey(local, bytes)};
  auto wr = verbs::rdmaWorkRequest(static_cast<std::uint64_t>(slot), opcode, sge,
                                   {r.remoteBase[p] + remoteOffset, r.remoteKey[p]});
  postSendRequest(slot, peer, wr);
}

void VerbsTransport::postPut(int slot, int peer, int region, std::size_t remoteOffset, const void* local,
                             std::size_t bytes) {
  postRdma(slot, peer, region, remoteOffset, local, bytes, IBV_WR_RDMA_WRITE, "put");
}

void VerbsTransport::postGet(int slot, int peer, int region, std::size_t remoteOffset, void* local, std::size_t bytes) {
  // The local buffer is registered with local write access (verbs::remoteAccess);
  // the read's completion means the data is in `local`. The queue pair allows
  // the reads in flight both devices agreed on (verbs::agreedReadsInFlight);
  // the HCA queues the rest in order.
  postRdma(slot, peer, region, remoteOffset, local, bytes, IBV_WR_RDMA_READ, "get");
}

void VerbsTransport::postFlush(int slot, int peer) {
  // A zero-length RDMA read with the fence flag completes only after every
  // earlier write on this RC queue pair has been acknowledged by the peer.
  ibv_send_wr wr{};
  wr.wr_id = static_cast<std::uint64_t>(slot) | flushSlotMarker;
  wr.num_sge = 0;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
  postSendRequest(slot, peer, wr);
}

}  // namespace fabscope::transport

#endif  // FABSCOPE_HAVE_VERBS

namespace fabscope::transport {

#if FABSCOPE_HAVE_VERBS
namespace {
std::unique_ptr<Transport> openVerbsTransport(const runtime::Communicator& world, int, const OpenRequest& request,
                                              const runtime::Deadline& deadline) {
  return std::make_unique<VerbsTransport>(world, settingsIn<VerbsSettings>(request, "verbs"), deadline);
}
}  // namespace
#else
constexpr Opener openVerbsTransport = nullptr;
#endif

const TransportEntry& verbsTransportEntry() {
  static const TransportEntry entry{"verbs",
                                    FABSCOPE_HAVE_VERBS ? "" : "built without libibverbs",
                                    {.put = true, .get = true},
                                    VerbsSettings::rules(),
                                    openVerbsTransport};
  return entry;
}

}  // namespace fabscope::transport
