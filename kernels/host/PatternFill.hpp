#pragma once
// Deterministic data patterns so a receiver can verify every byte it got
// without a second copy of the sender's buffer.
#include <cstddef>
#include <cstdint>

namespace fabscope::kernels {

// Byte i of a buffer tagged `seed` holds patternByte(seed, i).
constexpr std::uint8_t patternByte(std::uint64_t seed, std::size_t i) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + i;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return static_cast<std::uint8_t>(x);
}

void fillPatternHost(void* buffer, std::size_t bytes, std::uint64_t seed);

// Returns the index of the first wrong byte, or `bytes` when all are right.
std::size_t verifyPatternHost(const void* buffer, std::size_t bytes, std::uint64_t seed);

}  // namespace fabscope::kernels
