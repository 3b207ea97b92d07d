// The progress watch of one running test: a test shorter than the first line's
// delay prints nothing (docs: "a short test prints nothing"), and ending the watch
// does not wait for that delay.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "driver/Progress.hpp"
#include "kinds/SampleBuffer.hpp"

using namespace fabscope;

TEST(ProgressWatch, ATestShorterThanTheFirstLinesDelayPrintsNothing) {
  using namespace std::chrono;
  suite::SampleBuffer samples(100);
  samples.record(0, 0, 1, 8, 10, 20);
  // Long enough for the watch's thread to be waiting for its first line (or, were that
  // line due at once, to print it), far short of the delay itself.
  const auto held = duration<double>(driver::ProgressWatch::firstLineSeconds / 20);
  ::testing::internal::CaptureStderr();
  const auto started = steady_clock::now();
  {
    driver::ProgressWatch watch("[1/1] short", samples, 60.0);
    std::this_thread::sleep_for(held);
  }
  const double ended = duration<double>(steady_clock::now() - started).count();
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed, "");
  EXPECT_LT(ended, driver::ProgressWatch::firstLineSeconds / 2) << "ending the watch waited for its first line";
}
