// What fabscope's per-sample timing adds to a timed loop, for docs/benchmarks.md:
// the cost of one clock read (runtime::monotonicNow) and of one recorded sample
// (two clock reads and SampleBuffer::record), against the same loop without them.
// Prints ns per iteration, medians of 7 rounds. usage: fabscope_sample_cost [ITERS]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kinds/SampleBuffer.hpp"
#include "runtime/Clock.hpp"

using fabscope::runtime::monotonicNow;

namespace {

volatile std::int64_t sink;  // keeps the empty loop from being removed

template <class Body>
double nsPerIteration(int iterations, Body&& body) {
  std::vector<double> rounds;
  for (int round = 0; round < 7; ++round) {
    const auto start = monotonicNow();
    for (int i = 0; i < iterations; ++i) body(i);
    rounds.push_back(static_cast<double>(monotonicNow() - start) / iterations);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 1'000'000;
  fabscope::suite::SampleBuffer samples(static_cast<std::size_t>(iterations));
  const double empty = nsPerIteration(iterations, [](int i) { sink = i; });
  const double clock = nsPerIteration(iterations, [](int) { sink = monotonicNow(); });
  const double sample = nsPerIteration(iterations, [&](int i) {
    if (i == 0) samples.clear();
    const auto t0 = monotonicNow();
    sink = i;
    const auto t1 = monotonicNow();
    samples.record(0, i, 1, 8, t0, t1);
  });
  std::printf("empty loop        %6.1f ns/iteration\n", empty);
  std::printf("one clock read    %6.1f ns (over the empty loop)\n", clock - empty);
  std::printf("one sample        %6.1f ns (two clock reads and the record, over the empty loop)\n", sample - empty);
  std::printf("record alone      %6.1f ns\n", sample - empty - 2 * (clock - empty));
  std::printf("clockReadCost()   %6.1f ns (what a run subtracts per clock read)\n", fabscope::runtime::clockReadCost());
  return 0;
}
