#include "transport/VerbsParameters.hpp"

#include <algorithm>

#include "runtime/Errors.hpp"

namespace fabscope::transport::verbs {

bool isZeroGid(const std::array<std::uint8_t, 16>& gid) {
  return std::all_of(gid.begin(), gid.end(), [](std::uint8_t b) { return b == 0; });
}

bool isIpv4MappedGid(const std::array<std::uint8_t, 16>& gid) {
  for (int i = 0; i < 10; ++i)
    if (gid[static_cast<std::size_t>(i)] != 0) return false;
  return gid[10] == 0xff && gid[11] == 0xff;
}

bool isLinkLocalGid(const std::array<std::uint8_t, 16>& gid) { return gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80; }

GidChoice chooseGid(LinkLayer linkLayer, const std::vector<GidEntry>& table, int requestedIndex) {
  if (requestedIndex >= 0) {
    for (const auto& e : table)
      if (e.index == requestedIndex) {
        if (isZeroGid(e.gid))
          throw RuntimeFailure("FABSCOPE_VERBS_GID_INDEX=" + std::to_string(requestedIndex) +
                               ": that GID table entry is empty (no address configured on the port)");
        return {requestedIndex, "FABSCOPE_VERBS_GID_INDEX"};
      }
    throw RuntimeFailure("FABSCOPE_VERBS_GID_INDEX=" + std::to_string(requestedIndex) +
                         ": the port's GID table has no such entry (" + std::to_string(table.size()) + " entries)");
  }
  if (linkLayer == LinkLayer::infiniband) return {-1, "InfiniBand: addressed by LID, no GRH"};

  auto pick = [&](auto&& accept) -> const GidEntry* {
    for (const auto& e : table)
      if (!isZeroGid(e.gid) && accept(e)) return &e;
    return nullptr;
  };
  if (auto* e = pick([](const GidEntry& g) { return g.type == IBV_GID_TYPE_ROCE_V2 && isIpv4MappedGid(g.gid); }))
    return {e->index, "RoCE v2, IPv4 address"};
  if (auto* e = pick([](const GidEntry& g) { return g.type == IBV_GID_TYPE_ROCE_V2 && !isLinkLocalGid(g.gid); }))
    return {e->index, "RoCE v2, IPv6 address"};
  if (auto* e = pick([](const GidEntry& g) { return g.type == IBV_GID_TYPE_ROCE_V2; }))
    return {e->index, "RoCE v2, link-local address (not routable)"};
  if (auto* e = pick([](const GidEntry& g) { return g.type == IBV_GID_TYPE_ROCE_V1; }))
    return {e->index, "RoCE v1 (not routable: no RoCE v2 GID on this port)"};
  throw RuntimeFailure("RoCE port has no usable GID (is an IP address configured on its network interface?)");
}

QpTransition toInit(int port) {
  QpTransition t;
  t.attr.qp_state = IBV_QPS_INIT;
  t.attr.pkey_index = 0;
  t.attr.port_num = static_cast<std::uint8_t>(port);
  t.attr.qp_access_flags = remoteAccess;
  t.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  return t;
}

std::uint8_t readLimitOf(int deviceValue) { return static_cast<std::uint8_t>(std::clamp(deviceValue, 1, 255)); }

int agreedReadsInFlight(const QpEndpointInfo& local, const QpEndpointInfo& remote, int requested) {
  int n = std::min({int{local.maxInitiatorReads}, int{local.maxResponderReads}, int{remote.maxInitiatorReads},
                    int{remote.maxResponderReads}});
  if (requested > 0) n = std::min(n, requested);
  return std::max(n, 1);
}

QpTransition toReadyToReceive(const VerbsOptions& options, const QpEndpointInfo& local, const QpEndpointInfo& remote,
                              int gidIndex) {
  QpTransition t;
  t.attr.qp_state = IBV_QPS_RTR;
  t.attr.path_mtu = static_cast<ibv_mtu>(std::min(local.mtu, remote.mtu));
  t.attr.dest_qp_num = remote.qpn;
  t.attr.rq_psn = remote.psn & 0xffffff;
  t.attr.max_dest_rd_atomic = static_cast<std::uint8_t>(agreedReadsInFlight(local, remote, options.maxReadsInFlight));
  t.attr.min_rnr_timer = static_cast<std::uint8_t>(options.minRnrTimer);
  t.attr.ah_attr.port_num = static_cast<std::uint8_t>(options.port);
  t.attr.ah_attr.sl = 0;
  t.attr.ah_attr.src_path_bits = 0;
  t.attr.ah_attr.dlid = remote.lid;
  if (gidIndex >= 0) {
    t.attr.ah_attr.is_global = 1;
    t.attr.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(gidIndex);
    t.attr.ah_attr.grh.hop_limit = 64;  // RoCE v2 is routed over IP
    t.attr.ah_attr.grh.traffic_class = 0;
    t.attr.ah_attr.grh.flow_label = 0;
    std::copy(remote.gid.begin(), remote.gid.end(), t.attr.ah_attr.grh.dgid.raw);
  }
  t.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
           IBV_QP_MIN_RNR_TIMER;
  return t;
}

QpTransition toReadyToSend(const VerbsOptions& options, const QpEndpointInfo& local, const QpEndpointInfo& remote) {
  QpTransition t;
  t.attr.qp_state = IBV_QPS_RTS;
  t.attr.timeout = static_cast<std::uint8_t>(options.timeout);
  t.attr.retry_cnt = static_cast<std::uint8_t>(options.retryCount);
  t.attr.rnr_retry = static_cast<std::uint8_t>(options.rnrRetry);
  t.attr.sq_psn = local.psn & 0xffffff;
  t.attr.max_rd_atomic = static_cast<std::uint8_t>(agreedReadsInFlight(local, remote, options.maxReadsInFlight));
  t.mask =
      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
  return t;
}

ibv_send_wr rdmaWorkRequest(std::uint64_t slot, ibv_wr_opcode opcode, ibv_sge& sge, RdmaTarget target) {
  ibv_send_wr wr{};
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = opcode;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = target.remoteAddress;
  wr.wr.rdma.rkey = target.rkey;
  return wr;
}

}  // namespace fabscope::transport::verbs
