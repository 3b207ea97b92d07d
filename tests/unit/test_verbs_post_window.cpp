// Send flow control of the verbs transport (verbs::PostWindow) against a fake
// device: send queues and a completion queue of fixed depth that, like
// ibv_post_send, refuse (ENOMEM) a request they cannot hold. A kvpush
// per-block request of a Llama 3 70B 8k-token prompt posts tens of thousands
// of messages to one peer at once; they must all go out, in order, without a
// refused post, while completions are reaped.
#include <gtest/gtest.h>

#include <deque>
#include <vector>

#include "transport/VerbsPostWindow.hpp"

using fabscope::transport::verbs::PostWindow;

namespace {

struct FakeDevice {
  int queueDepth;
  int completionDepth;
  std::vector<std::deque<int>> sendQueues;  // per queue: items posted, not yet completed
  int receivesInFlight = 0;
  std::vector<int> postedOrder;
  int refused = 0;  // what ibv_post_send would have failed with ENOMEM

  FakeDevice(int queues, int depth, int cqDepth) : queueDepth(depth), completionDepth(cqDepth), sendQueues(queues) {}

  int inFlight() const {
    int n = receivesInFlight;
    for (const auto& q : sendQueues) n += static_cast<int>(q.size());
    return n;
  }
  void post(int queue, int item) {
    if (static_cast<int>(sendQueues[static_cast<std::size_t>(queue)].size()) >= queueDepth ||
        inFlight() >= completionDepth) {
      ++refused;
      return;
    }
    sendQueues[static_cast<std::size_t>(queue)].push_back(item);
    postedOrder.push_back(item);
  }
  // Like ibv_poll_cq with 16 entries: the oldest completions, round robin over queues.
  std::vector<std::pair<int, int>> poll() {
    std::vector<std::pair<int, int>> done;
    for (std::size_t q = 0; q < sendQueues.size() && done.size() < 16; ++q)
      while (!sendQueues[q].empty() && done.size() < 16) {
        done.emplace_back(static_cast<int>(q), sendQueues[q].front());
        sendQueues[q].pop_front();
      }
    return done;
  }
};

// Posts `items` spread over the queues by `queueOf`, then reaps completions
// until all are done or `maxPolls` is reached (the deadline). Returns the polls used.
template <class QueueOf>
int runAll(PostWindow& window, FakeDevice& device, int items, QueueOf queueOf, int maxPolls) {
  std::vector<int> queueOfItem(static_cast<std::size_t>(items));
  auto post = [&](int item) { device.post(queueOfItem[static_cast<std::size_t>(item)], item); };
  for (int i = 0; i < items; ++i) {
    queueOfItem[static_cast<std::size_t>(i)] = queueOf(i);
    window.submit(queueOf(i), i, post);
    EXPECT_LE(window.totalInFlight(), device.completionDepth);
  }
  int polls = 0, completed = 0;
  while (completed < items && polls < maxPolls) {
    ++polls;
    for (auto [queue, item] : device.poll()) {
      (void)item;
      window.complete(queue, post);
      ++completed;
    }
  }
  return completed == items ? polls : -1;
}

}  // namespace

TEST(VerbsPostWindow, TensOfThousandsOfMessagesToOnePeerNeverOverflowTheSendQueue) {
  // 80 layers x K/V x 512 blocks (8192 tokens / 16) = 81920 messages.
  constexpr int messages = 80 * 2 * 512;
  PostWindow window;
  window.configure(4, 1024, 8192);
  window.reserve(messages);
  FakeDevice device(4, 1024, 8192);
  const int polls = runAll(
      window, device, messages, [](int) { return 1; }, messages);
  EXPECT_GT(polls, 0) << "not every message completed before the deadline";
  EXPECT_EQ(device.refused, 0) << "a post the send queue could not hold (ENOMEM)";
  ASSERT_EQ(static_cast<int>(device.postedOrder.size()), messages);
  for (int i = 0; i < messages; ++i)
    ASSERT_EQ(device.postedOrder[static_cast<std::size_t>(i)], i) << "posting order changed";
  EXPECT_EQ(window.waiting(), 0);
  EXPECT_EQ(window.totalInFlight(), 0);
}

TEST(VerbsPostWindow, ManyPeersShareTheCompletionQueueWithReceives) {
  constexpr int peers = 16, messages = 40000;
  PostWindow window;
  window.configure(peers, 1024, 4096);
  window.reserve(messages);
  FakeDevice device(peers, 1024, 4096);
  // 1000 receives posted first hold completion-queue entries the sends must leave free.
  for (int r = 0; r < 1000; ++r) window.receivePosted();
  device.receivesInFlight = 1000;
  const int polls = runAll(
      window, device, messages, [](int i) { return i % peers; }, messages);
  EXPECT_GT(polls, 0);
  EXPECT_EQ(device.refused, 0) << "more work in flight than the completion queue holds";
  EXPECT_EQ(static_cast<int>(device.postedOrder.size()), messages);
}

TEST(VerbsPostWindow, WhatFitsIsPostedAtOnceAndOrderIsKeptPerQueue) {
  PostWindow window;
  window.configure(2, 2, 100);
  window.reserve(6);
  std::vector<int> posted;
  auto post = [&](int item) { posted.push_back(item); };
  EXPECT_TRUE(window.submit(0, 0, post));
  EXPECT_TRUE(window.submit(0, 1, post));
  EXPECT_FALSE(window.submit(0, 2, post)) << "queue 0 is full";
  EXPECT_TRUE(window.submit(1, 3, post)) << "another queue still has room";
  EXPECT_FALSE(window.submit(0, 4, post));
  EXPECT_EQ(posted, (std::vector<int>{0, 1, 3}));
  window.complete(0, post);
  EXPECT_EQ(posted, (std::vector<int>{0, 1, 3, 2})) << "the oldest waiting item goes first";
  window.complete(0, post);
  EXPECT_EQ(posted, (std::vector<int>{0, 1, 3, 2, 4}));
  EXPECT_EQ(window.waiting(), 0);
  EXPECT_THROW(window.submit(0, 6, post), std::out_of_range) << "items beyond reserve() are refused";
}

TEST(VerbsPostWindow, AfterAnErrorWaitingItemsAreDropped) {
  PostWindow window;
  window.configure(1, 1, 10);
  window.reserve(4);
  std::vector<int> posted, dropped;
  auto post = [&](int item) { posted.push_back(item); };
  for (int i = 0; i < 4; ++i) window.submit(0, i, post);
  window.dropWaiting([&](int item) { dropped.push_back(item); });
  EXPECT_EQ(posted, (std::vector<int>{0}));
  EXPECT_EQ(dropped, (std::vector<int>{1, 2, 3}));
  window.clearInFlight();
  EXPECT_TRUE(window.submit(0, 1, post)) << "after the flush the queue is empty again";
}
