// Properties of the pure helpers, drawn over their ranges with RapidCheck (100 cases each; a failure prints
// the smallest case it shrank to and RC_PARAMS="seed=N" repeats it). The fixtures of the other unit tests
// hold exact multiples and small rank counts; these reach the boundaries they never do.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "kv/KvBlockLayout.hpp"
#include "scenario/Units.hpp"
#include "topology/PairSchedule.hpp"

namespace fs = fabscope::scenario;
namespace fkv = fabscope::kv;
using fabscope::suite::RankPair;
using fabscope::suite::Schedule;

namespace {

const char* const binaryUnits[] = {"B", "KiB", "MiB", "GiB"};

std::set<std::pair<int, int>> orderedPairs(const Schedule& schedule) {
  std::set<std::pair<int, int>> seen;
  for (const auto& round : schedule)
    for (const auto& p : round) seen.insert({p.initiator, p.responder});
  return seen;
}

}  // namespace

// Sizes: what formatSize writes, parseSize reads back to the same byte count, for every size a message can have.
RC_GTEST_PROP(UnitsProperty, FormatThenParseIsIdentity, ()) {
  const auto bytes = *rc::gen::inRange<std::int64_t>(1, fs::maxMessageBytes + 1);
  RC_ASSERT(fs::parseSize(fs::formatSize(bytes)) == bytes);
}

// A size that is not a multiple of the next unit is written in its own unit, with no rounding.
RC_GTEST_PROP(UnitsProperty, FormatUsesTheLargestExactUnit, ()) {
  const auto value = *rc::gen::inRange<std::int64_t>(1, 1024);
  const auto unit = *rc::gen::inRange(0, 3);  // up to MiB: 1023 GiB is past the message limit
  const std::int64_t bytes = value << (10 * unit);
  RC_ASSERT(fs::formatSize(bytes) == std::to_string(value) + binaryUnits[unit]);
  RC_ASSERT(fs::parseSize(std::to_string(value) + binaryUnits[unit]) == bytes);
}

// "k"/"K" are binary, "kB"/"MB" decimal, as Units.hpp promises.
RC_GTEST_PROP(UnitsProperty, BinaryAndDecimalPrefixes, ()) {
  const auto value = *rc::gen::inRange<std::int64_t>(1, 1024);
  RC_ASSERT(fs::parseSize(std::to_string(value) + "k") == value * 1024);
  RC_ASSERT(fs::parseSize(std::to_string(value) + "K") == value * 1024);
  RC_ASSERT(fs::parseSize(std::to_string(value) + "kB") == value * 1000);
  RC_ASSERT(fs::parseSize(std::to_string(value) + "MB") == value * 1000 * 1000);
}

// A range "a..b xf": starts at a, grows by exactly f, never passes b, and stops only when the next would.
RC_GTEST_PROP(UnitsProperty, RangeIsGeometricAndBounded, ()) {
  const auto first = *rc::gen::inRange<std::int64_t>(1, std::int64_t{1} << 20);
  const auto last = *rc::gen::inRange<std::int64_t>(first, fs::maxMessageBytes + 1);
  const auto factor = *rc::gen::inRange(2, 9);
  const auto sizes =
      fs::parseSizeList(fs::formatSize(first) + ".." + fs::formatSize(last) + " x" + std::to_string(factor));
  RC_ASSERT(!sizes.empty());
  RC_ASSERT(sizes.front() == first);
  for (std::size_t i = 1; i < sizes.size(); ++i) RC_ASSERT(sizes[i] == sizes[i - 1] * factor);
  RC_ASSERT(sizes.back() <= last);
  RC_ASSERT(sizes.back() * factor > last);
}

// All pairs, one-way tests: every ordered pair exactly once over the rounds, no rank twice in a round, every
// rank busy in every round of an even count, n-1 rounds (n even) or n (odd), each doubled by its mirror.
RC_GTEST_PROP(PairScheduleProperty, AllPairsBothDirectionsHasEveryOrderedPairOnce, ()) {
  const auto ranks = *rc::gen::inRange(2, 65);
  const auto schedule = fabscope::suite::allPairsParallelSchedule(ranks, true);
  std::size_t pairs = 0;
  for (const auto& round : schedule) {
    std::set<int> busy;
    for (const auto& p : round) {
      RC_ASSERT(p.initiator != p.responder);
      RC_ASSERT(p.initiator >= 0 && p.initiator < ranks && p.responder >= 0 && p.responder < ranks);
      RC_ASSERT(busy.insert(p.initiator).second);
      RC_ASSERT(busy.insert(p.responder).second);
    }
    if (ranks % 2 == 0) RC_ASSERT(static_cast<int>(busy.size()) == ranks);
    pairs += round.size();
  }
  RC_ASSERT(pairs == static_cast<std::size_t>(ranks * (ranks - 1)));
  RC_ASSERT(orderedPairs(schedule).size() == pairs);
  RC_ASSERT(static_cast<int>(schedule.size()) == 2 * (ranks % 2 == 0 ? ranks - 1 : ranks));
}

// Two-way tests: every unordered pair exactly once.
RC_GTEST_PROP(PairScheduleProperty, AllPairsOneDirectionHasEveryPairOnce, ()) {
  const auto ranks = *rc::gen::inRange(2, 65);
  const auto schedule = fabscope::suite::allPairsParallelSchedule(ranks, false);
  std::set<std::pair<int, int>> unordered;
  std::size_t pairs = 0;
  for (const auto& round : schedule)
    for (const auto& p : round) {
      unordered.insert(std::minmax(p.initiator, p.responder));
      ++pairs;
    }
  RC_ASSERT(pairs == static_cast<std::size_t>(ranks * (ranks - 1) / 2));
  RC_ASSERT(unordered.size() == pairs);
  RC_ASSERT(static_cast<int>(schedule.size()) == fabscope::suite::circleRounds(ranks, false));
}

// What a rank computes alone (circlePairOf, O(1)) is what the whole round holds, for every rank and round.
RC_GTEST_PROP(PairScheduleProperty, OneRankAloneAgreesWithTheRound, ()) {
  const auto ranks = *rc::gen::inRange(2, 65);
  const bool both = *rc::gen::arbitrary<bool>();
  const int rounds = fabscope::suite::circleRounds(ranks, both);
  const auto r = *rc::gen::inRange(0, rounds);
  fabscope::suite::Round round;
  fabscope::suite::circleRound(ranks, r, both, round);
  std::map<int, RankPair> in;
  for (const auto& p : round) in[p.initiator] = in[p.responder] = p;
  for (int rank = 0; rank < ranks; ++rank) {
    RankPair alone{};
    const bool paired = fabscope::suite::circlePairOf(ranks, r, both, rank, alone);
    RC_ASSERT(paired == (in.count(rank) == 1));
    if (paired) RC_ASSERT(alone == in[rank]);
  }
}

// The serial schedule holds the same pairs, one a round; roundsOf gives each rank exactly its rounds, in order.
RC_GTEST_PROP(PairScheduleProperty, SerialAndRoundsOfKeepEveryPair, ()) {
  const auto ranks = *rc::gen::inRange(2, 33);
  const bool both = *rc::gen::arbitrary<bool>();
  const auto parallel = fabscope::suite::allPairsParallelSchedule(ranks, both);
  const auto serial = fabscope::suite::serialSchedule(parallel);
  for (const auto& round : serial) RC_ASSERT(round.size() == 1u);
  RC_ASSERT(orderedPairs(serial) == orderedPairs(parallel));
  const auto rank = *rc::gen::inRange(0, ranks);
  const auto mine = fabscope::suite::roundsOf(parallel, rank);
  std::size_t expected = 0;
  int previous = -1;
  for (const auto& [r, pair] : mine) {
    RC_ASSERT(r > previous);
    previous = r;
    RC_ASSERT(pair.initiator == rank || pair.responder == rank);
    const auto& round = parallel[static_cast<std::size_t>(r)];
    RC_ASSERT(std::find(round.begin(), round.end(), pair) != round.end());
  }
  for (const auto& round : parallel)
    for (const auto& p : round) expected += (p.initiator == rank || p.responder == rank) ? 1 : 0;
  RC_ASSERT(mine.size() == expected);
}

// A retest measures as many control pairs as retested ones, never fewer than the minimum, more for more.
RC_GTEST_PROP(PairScheduleProperty, ControlCountIsMonotoneWithAFloor, ()) {
  const auto retested = *rc::gen::inRange<std::size_t>(0, 10'000);
  const int count = fabscope::suite::controlCount(retested);
  RC_ASSERT(count >= fabscope::suite::kMinControlPairs);
  RC_ASSERT(static_cast<std::size_t>(count) >= retested);
  RC_ASSERT(fabscope::suite::controlCount(retested + 1) >= count);
}

// KV pool layout: layer-major, then plane (K, V or the MLA latent), then block; the offsets tile the pool with
// no gap or overlap and the last block ends at poolBytes; one past any index is refused.
RC_GTEST_PROP(KvLayoutProperty, OffsetsTileThePoolLayerMajor, ()) {
  fkv::KvBlockLayout layout;
  layout.kind = *rc::gen::element(fkv::KvLayoutKind::gqa, fkv::KvLayoutKind::mla);
  layout.layers = *rc::gen::inRange<std::uint32_t>(1, 129);
  layout.numBlocks = *rc::gen::inRange<std::uint64_t>(1, 5000);
  layout.blockTokens = *rc::gen::inRange<std::uint32_t>(1, 129);
  layout.kvHeads = *rc::gen::inRange<std::uint32_t>(1, 17);
  layout.headDim = *rc::gen::element<std::uint32_t>(64, 96, 128, 192, 256);
  layout.latent = *rc::gen::element<std::uint32_t>(512, 576);
  using fabscope::model::Dtype;
  layout.dtype = *rc::gen::element(Dtype::bf16, Dtype::fp16, Dtype::fp8, Dtype::fp32);
  const std::uint64_t dtypeBytes = layout.dtype == Dtype::fp8 ? 1 : layout.dtype == Dtype::fp32 ? 4 : 2;
  const std::uint64_t perToken = layout.kind == fkv::KvLayoutKind::gqa ? std::uint64_t{layout.kvHeads} * layout.headDim
                                                                       : std::uint64_t{layout.latent};
  RC_ASSERT(layout.valuesPerToken() == perToken);
  RC_ASSERT(layout.blockBytes() == std::uint64_t{layout.blockTokens} * perToken * dtypeBytes);
  RC_ASSERT(layout.poolBytes() == layout.blockBytes() * layout.planes() * layout.layers * layout.numBlocks);

  const auto layer = *rc::gen::inRange<std::uint32_t>(0, layout.layers);
  const auto plane = *rc::gen::inRange<std::uint32_t>(0, layout.planes());
  const auto block = *rc::gen::inRange<std::uint64_t>(0, layout.numBlocks);
  const auto at = layout.offset(layer, static_cast<fkv::KvPlane>(plane), block);
  RC_ASSERT(at == ((std::uint64_t{layer} * layout.planes() + plane) * layout.numBlocks + block) * layout.blockBytes());
  RC_ASSERT(at + layout.blockBytes() <= layout.poolBytes());
  const auto lastPlane = static_cast<fkv::KvPlane>(layout.planes() - 1);
  RC_ASSERT(layout.offset(layout.layers - 1, lastPlane, layout.numBlocks - 1) + layout.blockBytes() ==
            layout.poolBytes());
  RC_ASSERT_THROWS_AS(layout.offset(layout.layers, static_cast<fkv::KvPlane>(plane), block), std::out_of_range);
  RC_ASSERT_THROWS_AS(layout.offset(layer, static_cast<fkv::KvPlane>(plane), layout.numBlocks), std::out_of_range);
}
