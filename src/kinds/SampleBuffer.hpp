#pragma once
// A rank's samples for one instance: allocated before the timed loop, filled
// inside it with two stores and no bounds growth.
#include <span>
#include <vector>

#include "output/Records.hpp"
#include "runtime/Errors.hpp"

namespace fabscope::suite {

class SampleBuffer {
 public:
  explicit SampleBuffer(std::size_t capacity) { records_.resize(capacity); }

  void record(std::int32_t rank, std::int32_t iter, std::int32_t peer, std::int64_t bytes,
              std::int64_t tPost, std::int64_t tDone, std::uint32_t flags = 0) noexcept {
    if (used_ < records_.size()) records_[used_++] = {rank, iter, peer, bytes, tPost, tDone, flags};
    else overflowed_ = true;
  }

  std::span<output::SampleRecord> used() { return {records_.data(), used_}; }
  std::span<const output::SampleRecord> used() const { return {records_.data(), used_}; }
  std::size_t count() const noexcept { return used_; }
  // Marks the samples recorded since `start` (after the timed loop that wrote them).
  void flagSince(std::size_t start, std::uint32_t flags) noexcept {
    for (std::size_t i = start; i < used_; ++i) records_[i].flags |= flags;
  }
  bool overflowed() const noexcept { return overflowed_; }
  bool full() const noexcept { return used_ >= records_.size(); }
  void clear() noexcept {
    used_ = 0;
    overflowed_ = false;
  }

 private:
  std::vector<output::SampleRecord> records_;
  std::size_t used_ = 0;
  bool overflowed_ = false;
};

}  // namespace fabscope::suite
