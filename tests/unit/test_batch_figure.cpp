// The batch figure: each pair's timed loop as one batch, as osu_latency / osu_bw report.
#include <gtest/gtest.h>

#include <vector>

#include "driver/BatchFigure.hpp"

using namespace fabscope;

namespace {

// `n` back-to-back iterations of one rank with one peer: each `busy` ns long,
// `gap` ns between them (posting the next receive, recording the sample).
void loop(std::vector<output::SampleRecord>& out, int rank, int peer, int n, std::int64_t start, std::int64_t busy,
          std::int64_t gap, std::int64_t bytes = 8, int firstIter = 0) {
  std::int64_t t = start;
  for (int i = 0; i < n; ++i) {
    output::SampleRecord r{};
    r.rank = rank, r.peer = peer, r.iter = firstIter + i, r.bytes = bytes, r.t_post_ns = t, r.t_done_ns = t + busy;
    out.push_back(r);
    t += busy + gap;
  }
}

}  // namespace

TEST(BatchFigure, LoopTimeOverIterationsWithTheClockReadsTakenOut) {
  std::vector<output::SampleRecord> s;
  loop(s, 0, 1, 100, 1000, 800, 100);  // span = 100*900 - 100 = 89'900 ns
  const auto f = driver::batchFigure(s, 2, 2, 10.0);
  EXPECT_EQ(f.iterations, 100);
  // (89'900 - 100 * 2 * 10) / 100 / 2
  EXPECT_DOUBLE_EQ(f.meanNs, (89'900.0 - 2'000.0) / 100 / 2);
  EXPECT_DOUBLE_EQ(f.gbps, 800.0 / (89'900.0 - 2'000.0));
}

TEST(BatchFigure, NeverFasterThanTheSamplesThemselves) {
  std::vector<output::SampleRecord> s;
  loop(s, 0, 1, 10, 0, 500, 0);  // no gap at all: a calibration larger than the gap must not cut into the samples
  const auto f = driver::batchFigure(s, 1, 2, 50.0);
  EXPECT_DOUBLE_EQ(f.meanNs, 500.0);
}

TEST(BatchFigure, EachPairAndEachRoundIsItsOwnLoop) {
  std::vector<output::SampleRecord> s;
  loop(s, 0, 1, 10, 0, 100, 0);
  loop(s, 0, 2, 10, 1'000'000, 300, 0);  // same rank, next round: the idle time between is not a loop's
  loop(s, 3, 2, 10, 5'000'000, 200, 0);
  const auto f = driver::batchFigure(s, 1, 0, 0.0);
  EXPECT_EQ(f.iterations, 30);
  EXPECT_DOUBLE_EQ(f.meanNs, (1000.0 + 3000.0 + 2000.0) / 30);
}

TEST(BatchFigure, APeerChangeEndsALoopEvenWhenTheIterationsRunOn) {
  // A loop is one rank's run with one peer (BatchFigure.hpp). Today's kinds restart the
  // numbering per peer; one that numbers its iterations across peers (peer 1 in 0-4,
  // peer 2 in 5-9) must still get two loops, the idle time between them in neither.
  std::vector<output::SampleRecord> s;
  loop(s, 0, 1, 5, 0, 100, 0);
  loop(s, 0, 2, 5, 1'000'000, 300, 0, 8, 5);
  const auto f = driver::batchFigure(s, 1, 0, 0.0);
  EXPECT_EQ(f.iterations, 10);
  EXPECT_DOUBLE_EQ(f.meanNs, (500.0 + 1500.0) / 10);
}

TEST(BatchFigure, NoSamplesNoFigure) {
  const auto f = driver::batchFigure({}, 1, 2, 20.0);
  EXPECT_EQ(f.iterations, 0);
}

TEST(BatchFigure, OneIterationIsALoopOfOne) {
  std::vector<output::SampleRecord> s;
  loop(s, 0, 1, 1, 0, 400, 0);
  const auto f = driver::batchFigure(s, 1, 0, 0.0);
  EXPECT_EQ(f.iterations, 1);
  EXPECT_DOUBLE_EQ(f.meanNs, 400.0);
  EXPECT_DOUBLE_EQ(f.gbps, 8.0 / 400.0);
}
