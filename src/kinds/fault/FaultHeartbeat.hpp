#pragma once
// Heartbeats of a fault drill: every rank of the drill sends every other rank
// a small message each interval and declares a peer lost after a deadline of
// silence. They travel on their own tag and slots, apart from the requests, so
// a peer that hangs (alive, connected, silent: no transport reports that) is
// noticed even when no request is waiting on it.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/Clock.hpp"
#include "transport/Transport.hpp"

namespace fabscope::suite {

class Heartbeats {
 public:
  static constexpr int tag = 43;
  static constexpr std::uint64_t bye = ~std::uint64_t{0};  // "I leave on purpose", not a loss

  // `peers`: world ranks; slots [firstSlot, firstSlot + slotsNeeded(peers)) are
  // the caller's reservation; `buffers` holds 2 values per peer.
  Heartbeats(transport::Transport& transport, std::vector<int> peers, int firstSlot, runtime::Nanoseconds interval,
             runtime::Nanoseconds deadline, std::uint64_t* buffers);
  static int slotsNeeded(std::size_t peers) { return 2 * static_cast<int>(peers); }

  // Posts the receives; the first heartbeats go out at the first poll.
  void start(runtime::Nanoseconds now);

  struct Loss {
    int peer = -1;
    runtime::Nanoseconds at = 0;
    std::string detail;
    bool returned = false;  // not a loss: a peer watched for its return (watchForReturn) was heard again
  };
  // Sends what is due, consumes what arrived and returns the peers that just
  // went silent past the deadline or failed in the transport. No allocation
  // unless a peer is lost. Sets `abandoned` when the transport cancelled every
  // outstanding operation (its reaction to a failed peer): the caller must
  // post its own operations again (the heartbeats' own are re-posted here).
  std::vector<Loss> poll(runtime::Nanoseconds now, bool& abandoned);
  // The peer was lost through another path (transport error callback): its
  // slots are never touched again.
  void forget(int peer);
  // A peer whose silence may end (its link flaps, its hang ends): when it goes
  // silent it is reported lost once but kept, heartbeats still go to it, and
  // the first heartbeat heard from it again is reported with `returned` set.
  void watchForReturn(int peer);
  // The peer was declared lost through another path (a missed reply) but may
  // come back: its next heartbeat is reported as a return.
  void markSilent(int peer);
  // The transport cancelled every outstanding operation: post the receives again.
  void repost();
  // Tells every live peer that this rank leaves on purpose, bounded by `deadline`.
  void sayBye(const runtime::Deadline& deadline);
  bool tracking(int peer) const;

 private:
  struct Peer {
    int rank;
    bool live = true;
    bool left = false;     // said bye
    bool watched = false;  // see watchForReturn
    bool silent = false;   // reported lost, watched for its return
    runtime::Nanoseconds lastHeard = 0;
    std::uint64_t sent = 0;
  };
  int sendSlot(std::size_t i) const { return firstSlot_ + 2 * static_cast<int>(i); }
  int recvSlot(std::size_t i) const { return sendSlot(i) + 1; }
  void postReceive(std::size_t i);

  transport::Transport& transport_;
  std::vector<Peer> peers_;
  int firstSlot_;
  runtime::Nanoseconds interval_, deadline_, nextSend_ = 0;
  runtime::Nanoseconds lastPoll_ = -1;  // this rank's previous poll; -1 before the first
  std::uint64_t* buffers_;
};

}  // namespace fabscope::suite
