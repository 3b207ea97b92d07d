#pragma once
// The parameter logic of the libibverbs backend, kept free of device calls so
// it can be tested on machines without RDMA hardware: options from the
// environment and the time after which RC retries give up on a peer
// (VerbsOptions.hpp, in every build), GID choice
// for RoCE v2 vs InfiniBand, and the QP attributes of each state transition.
#include <infiniband/verbs.h>

#include "transport/VerbsOptions.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fabscope::transport::verbs {

enum class LinkLayer { infiniband, ethernet };

struct GidEntry {
  int index = 0;
  std::array<std::uint8_t, 16> gid{};
  ibv_gid_type type = IBV_GID_TYPE_IB;  // IB, RoCE v1 or RoCE v2
};

bool isZeroGid(const std::array<std::uint8_t, 16>& gid);
bool isIpv4MappedGid(const std::array<std::uint8_t, 16>& gid);
bool isLinkLocalGid(const std::array<std::uint8_t, 16>& gid);  // fe80::/10

struct GidChoice {
  int index = -1;   // -1: no GRH (InfiniBand inside one subnet, addressed by LID)
  std::string why;  // recorded in the result file
};

// InfiniBand: the LID addresses the peer; a GID (GRH) only when one is asked
// for. RoCE: a GRH is mandatory; prefer RoCE v2 (routable, UDP) with an IPv4
// address, then any RoCE v2, then RoCE v1. An explicit index must exist and be
// non-zero. Throws RuntimeFailure when RoCE has no usable GID.
GidChoice chooseGid(LinkLayer linkLayer, const std::vector<GidEntry>& table, int requestedIndex);

// What one side of a queue pair tells the other over MPI.
struct QpEndpointInfo {
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;  // 24 bits
  std::uint16_t lid = 0;
  std::uint8_t mtu = IBV_MTU_1024;  // ibv_mtu of the sender's active port
  std::array<std::uint8_t, 16> gid{};
  // The sender's device limits for RDMA reads in flight per queue pair
  // (ibv_device_attr max_qp_init_rd_atom as initiator, max_qp_rd_atom as responder).
  std::uint8_t maxInitiatorReads = 1;
  std::uint8_t maxResponderReads = 1;
};

// Clamps a device limit (an int in ibv_device_attr) to the 1..255 a QP attribute holds.
std::uint8_t readLimitOf(int deviceValue);

// RDMA reads one queue pair keeps in flight, agreed by both ends from what
// they exchanged: at most what each end may initiate and each end may answer,
// and at most `requested` when it is > 0. Both ends compute the same number,
// used as max_rd_atomic and max_dest_rd_atomic on both sides.
int agreedReadsInFlight(const QpEndpointInfo& local, const QpEndpointInfo& remote, int requested);

struct QpTransition {
  ibv_qp_attr attr{};
  int mask = 0;
};

inline constexpr int remoteAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

QpTransition toInit(int port);
// Path MTU is the smaller of both active MTUs.
QpTransition toReadyToReceive(const VerbsOptions& options, const QpEndpointInfo& local, const QpEndpointInfo& remote,
                              int gidIndex);
QpTransition toReadyToSend(const VerbsOptions& options, const QpEndpointInfo& local, const QpEndpointInfo& remote);

// A signalled one-sided work request (IBV_WR_RDMA_WRITE for put,
// IBV_WR_RDMA_READ for get) moving `sge` to or from remoteAddress/rkey.
// `sge` must outlive the request until ibv_post_send has taken it.
struct RdmaTarget {
  std::uint64_t remoteAddress = 0;
  std::uint32_t rkey = 0;
};
ibv_send_wr rdmaWorkRequest(std::uint64_t slot, ibv_wr_opcode opcode, ibv_sge& sge, RdmaTarget target);

}  // namespace fabscope::transport::verbs
