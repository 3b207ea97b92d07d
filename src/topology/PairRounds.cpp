#include "topology/PairRounds.hpp"

#include <algorithm>

namespace fabscope::suite {

PairRounds PairRounds::ofPattern(Pattern pattern, std::shared_ptr<const RankLayout> layout,
                                 const PatternOptions& options, bool serial) {
  PairRounds out;
  out.generated_ = true;
  out.pattern_ = pattern;
  out.options_ = options;
  out.serial_ = serial;
  out.layout_ = std::move(layout);
  out.count();
  return out;
}

PairRounds PairRounds::explicitRounds(Schedule rounds, std::shared_ptr<const RankLayout> layout) {
  PairRounds out;
  out.explicit_ = std::move(rounds);
  out.layout_ = std::move(layout);
  out.count();
  return out;
}

void PairRounds::forEachSourceRound(const RoundVisitor& visit) const {
  if (!generated_) {
    for (const auto& round : explicit_)
      if (!visit(round)) return;
    return;
  }
  if (!serial_) {
    streamPattern(pattern_, *layout_, options_, visit);
    return;
  }
  Round single(1);
  streamPattern(pattern_, *layout_, options_, [&](const Round& round) {
    for (const auto& pair : round) {
      single[0] = pair;
      if (!visit(single)) return false;
    }
    return true;
  });
}

void PairRounds::forEachRound(const std::function<bool(std::int64_t, const Round&)>& visit) const {
  std::int64_t source = 0, index = 0;
  forEachSourceRound([&](const Round& round) {
    const std::int64_t at = source++;
    if (thinned_) {
      if (static_cast<std::size_t>(index) >= kept_.size()) return false;  // the last kept round is behind
      if (kept_[static_cast<std::size_t>(index)] != static_cast<std::size_t>(at)) return true;
    }
    return visit(index++, round);
  });
}

void PairRounds::count() {
  rounds_ = pairs_ = busiest_ = 0;
  // Rounds a rank is in, by group index: O(N) while counting, dropped after.
  std::vector<std::int64_t> busy(layout_ ? static_cast<std::size_t>(layout_->size()) : 0);
  forEachRound([&](std::int64_t, const Round& round) {
    ++rounds_;
    pairs_ += static_cast<std::int64_t>(round.size());
    for (const auto& pair : round)
      for (int r : {pair.initiator, pair.responder}) {
        const auto i = static_cast<std::size_t>(r);
        if (i >= busy.size()) busy.resize(i + 1, 0);
        busiest_ = std::max(busiest_, ++busy[i]);
      }
    return true;
  });
}

void PairRounds::keepSample(std::size_t keep, std::uint64_t seed) {
  const auto current = static_cast<std::size_t>(rounds_);
  if (keep >= current) return;
  auto positions = sampleRounds(current, keep, seed);
  if (thinned_)
    for (auto& p : positions) p = kept_[p];
  kept_ = std::move(positions);
  thinned_ = true;
  count();
}

std::vector<std::pair<int, RankPair>> PairRounds::roundsOf(int rank) const {
  std::vector<std::pair<int, RankPair>> out;
  if (generated_ && pattern_ == Pattern::allPairs && !serial_) {
    // The circle method gives a rank's pair of a round directly: O(rounds), not
    // O(pairs) (at 16,384 ranks 16,383 steps instead of 134 M pairs).
    const int ranks = layout_->size();
    const auto source = static_cast<std::size_t>(circleRounds(ranks, options_.bothDirections));
    const std::size_t count = thinned_ ? kept_.size() : source;
    RankPair pair{};
    for (std::size_t index = 0; index < count; ++index) {
      const auto r = static_cast<int>(thinned_ ? kept_[index] : index);
      if (circlePairOf(ranks, r, options_.bothDirections, rank, pair)) out.emplace_back(static_cast<int>(index), pair);
    }
    return out;
  }
  forEachRound([&](std::int64_t index, const Round& round) {
    for (const auto& p : round)
      if (p.initiator == rank || p.responder == rank) out.emplace_back(static_cast<int>(index), p);
    return true;
  });
  return out;
}

Schedule PairRounds::whole() const {
  Schedule out;
  forEachRound([&](std::int64_t, const Round& round) {
    out.push_back(round);
    return true;
  });
  return out;
}

}  // namespace fabscope::suite
