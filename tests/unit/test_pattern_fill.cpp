// The point-to-point and incast data checks: verifyPatternHost must find the
// first wrong byte anywhere in a message, and a message of another sender
// (another seed) must not pass.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "host/PatternFill.hpp"
#include "memory/BufferArena.hpp"

namespace fk = fabscope::kernels;

TEST(PatternFill, AFilledBufferVerifies) {
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{4096}, std::size_t{65537}}) {
    std::vector<std::byte> buffer(bytes);
    fk::fillPatternHost(buffer.data(), bytes, 42);
    EXPECT_EQ(fk::verifyPatternHost(buffer.data(), bytes, 42), bytes) << bytes << " bytes";
  }
}

TEST(PatternFill, FindsTheFirstWrongByteAnywhere) {
  constexpr std::size_t bytes = 4099;
  for (std::size_t wrong : {std::size_t{0}, std::size_t{1}, std::size_t{2048}, bytes - 1}) {
    std::vector<std::byte> buffer(bytes);
    fk::fillPatternHost(buffer.data(), bytes, 7);
    buffer[wrong] ^= std::byte{0x01};  // a single flipped bit
    EXPECT_EQ(fk::verifyPatternHost(buffer.data(), bytes, 7), wrong);
    if (wrong + 1 < bytes) {
      buffer[bytes - 1] ^= std::byte{0xFF};  // a later error does not hide the first
      EXPECT_EQ(fk::verifyPatternHost(buffer.data(), bytes, 7), wrong);
    }
  }
}

TEST(PatternFill, AnotherSendersDataDoesNotPass) {
  constexpr std::size_t bytes = 64;
  std::vector<std::byte> buffer(bytes);
  fk::fillPatternHost(buffer.data(), bytes, 3);
  EXPECT_LT(fk::verifyPatternHost(buffer.data(), bytes, 4), bytes);
  std::vector<std::byte> zeros(bytes);  // a receive buffer nothing arrived in
  EXPECT_LT(fk::verifyPatternHost(zeros.data(), bytes, 3), bytes);
}

TEST(PatternFill, TheSelfTestCorruptionIsCaught) {
  constexpr std::size_t bytes = 1000;
  std::vector<std::byte> buffer(bytes);
  fk::fillPatternHost(buffer.data(), bytes, 11);
  fabscope::suite::corruptOneByte(buffer.data(), bytes, fabscope::suite::MemoryKind::host);
  EXPECT_EQ(fk::verifyPatternHost(buffer.data(), bytes, 11), bytes / 2);
}
