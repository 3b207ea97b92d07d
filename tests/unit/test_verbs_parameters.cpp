// Parameter logic of the libibverbs backend: options, lost-peer time, GID
// choice for RoCE v2 vs InfiniBand, QP attributes per state transition.
#include "fabscope/BuildConfig.hpp"

#if FABSCOPE_HAVE_VERBS
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "runtime/Errors.hpp"
#include "transport/VerbsParameters.hpp"

using namespace fabscope::transport::verbs;

namespace {

VerbsOptions optionsWith(std::map<std::string, std::string> env) {
  return verbsOptionsFrom([env = std::move(env)](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

GidEntry gid(int index, ibv_gid_type type, std::array<std::uint8_t, 16> raw) {
  GidEntry e;
  e.index = index;
  e.type = type;
  e.gid = raw;
  return e;
}

const std::array<std::uint8_t, 16> linkLocal{0xfe, 0x80, 0,    0,    0,    0,    0,    0,
                                             0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55};
const std::array<std::uint8_t, 16> ipv4Mapped{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3};
const std::array<std::uint8_t, 16> globalV6{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
const std::array<std::uint8_t, 16> zero{};

}  // namespace

TEST(VerbsOptions, DefaultsWithoutEnvironment) {
  const auto o = optionsWith({});
  EXPECT_EQ(o.device, "");
  EXPECT_EQ(o.port, 1);
  EXPECT_EQ(o.gidIndex, -1);
  EXPECT_EQ(o.timeout, 14);
  EXPECT_EQ(o.retryCount, 7);
}

TEST(VerbsOptions, ReadsEveryVariable) {
  const auto o = optionsWith({{"FABSCOPE_VERBS_DEVICE", "mlx5_3"},
                              {"FABSCOPE_VERBS_PORT", "2"},
                              {"FABSCOPE_VERBS_GID_INDEX", "3"},
                              {"FABSCOPE_VERBS_TIMEOUT", "18"},
                              {"FABSCOPE_VERBS_RETRY_CNT", "4"}});
  EXPECT_EQ(o.device, "mlx5_3");
  EXPECT_EQ(o.port, 2);
  EXPECT_EQ(o.gidIndex, 3);
  EXPECT_EQ(o.timeout, 18);
  EXPECT_EQ(o.retryCount, 4);
  EXPECT_EQ(optionsWith({{"FABSCOPE_VERBS_GID_INDEX", "auto"}}).gidIndex, -1);
}

TEST(VerbsOptions, RejectsOutOfRangeValuesNamingTheVariable) {
  for (const auto& [name, value] : std::map<std::string, std::string>{{"FABSCOPE_VERBS_TIMEOUT", "32"},
                                                                      {"FABSCOPE_VERBS_RETRY_CNT", "8"},
                                                                      {"FABSCOPE_VERBS_PORT", "0"},
                                                                      {"FABSCOPE_VERBS_GID_INDEX", "x"}}) {
    try {
      optionsWith({{name, value}});
      ADD_FAILURE() << name << "=" << value << " was accepted";
    } catch (const fabscope::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

TEST(VerbsLostPeer, FollowsTheFormula) {
  // 4.096 us x 2^14 x 8 = 0.537 s: the common default.
  EXPECT_NEAR(lostPeerSeconds(14, 7), 4.096e-6 * 16384 * 8, 1e-12);
  EXPECT_NEAR(lostPeerSeconds(14, 7), 0.536870912, 1e-9);
  EXPECT_NEAR(lostPeerSeconds(1, 0), 8.192e-6, 1e-15);
  EXPECT_NEAR(lostPeerSeconds(20, 3), 4.096e-6 * 1048576 * 4, 1e-9);
  EXPECT_NEAR(lostPeerSeconds(31, 7), 4.096e-6 * 2147483648.0 * 8, 1e-3);  // about 19.5 hours
  EXPECT_TRUE(std::isinf(lostPeerSeconds(0, 7)));                          // timeout 0: wait forever
}

TEST(VerbsGid, InfiniBandUsesLidWithoutGrh) {
  const auto c = chooseGid(LinkLayer::infiniband, {gid(0, IBV_GID_TYPE_IB, linkLocal)}, -1);
  EXPECT_EQ(c.index, -1);
}

TEST(VerbsGid, RocePrefersV2WithIpv4) {
  const std::vector<GidEntry> table{gid(0, IBV_GID_TYPE_ROCE_V1, linkLocal), gid(1, IBV_GID_TYPE_ROCE_V2, linkLocal),
                                    gid(2, IBV_GID_TYPE_ROCE_V1, ipv4Mapped), gid(3, IBV_GID_TYPE_ROCE_V2, ipv4Mapped)};
  const auto c = chooseGid(LinkLayer::ethernet, table, -1);
  EXPECT_EQ(c.index, 3);
  EXPECT_NE(c.why.find("v2"), std::string::npos);
}

TEST(VerbsGid, RoceFallsBackInOrder) {
  EXPECT_EQ(chooseGid(LinkLayer::ethernet,
                      {gid(0, IBV_GID_TYPE_ROCE_V2, linkLocal), gid(1, IBV_GID_TYPE_ROCE_V2, globalV6)}, -1)
                .index,
            1);
  EXPECT_EQ(chooseGid(LinkLayer::ethernet,
                      {gid(0, IBV_GID_TYPE_ROCE_V1, linkLocal), gid(1, IBV_GID_TYPE_ROCE_V2, linkLocal)}, -1)
                .index,
            1);
  EXPECT_EQ(chooseGid(LinkLayer::ethernet, {gid(0, IBV_GID_TYPE_ROCE_V1, linkLocal)}, -1).index, 0);
  // Empty (all-zero) entries are never chosen.
  EXPECT_EQ(
      chooseGid(LinkLayer::ethernet, {gid(0, IBV_GID_TYPE_ROCE_V2, zero), gid(1, IBV_GID_TYPE_ROCE_V1, linkLocal)}, -1)
          .index,
      1);
}

TEST(VerbsGid, RoceWithoutAnyAddressFailsClearly) {
  EXPECT_THROW(chooseGid(LinkLayer::ethernet, {gid(0, IBV_GID_TYPE_ROCE_V2, zero)}, -1), fabscope::RuntimeFailure);
  EXPECT_THROW(chooseGid(LinkLayer::ethernet, {}, -1), fabscope::RuntimeFailure);
}

TEST(VerbsGid, ExplicitIndexMustExistAndBeNonZero) {
  const std::vector<GidEntry> table{gid(0, IBV_GID_TYPE_ROCE_V1, linkLocal), gid(1, IBV_GID_TYPE_ROCE_V2, zero)};
  EXPECT_EQ(chooseGid(LinkLayer::ethernet, table, 0).index, 0);    // the user's choice wins over v2 preference
  EXPECT_EQ(chooseGid(LinkLayer::infiniband, table, 0).index, 0);  // IB with an explicit GRH
  EXPECT_THROW(chooseGid(LinkLayer::ethernet, table, 1), fabscope::RuntimeFailure);
  EXPECT_THROW(chooseGid(LinkLayer::ethernet, table, 5), fabscope::RuntimeFailure);
}

TEST(VerbsGid, ClassifiesAddresses) {
  EXPECT_TRUE(isIpv4MappedGid(ipv4Mapped));
  EXPECT_FALSE(isIpv4MappedGid(linkLocal));
  EXPECT_TRUE(isLinkLocalGid(linkLocal));
  EXPECT_FALSE(isLinkLocalGid(globalV6));
  EXPECT_TRUE(isZeroGid(zero));
}

TEST(VerbsQpTransitions, InitAllowsRemoteAccessOnThePort) {
  const auto t = toInit(2);
  EXPECT_EQ(t.attr.qp_state, IBV_QPS_INIT);
  EXPECT_EQ(t.attr.port_num, 2);
  EXPECT_EQ(t.attr.pkey_index, 0);
  EXPECT_EQ(t.attr.qp_access_flags, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  EXPECT_EQ(t.mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

TEST(VerbsQpTransitions, ReadyToReceiveTargetsTheRemoteQp) {
  VerbsOptions o;
  o.port = 1;
  QpEndpointInfo local, remote;
  local.qpn = 0x11;
  local.psn = 0x123;
  local.mtu = IBV_MTU_4096;
  remote.qpn = 0x2222;
  remote.psn = 0x1abcdef;  // only 24 bits are a PSN
  remote.lid = 7;
  remote.mtu = IBV_MTU_1024;
  remote.gid = ipv4Mapped;

  const auto ib = toReadyToReceive(o, local, remote, -1);
  EXPECT_EQ(ib.attr.qp_state, IBV_QPS_RTR);
  EXPECT_EQ(ib.attr.dest_qp_num, 0x2222u);
  EXPECT_EQ(ib.attr.rq_psn, 0xabcdefu);
  EXPECT_EQ(ib.attr.path_mtu, IBV_MTU_1024);  // the smaller of both ports
  EXPECT_EQ(ib.attr.ah_attr.dlid, 7);
  EXPECT_EQ(ib.attr.ah_attr.is_global, 0);
  EXPECT_EQ(ib.attr.ah_attr.port_num, 1);
  EXPECT_EQ(ib.attr.max_dest_rd_atomic, 1);
  EXPECT_EQ(ib.attr.min_rnr_timer, 12);
  EXPECT_EQ(ib.mask, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);

  const auto roce = toReadyToReceive(o, local, remote, 3);
  EXPECT_EQ(roce.attr.ah_attr.is_global, 1);
  EXPECT_EQ(roce.attr.ah_attr.grh.sgid_index, 3);
  EXPECT_GT(roce.attr.ah_attr.grh.hop_limit, 1);
  EXPECT_EQ(0, std::memcmp(roce.attr.ah_attr.grh.dgid.raw, ipv4Mapped.data(), 16));
}

TEST(VerbsQpTransitions, ReadyToSendCarriesTimeoutAndRetries) {
  VerbsOptions o;
  o.timeout = 18;
  o.retryCount = 3;
  QpEndpointInfo local;
  local.psn = 0xfff00042;
  const auto t = toReadyToSend(o, local, QpEndpointInfo{});
  EXPECT_EQ(t.attr.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(t.attr.timeout, 18);
  EXPECT_EQ(t.attr.retry_cnt, 3);
  EXPECT_EQ(t.attr.rnr_retry, 7);
  EXPECT_EQ(t.attr.sq_psn, 0xf00042u);  // only 24 bits are a PSN
  EXPECT_EQ(t.attr.max_rd_atomic, 1);
  EXPECT_EQ(t.mask, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                        IBV_QP_MAX_QP_RD_ATOMIC);
}

TEST(VerbsRdmaWorkRequest, ReadIsSignalledAndTargetsTheRemoteRegion) {
  std::uint64_t local[4] = {};
  ibv_sge sge{reinterpret_cast<std::uint64_t>(local), sizeof local, 0x1234};
  const auto read = rdmaWorkRequest(17, IBV_WR_RDMA_READ, sge, {0xabc000 + 64, 0x77});
  EXPECT_EQ(read.opcode, IBV_WR_RDMA_READ);
  EXPECT_EQ(read.wr_id, 17u);
  EXPECT_EQ(read.send_flags, static_cast<unsigned>(IBV_SEND_SIGNALED));  // completion = data is local
  EXPECT_EQ(read.num_sge, 1);
  EXPECT_EQ(read.sg_list, &sge);
  EXPECT_EQ(read.sg_list->addr, reinterpret_cast<std::uint64_t>(local));
  EXPECT_EQ(read.sg_list->length, sizeof local);
  EXPECT_EQ(read.wr.rdma.remote_addr, 0xabc000u + 64);
  EXPECT_EQ(read.wr.rdma.rkey, 0x77u);
  EXPECT_EQ(read.next, nullptr);

  const auto write = rdmaWorkRequest(3, IBV_WR_RDMA_WRITE, sge, {0x1000, 9});
  EXPECT_EQ(write.opcode, IBV_WR_RDMA_WRITE);
  EXPECT_EQ(write.wr.rdma.remote_addr, 0x1000u);
  EXPECT_EQ(write.wr.rdma.rkey, 9u);
}

TEST(VerbsQpTransitions, RemoteReadIsAllowedForGet) {
  // postGet (RDMA READ) needs remote read access on the registered memory and
  // at least one outstanding read on both ends of the queue pair.
  EXPECT_NE(remoteAccess & IBV_ACCESS_REMOTE_READ, 0);
  EXPECT_NE(remoteAccess & IBV_ACCESS_LOCAL_WRITE, 0);
  EXPECT_GE(toReadyToSend(VerbsOptions{}, QpEndpointInfo{}, QpEndpointInfo{}).attr.max_rd_atomic, 1);
  EXPECT_GE(toReadyToReceive(VerbsOptions{}, QpEndpointInfo{}, QpEndpointInfo{}, -1).attr.max_dest_rd_atomic, 1);
}

namespace {
QpEndpointInfo endWithReadLimits(int initiator, int responder) {
  QpEndpointInfo e;
  e.maxInitiatorReads = readLimitOf(initiator);
  e.maxResponderReads = readLimitOf(responder);
  return e;
}
}  // namespace

TEST(VerbsReadsInFlight, BothEndsAgreeOnTheSmallestDeviceLimit) {
  // A ConnectX-class adapter (16 both ways) and an older one (initiator 8, responder 4).
  const auto a = endWithReadLimits(16, 16), b = endWithReadLimits(8, 4);
  EXPECT_EQ(agreedReadsInFlight(a, b, 0), 4);
  EXPECT_EQ(agreedReadsInFlight(b, a, 0), 4) << "both ends must compute the same number";
  EXPECT_EQ(agreedReadsInFlight(a, a, 0), 16) << "no artificial limit of 1 between capable adapters";
  // What each end programs into its QP: its reads out == the peer's reads answered.
  const VerbsOptions o;
  EXPECT_EQ(toReadyToSend(o, a, b).attr.max_rd_atomic, toReadyToReceive(o, b, a, -1).attr.max_dest_rd_atomic);
  EXPECT_EQ(toReadyToSend(o, a, a).attr.max_rd_atomic, 16);
  EXPECT_EQ(toReadyToReceive(o, a, a, -1).attr.max_dest_rd_atomic, 16);
}

TEST(VerbsReadsInFlight, TheRunCanLowerItButNeverRaiseIt) {
  const auto a = endWithReadLimits(16, 16);
  EXPECT_EQ(agreedReadsInFlight(a, a, 2), 2);
  EXPECT_EQ(agreedReadsInFlight(a, a, 64), 16);
  VerbsOptions o = verbsOptionsFrom([](const char* name) -> const char* {
    return std::string(name) == "FABSCOPE_VERBS_MAX_RD_ATOMIC" ? "3" : nullptr;
  });
  EXPECT_EQ(o.maxReadsInFlight, 3);
  EXPECT_EQ(toReadyToSend(o, a, a).attr.max_rd_atomic, 3);
  EXPECT_EQ(toReadyToReceive(o, a, a, -1).attr.max_dest_rd_atomic, 3);
  EXPECT_EQ(o.maxReadsInFlightFrom, "FABSCOPE_VERBS_MAX_RD_ATOMIC");
  // The scenario's limit: the lower one wins, whoever set it, and says so.
  VerbsOptions lowered = o;
  lowerReadsInFlight(lowered, 5, "scenario");
  EXPECT_EQ(lowered.maxReadsInFlight, 3);
  EXPECT_EQ(lowered.maxReadsInFlightFrom, "FABSCOPE_VERBS_MAX_RD_ATOMIC");
  lowerReadsInFlight(lowered, 2, "scenario");
  EXPECT_EQ(lowered.maxReadsInFlight, 2);
  EXPECT_EQ(lowered.maxReadsInFlightFrom, "scenario");
  EXPECT_EQ(toReadyToSend(lowered, a, a).attr.max_rd_atomic, 2);
  VerbsOptions plain;
  lowerReadsInFlight(plain, 0, "scenario");
  EXPECT_EQ(plain.maxReadsInFlight, 0);
  lowerReadsInFlight(plain, 8, "scenario");
  EXPECT_EQ(toReadyToSend(plain, a, a).attr.max_rd_atomic, 8);
  EXPECT_THROW(verbsOptionsFrom([](const char* name) -> const char* {
                 return std::string(name) == "FABSCOPE_VERBS_MAX_RD_ATOMIC" ? "0" : nullptr;
               }),
               fabscope::UsageError);
}

TEST(VerbsReadsInFlight, DeviceLimitsAreClampedToWhatAQpHolds) {
  EXPECT_EQ(readLimitOf(0), 1);  // a device reporting 0 still allows the one read a get needs
  EXPECT_EQ(readLimitOf(16), 16);
  EXPECT_EQ(readLimitOf(4096), 255);
}
#endif
