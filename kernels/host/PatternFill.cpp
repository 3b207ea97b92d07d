#include "PatternFill.hpp"

namespace fabscope::kernels {

void fillPatternHost(void* buffer, std::size_t bytes, std::uint64_t seed) {
  auto* p = static_cast<std::uint8_t*>(buffer);
  for (std::size_t i = 0; i < bytes; ++i) p[i] = patternByte(seed, i);
}

std::size_t verifyPatternHost(const void* buffer, std::size_t bytes, std::uint64_t seed) {
  const auto* p = static_cast<const std::uint8_t*>(buffer);
  for (std::size_t i = 0; i < bytes; ++i)
    if (p[i] != patternByte(seed, i)) return i;
  return bytes;
}

}  // namespace fabscope::kernels
