#pragma once
// Flow control for the verbs data path, free of device calls so it can be
// tested without RDMA hardware: work requests go to queues of bounded depth
// (one send queue per peer) whose completions all land in one completion
// queue of bounded depth. A request that does not fit waits in a per-queue
// backlog (in posting order) and is posted as completions free room; the
// caller's waits, which carry the test's deadline, reap those completions.
//
// Items are the caller's slot numbers; the caller keeps each waiting work
// request by slot. reserve() sizes everything before a timed loop: submit()
// and complete() never allocate.
#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <vector>

namespace fabscope::transport::verbs {

class PostWindow {
 public:
  // queues: send queues (peers); queueDepth: work requests one send queue
  // holds; completionDepth: entries of the completion queue they share with
  // the receives (counted through receivePosted/receiveCompleted).
  void configure(int queues, int queueDepth, int completionDepth) {
    if (queues < 0 || queueDepth < 1 || completionDepth < 1)
      throw std::invalid_argument("PostWindow: queues >= 0, depths >= 1");
    queueDepth_ = queueDepth;
    completionDepth_ = completionDepth;
    inFlight_.assign(static_cast<std::size_t>(queues), 0);
    head_.assign(static_cast<std::size_t>(queues), none);
    tail_.assign(static_cast<std::size_t>(queues), none);
    totalInFlight_ = receivesInFlight_ = waiting_ = 0;
  }

  // Items 0..items-1 may be submitted (the transport's slots).
  void reserve(int items) {
    if (static_cast<int>(next_.size()) < items) next_.resize(static_cast<std::size_t>(items), none);
  }

  // Posts `item` on `queue` now through post(item) when the queue and the
  // completion queue have room and nothing waits before it; otherwise it
  // waits. Returns whether it was posted.
  template <class Post>
  bool submit(int queue, int item, Post&& post) {
    if (item < 0 || item >= static_cast<int>(next_.size())) throw std::out_of_range("PostWindow: item not reserved");
    const auto q = static_cast<std::size_t>(queue);
    if (head_[q] == none && hasRoom(q)) {
      post(item);
      ++inFlight_[q];
      ++totalInFlight_;
      return true;
    }
    next_[static_cast<std::size_t>(item)] = none;
    if (tail_[q] == none)
      head_[q] = item;
    else
      next_[static_cast<std::size_t>(tail_[q])] = item;
    tail_[q] = item;
    ++waiting_;
    return false;
  }

  // A send completion of `queue` was reaped: its room goes to waiting work.
  template <class Post>
  void complete(int queue, Post&& post) {
    const auto q = static_cast<std::size_t>(queue);
    if (inFlight_[q] == 0) throw std::logic_error("PostWindow: completion without a posted request");
    --inFlight_[q];
    --totalInFlight_;
    drainAll(post);
  }

  // Receives take completion-queue entries too (posted at once: verbs
  // matches them in posting order, so they cannot wait).
  void receivePosted() { ++receivesInFlight_; }
  template <class Post>
  void receiveCompleted(Post&& post) {
    if (receivesInFlight_ > 0) --receivesInFlight_;
    drainAll(post);
  }

  // Forgets every waiting item (after an error), calling dropped(item) for each.
  template <class Dropped>
  void dropWaiting(Dropped&& dropped) {
    for (std::size_t q = 0; q < head_.size(); ++q) {
      for (int i = head_[q]; i != none; i = next_[static_cast<std::size_t>(i)]) dropped(i);
      head_[q] = tail_[q] = none;
    }
    waiting_ = 0;
  }
  // After the queues were flushed (QPs to RESET): nothing is in flight.
  void clearInFlight() {
    std::fill(inFlight_.begin(), inFlight_.end(), 0);
    totalInFlight_ = receivesInFlight_ = 0;
  }

  int inFlight(int queue) const { return inFlight_[static_cast<std::size_t>(queue)]; }
  int totalInFlight() const { return totalInFlight_; }
  int waiting() const { return waiting_; }

 private:
  static constexpr int none = -1;

  bool hasRoom(std::size_t q) const {
    return inFlight_[q] < queueDepth_ && totalInFlight_ + receivesInFlight_ < completionDepth_;
  }

  template <class Post>
  void drainAll(Post& post) {
    for (std::size_t q = 0; q < head_.size() && waiting_ > 0; ++q)
      while (head_[q] != none && hasRoom(q)) {
        const int item = head_[q];
        head_[q] = next_[static_cast<std::size_t>(item)];
        if (head_[q] == none) tail_[q] = none;
        --waiting_;
        post(item);
        ++inFlight_[q];
        ++totalInFlight_;
      }
  }

  int queueDepth_ = 1;
  int completionDepth_ = 1;
  std::vector<int> inFlight_;
  std::vector<int> head_, tail_;  // per queue: first and last waiting item
  std::vector<int> next_;         // per item: the item waiting after it
  int totalInFlight_ = 0;
  int receivesInFlight_ = 0;
  int waiting_ = 0;
};

}  // namespace fabscope::transport::verbs
