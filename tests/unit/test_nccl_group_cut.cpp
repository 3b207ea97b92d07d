// Where the NCCL transport cuts posted operations into groups: the message
// patterns of fabscope's kinds, as they post them (the rule's why is in
// src/transport/NcclGroupCut.hpp; the hang it prevents was seen on 2 H200s).
#include <gtest/gtest.h>

#include <vector>

#include "transport/NcclGroupCut.hpp"

using fabscope::transport::endOfNcclGroup;
using fabscope::transport::PostedOperation;

namespace {

constexpr PostedOperation send(int peer) { return {true, peer}; }
constexpr PostedOperation recv(int peer) { return {false, peer}; }

// Sizes of the successive groups.
std::vector<std::size_t> groups(const std::vector<PostedOperation>& posted, int peers = 4) {
  std::vector<std::uint8_t> sentTo(static_cast<std::size_t>(peers), 0);
  std::vector<std::size_t> sizes;
  for (std::size_t begin = 0; begin < posted.size();) {
    const auto end = endOfNcclGroup(posted, begin, sentTo);
    EXPECT_GT(end, begin);
    if (end <= begin) break;  // no progress: the expectation above has failed; never loop for ever
    sizes.push_back(end - begin);
    begin = end;
  }
  for (const auto v : sentTo) EXPECT_EQ(v, 0) << "scratch must come back zeroed";
  return sizes;
}

}  // namespace

TEST(NcclGroupCut, PingPongStaysOneGroup) {
  // latency: the receive for the answer is posted before the send.
  EXPECT_EQ(groups({recv(1), send(1)}), (std::vector<std::size_t>{2}));
}

TEST(NcclGroupCut, WindowAckIsCutFromTheWindow) {
  // bandwidth sender: window sends, then the ack that answers them.
  EXPECT_EQ(groups({send(1), send(1), send(1), recv(1)}), (std::vector<std::size_t>{3, 1}));
}

TEST(NcclGroupCut, BidirectionalWindowStaysPaired) {
  // bibw: both sides post the receives first; the k-th send pairs with the k-th receive.
  EXPECT_EQ(groups({recv(1), recv(1), send(1), send(1)}), (std::vector<std::size_t>{4}));
}

TEST(NcclGroupCut, OtherPeersDoNotCut) {
  // incast receiver: receives from several senders and a probe ping, then acks.
  EXPECT_EQ(groups({recv(2), recv(3), recv(1), send(2), send(3)}), (std::vector<std::size_t>{5}));
  // a send to one peer does not cut a receive from another
  EXPECT_EQ(groups({send(2), recv(3)}), (std::vector<std::size_t>{2}));
}

TEST(NcclGroupCut, ProbeAnswerThenNextPingAreTwoGroups) {
  // incast receiver serving the probe: pong out, then the receive for the next ping.
  EXPECT_EQ(groups({send(1), recv(1)}), (std::vector<std::size_t>{1, 1}));
  // and repeated: each receive after a send to its peer starts a group
  EXPECT_EQ(groups({send(1), recv(1), send(1), recv(1)}), (std::vector<std::size_t>{1, 2, 1}));
}
