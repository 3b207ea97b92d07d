#include "driver/BatchFigure.hpp"

#include <algorithm>

namespace fabscope::driver {

BatchFigure batchFigure(std::span<const output::SampleRecord> samples, int sampleDivisor, int clockReadsPerSample,
                        double clockReadNs) {
  double loopNs = 0, bytes = 0;
  long long iterations = 0;
  const double perSample = clockReadsPerSample * clockReadNs;
  std::size_t first = 0;
  for (std::size_t i = 1; i <= samples.size(); ++i) {
    const bool ends = i == samples.size() || samples[i].rank != samples[i - 1].rank ||
                      samples[i].peer != samples[i - 1].peer || samples[i].iter != samples[i - 1].iter + 1;
    if (!ends) continue;
    const auto n = static_cast<long long>(i - first);
    const double span = static_cast<double>(samples[i - 1].t_done_ns - samples[first].t_post_ns);
    // Never below the samples' own time: the subtraction corrects for clock
    // reads, it must not invent speed when the calibration ran on a faster core.
    double timed = 0;
    for (std::size_t k = first; k < i; ++k) {
      timed += static_cast<double>(samples[k].t_done_ns - samples[k].t_post_ns);
      bytes += static_cast<double>(samples[k].bytes);
    }
    loopNs += std::max(span - static_cast<double>(n) * perSample, timed);
    iterations += n;
    first = i;
  }
  BatchFigure figure;
  if (iterations == 0 || loopNs <= 0) return figure;
  figure.iterations = iterations;
  figure.meanNs = loopNs / static_cast<double>(iterations) / std::max(1, sampleDivisor);
  figure.gbps = bytes / loopNs;
  return figure;
}

}  // namespace fabscope::driver
