#pragma once
// Deterministic KV block contents and a per-block checksum, shared by the host
// and CUDA implementations.
//
// Contents: word j (8 bytes, little-endian) of the block holding
// (request, layer, plane, logical block index) is kvPatternWord(seed, j); a
// trailing partial word holds the low bytes of the next pattern word. A
// receiver regenerates it from the request id alone, whatever pool positions
// the blocks landed in.
//
// Checksum: sum over words of mix64(word XOR position key), finished with
// mix64(sum XOR bytes). mix64 is a bijection, so a change confined to one word
// (any single wrong byte, or several in one 8-byte word) always changes the
// checksum; other corruption is caught with probability 1 - 2^-64. The sum is
// order-free, so a GPU block can reduce it in any order and still match the
// host bit for bit. Not cryptographic.
#include <cstdint>

#include "host/HostDevice.hpp"

namespace fabscope::kernels {

// splitmix64's finaliser: a bijection on 64-bit values with full avalanche.
FABSCOPE_HD constexpr std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

FABSCOPE_HD constexpr std::uint64_t kvBlockSeed(std::uint64_t requestId, std::uint32_t layer, std::uint32_t plane,
                                                std::uint64_t logicalBlock) {
  std::uint64_t h = mix64(requestId + 0x9E3779B97F4A7C15ull);
  h = mix64(h ^ (std::uint64_t{layer} << 1 | plane));
  return mix64(h ^ (logicalBlock * 0xD1B54A32D192ED03ull));
}

FABSCOPE_HD constexpr std::uint64_t kvPatternWord(std::uint64_t blockSeed, std::uint64_t wordIndex) {
  return mix64(blockSeed + (wordIndex + 1) * 0x9E3779B97F4A7C15ull);
}

FABSCOPE_HD constexpr std::uint64_t checksumTerm(std::uint64_t word, std::uint64_t wordIndex) {
  return mix64(word ^ (wordIndex * 0xD6E8FEB86659FD93ull + 0xA0761D6478BD642Full));
}

FABSCOPE_HD constexpr std::uint64_t checksumFinish(std::uint64_t termSum, std::uint64_t bytes) {
  return mix64(termSum ^ (bytes * 0x8EBC6AF09C88C6E3ull));
}

// Little-endian load of up to 8 bytes, zero-padded: the last partial word.
FABSCOPE_HD inline std::uint64_t loadPartialWord(const std::uint8_t* p, std::uint64_t count) {
  std::uint64_t w = 0;
  for (std::uint64_t b = 0; b < count; ++b) w |= std::uint64_t{p[b]} << (8 * b);
  return w;
}

}  // namespace fabscope::kernels
