#pragma once
// Where the NCCL transport cuts posted operations into groups (pure logic,
// in every build, unit-tested). Inside a group NCCL pairs the k-th send to a
// peer with the k-th receive from it and runs the pairs in order, so a
// receive whose message the peer sends only after our later sends arrive (a
// bandwidth window's ack) must not share a group with them: a receive from a
// peer that follows a send to the same peer in posting order starts a new
// group. A receive posted before the sends (a ping-pong, a bidirectional
// window) stays with them, paired.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace fabscope::transport {

struct PostedOperation {
  bool send = false;
  int peer = 0;  // 0 <= peer < sentTo.size()
};

// One past the last operation of the group that starts at `begin`.
// `sentTo` is caller-owned scratch, one zeroed entry per peer, returned zeroed.
inline std::size_t endOfNcclGroup(std::span<const PostedOperation> posted, std::size_t begin,
                                  std::vector<std::uint8_t>& sentTo) {
  std::size_t end = begin;
  for (; end < posted.size(); ++end) {
    const auto peer = static_cast<std::size_t>(posted[end].peer);
    if (posted[end].send)
      sentTo[peer] = 1;
    else if (sentTo[peer])
      break;
  }
  for (std::size_t i = begin; i < end; ++i) sentTo[static_cast<std::size_t>(posted[i].peer)] = 0;
  return end;
}

}  // namespace fabscope::transport
