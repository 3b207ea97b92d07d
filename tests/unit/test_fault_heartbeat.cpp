// Fault drill heartbeats over an in-memory transport: a silent peer is
// declared lost once the deadline has passed since its last heartbeat arrived,
// not before; a peer that says bye is never declared lost.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <map>

#include "kinds/fault/FaultHeartbeat.hpp"

namespace fabscope {
namespace {

// Messages by (receiver, sender); tags are not needed: heartbeats are alone here.
using Mailbox = std::map<std::pair<int, int>, std::deque<std::uint64_t>>;

class MailboxTransport final : public transport::Transport {
 public:
  MailboxTransport(int me, Mailbox& box) : me_(me), box_(box) {}
  std::string_view name() const override { return "mailbox"; }
  void reserve(int slots) override { slots_.resize(static_cast<std::size_t>(slots)); }
  void postSend(int slot, int peer, int, const void* buffer, std::size_t bytes) override {
    std::uint64_t value = 0;
    std::memcpy(&value, buffer, std::min(bytes, sizeof value));
    box_[{peer, me_}].push_back(value);
    slots_.at(static_cast<std::size_t>(slot)) = {};
  }
  void postRecv(int slot, int peer, int, void* buffer, std::size_t) override {
    slots_.at(static_cast<std::size_t>(slot)) = {true, peer, static_cast<std::uint64_t*>(buffer)};
  }
  bool testSlots(int first, int count) override {
    bool all = true;
    for (int i = first; i < first + count; ++i) {
      auto& s = slots_.at(static_cast<std::size_t>(i));
      if (!s.pendingReceive) continue;
      auto& queue = box_[{me_, s.peer}];
      if (queue.empty()) {
        all = false;
        continue;
      }
      *s.buffer = queue.front();
      queue.pop_front();
      s.pendingReceive = false;
    }
    return all;
  }
  void reset(const runtime::Deadline&) override {}

 private:
  struct Slot {
    bool pendingReceive = false;
    int peer = -1;
    std::uint64_t* buffer = nullptr;
  };
  int me_;
  Mailbox& box_;
  std::vector<Slot> slots_;
};

constexpr runtime::Nanoseconds ms = 1000000;

struct Pair {
  Mailbox box;
  MailboxTransport ta{0, box}, tb{1, box};
  std::uint64_t wordsA[2]{}, wordsB[2]{};
  suite::Heartbeats a{ta, {1}, 0, 100 * ms, 300 * ms, wordsA};
  suite::Heartbeats b{tb, {0}, 0, 100 * ms, 300 * ms, wordsB};
  Pair() {
    ta.reserve(suite::Heartbeats::slotsNeeded(1));
    tb.reserve(suite::Heartbeats::slotsNeeded(1));
    a.start(0);
    b.start(0);
  }
};

TEST(FaultHeartbeats, SilencePastTheDeadlineIsALoss) {
  Pair p;
  bool abandoned = false;
  // Both alive for 500 ms, polling every 50 ms.
  for (runtime::Nanoseconds t = 0; t <= 500 * ms; t += 50 * ms) {
    EXPECT_TRUE(p.b.poll(t, abandoned).empty());
    EXPECT_TRUE(p.a.poll(t, abandoned).empty()) << "at " << t / ms << " ms";
  }
  // b hangs: its last heartbeat went out at 500 ms and a read it then.
  for (runtime::Nanoseconds t = 550 * ms; t <= 800 * ms; t += 50 * ms)
    EXPECT_TRUE(p.a.poll(t, abandoned).empty()) << "declared lost too early, at " << t / ms << " ms";
  const auto lost = p.a.poll(850 * ms, abandoned);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].peer, 1);
  EXPECT_EQ(lost[0].at, 850 * ms);
  EXPECT_EQ(lost[0].detail.rfind("heartbeat: none for 350 ms", 0), 0u) << lost[0].detail;
  EXPECT_FALSE(p.a.tracking(1));
  // Reported once.
  EXPECT_TRUE(p.a.poll(2000 * ms, abandoned).empty());
  EXPECT_FALSE(abandoned);
}

// This rank's own stall (a poll gap past the deadline) is not its peer's
// silence: counted again from the poll after it; a peer that really is gone
// is reported one deadline later.
TEST(FaultHeartbeats, ThisRanksOwnStallIsNotAPeerLoss) {
  Pair p;
  bool abandoned = false;
  for (runtime::Nanoseconds t = 0; t <= 500 * ms; t += 50 * ms) {
    EXPECT_TRUE(p.b.poll(t, abandoned).empty());
    EXPECT_TRUE(p.a.poll(t, abandoned).empty());
  }
  // a is away for 1.5 s while b goes on sending (b's heartbeats queue up
  // unread, here only the first is delivered per poll).
  EXPECT_TRUE(p.a.poll(2000 * ms, abandoned).empty()) << "a declared b lost for a's own stall";
  // b is really gone from 2000 ms: a reports it past one deadline from its return.
  for (runtime::Nanoseconds t = 2050 * ms; t <= 2300 * ms; t += 50 * ms)
    EXPECT_TRUE(p.a.poll(t, abandoned).empty()) << "at " << t / ms << " ms";
  const auto lost = p.a.poll(2350 * ms, abandoned);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].peer, 1);
}

TEST(FaultHeartbeats, APeerThatSaysByeIsNotLost) {
  Pair p;
  bool abandoned = false;
  EXPECT_TRUE(p.b.poll(0, abandoned).empty());
  EXPECT_TRUE(p.a.poll(0, abandoned).empty());
  p.b.sayBye(runtime::Deadline::afterSeconds(1));
  EXPECT_TRUE(p.a.poll(50 * ms, abandoned).empty());
  EXPECT_FALSE(p.a.tracking(1));
  EXPECT_TRUE(p.a.poll(5000 * ms, abandoned).empty());
}

TEST(FaultHeartbeats, AForgottenPeerIsNeverReported) {
  Pair p;
  bool abandoned = false;
  p.a.forget(1);  // lost through the transport's error callback
  EXPECT_TRUE(p.a.poll(5000 * ms, abandoned).empty());
}

// A flap or a hang that ends: the watched peer is reported lost once when it
// goes silent, heartbeats keep going to it, and its first heartbeat heard again
// is reported as a return (then it can be lost again: a repeated flap).
TEST(FaultHeartbeats, AWatchedPeerIsReportedBackWhenHeardAgain) {
  Pair p;
  bool abandoned = false;
  p.a.watchForReturn(1);
  for (runtime::Nanoseconds t = 0; t <= 200 * ms; t += 50 * ms) {
    EXPECT_TRUE(p.b.poll(t, abandoned).empty());
    EXPECT_TRUE(p.a.poll(t, abandoned).empty());
  }
  // b's link is down from 200 ms: a hears nothing; lost once past the deadline.
  std::vector<suite::Heartbeats::Loss> reports;
  for (runtime::Nanoseconds t = 250 * ms; t <= 1000 * ms; t += 50 * ms)
    for (auto& r : p.a.poll(t, abandoned)) reports.push_back(r);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FALSE(reports[0].returned);
  EXPECT_EQ(reports[0].at, 550 * ms);
  EXPECT_TRUE(p.a.tracking(1));  // still watched, still sent to
  const auto sentWhileSilent = p.box[{1, 0}].size();
  EXPECT_GT(sentWhileSilent, 3u) << "a stopped sending heartbeats to the silent peer";
  // The link is back: b's next heartbeat is a return, reported once.
  EXPECT_TRUE(p.b.poll(1000 * ms, abandoned).empty());
  const auto back = p.a.poll(1050 * ms, abandoned);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_TRUE(back[0].returned);
  EXPECT_EQ(back[0].peer, 1);
  EXPECT_EQ(back[0].detail.rfind("heartbeat: heard again after 850 ms", 0), 0u) << back[0].detail;
  EXPECT_TRUE(p.b.poll(1100 * ms, abandoned).empty());
  EXPECT_TRUE(p.a.poll(1150 * ms, abandoned).empty());
  // Silent again (the next flap): lost again (a polls on, so the silence is b's).
  EXPECT_TRUE(p.a.poll(1300 * ms, abandoned).empty());
  const auto again = p.a.poll(1500 * ms, abandoned);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_FALSE(again[0].returned);
}

// An unwatched peer stays lost whatever arrives later (kill, link-down).
TEST(FaultHeartbeats, AnUnwatchedPeerNeverComesBack) {
  Pair p;
  bool abandoned = false;
  EXPECT_EQ(p.a.poll(1000 * ms, abandoned).size(), 1u);
  EXPECT_TRUE(p.b.poll(1000 * ms, abandoned).empty());
  EXPECT_TRUE(p.a.poll(1050 * ms, abandoned).empty());
  EXPECT_FALSE(p.a.tracking(1));
}

}  // namespace
}  // namespace fabscope
