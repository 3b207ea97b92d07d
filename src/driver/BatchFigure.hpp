#pragma once
// The batch figure of a point-to-point test, measured the way OSU and
// ucx_perftest report theirs: the wall time of each pair's whole timed loop
// divided by its iterations (osu_latency's average, osu_bw's rate), beside
// fabscope's per-sample statistics. The loop holds two clock reads per
// iteration that OSU's does not; their cost, measured on the rank that reduces
// (runtime::clockReadCost), is subtracted. Everything else in the loop (posting
// the next receive, recording the sample: docs/benchmarks.md gives its cost)
// stays in, as OSU's loop keeps its own bookkeeping.
#include <span>

#include "output/Records.hpp"

namespace fabscope::driver {

struct BatchFigure {
  double meanNs = 0;         // per iteration, after the sample divisor (one-way latency)
  double gbps = 0;           // bytes / loop time (bytes per ns = GB/s)
  long long iterations = 0;  // 0: no loop found, no figure
};

// `samples`: an instance's records in the order the ranks recorded them (rank
// by rank, as gathered). A loop is a run of one rank's samples with one peer
// and consecutive iteration numbers.
BatchFigure batchFigure(std::span<const output::SampleRecord> samples, int sampleDivisor, int clockReadsPerSample,
                        double clockReadNs);

}  // namespace fabscope::driver
