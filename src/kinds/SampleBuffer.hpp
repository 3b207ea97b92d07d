#pragma once
// A rank's samples for one instance: allocated before the timed loop, filled
// inside it with two stores and no bounds growth. The count is an atomic with
// relaxed order (a plain load and store on x86, as before) so that the
// progress watch (driver/Progress.hpp) may read it from another thread; it
// never reads the records.
#include <atomic>
#include <span>
#include <vector>

#include "output/Records.hpp"
#include "runtime/Errors.hpp"

namespace fabscope::suite {

class SampleBuffer {
 public:
  explicit SampleBuffer(std::size_t capacity) { records_.resize(capacity); }

  void record(std::int32_t rank, std::int32_t iter, std::int32_t peer, std::int64_t bytes, std::int64_t tPost,
              std::int64_t tDone, std::uint32_t flags = 0) noexcept {
    const std::size_t used = used_.load(std::memory_order_relaxed);
    if (used < records_.size()) {
      records_[used] = {rank, iter, peer, bytes, tPost, tDone, flags};
      used_.store(used + 1, std::memory_order_relaxed);
    } else {
      overflowed_ = true;
    }
  }

  std::span<output::SampleRecord> used() { return {records_.data(), count()}; }
  std::span<const output::SampleRecord> used() const { return {records_.data(), count()}; }
  // Also read by the progress watch's thread while the timed loop runs.
  std::size_t count() const noexcept { return used_.load(std::memory_order_relaxed); }
  std::size_t capacity() const noexcept { return records_.size(); }
  // Marks the samples recorded since `start` (after the timed loop that wrote them).
  void flagSince(std::size_t start, std::uint32_t flags) noexcept {
    for (std::size_t i = start, end = count(); i < end; ++i) records_[i].flags |= flags;
  }
  // The topology level of the pair the samples since `start` measured (after the timed loop).
  void levelSince(std::size_t start, std::uint8_t level) noexcept {
    for (std::size_t i = start, end = count(); i < end; ++i) records_[i].level = level;
  }
  bool overflowed() const noexcept { return overflowed_; }
  bool full() const noexcept { return count() >= records_.size(); }
  void clear() noexcept {
    used_.store(0, std::memory_order_relaxed);
    overflowed_ = false;
  }

 private:
  std::vector<output::SampleRecord> records_;
  std::atomic<std::size_t> used_{0};
  bool overflowed_ = false;
};

}  // namespace fabscope::suite
