#include "host/KvFillVerifyHost.hpp"

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "host/KvPattern.hpp"

namespace fabscope::kernels {

namespace {

void fillBlock(std::uint8_t* block, std::uint64_t bytes, std::uint64_t seed) {
  const std::uint64_t words = bytes / 8;
  for (std::uint64_t j = 0; j < words; ++j) {
    const std::uint64_t w = kvPatternWord(seed, j);
    std::memcpy(block + 8 * j, &w, 8);
  }
  if (const std::uint64_t tail = bytes % 8; tail != 0) {
    const std::uint64_t w = kvPatternWord(seed, words);
    for (std::uint64_t b = 0; b < tail; ++b) block[8 * words + b] = static_cast<std::uint8_t>(w >> (8 * b));
  }
}

std::uint8_t expectedByte(std::uint64_t seed, std::uint64_t byte) {
  return static_cast<std::uint8_t>(kvPatternWord(seed, byte / 8) >> (8 * (byte % 8)));
}

}  // namespace

std::string KvMismatch::describe() const {
  if (!found) return "no mismatch";
  char text[200];
  std::snprintf(text, sizeof text, "layer %u %s block %llu (pool block %llu) byte %llu: expected 0x%02x, got 0x%02x",
                layer, plane == 0 ? (planeIsLatent ? "latent" : "K") : "V",
                static_cast<unsigned long long>(logicalBlock), static_cast<unsigned long long>(poolBlock),
                static_cast<unsigned long long>(byteInBlock), expected, actual);
  return text;
}

void fillKvBlocksHost(void* pool, const KvCopyGeometry& g, std::span<const std::uint32_t> blockIds,
                      std::uint64_t requestId, KvLayerRange range) {
  checkKvCopyArguments(g, blockIds.data(), blockIds.size(), range);
  auto* base = static_cast<std::uint8_t*>(pool);
  for (std::uint32_t layer = range.begin; layer < range.end; ++layer)
    for (std::uint32_t plane = 0; plane < g.planes; ++plane)
      for (std::uint64_t i = 0; i < blockIds.size(); ++i)
        fillBlock(base + g.poolOffset(layer, plane, blockIds[i]), g.blockBytes,
                  kvBlockSeed(requestId, layer, plane, i));
}

KvMismatch verifyKvBlocksHost(const void* pool, const KvCopyGeometry& g, std::span<const std::uint32_t> blockIds,
                              std::uint64_t requestId, KvLayerRange range) {
  checkKvCopyArguments(g, blockIds.data(), blockIds.size(), range);
  const auto* base = static_cast<const std::uint8_t*>(pool);
  const std::uint64_t words = g.blockBytes / 8;
  for (std::uint32_t layer = range.begin; layer < range.end; ++layer)
    for (std::uint32_t plane = 0; plane < g.planes; ++plane)
      for (std::uint64_t i = 0; i < blockIds.size(); ++i) {
        const std::uint8_t* block = base + g.poolOffset(layer, plane, blockIds[i]);
        const std::uint64_t seed = kvBlockSeed(requestId, layer, plane, i);
        // Compare word-wise for speed; locate the exact byte only on a mismatch.
        std::uint64_t firstBad = g.blockBytes;
        for (std::uint64_t j = 0; j < words; ++j) {
          std::uint64_t w;
          std::memcpy(&w, block + 8 * j, 8);
          if (w != kvPatternWord(seed, j)) {
            firstBad = 8 * j;
            break;
          }
        }
        if (firstBad == g.blockBytes) firstBad = 8 * words;
        for (std::uint64_t b = firstBad; b < g.blockBytes; ++b) {
          if (block[b] == expectedByte(seed, b)) continue;
          KvMismatch m;
          m.found = true;
          m.layer = layer;
          m.plane = plane;
          m.planeIsLatent = g.planes == 1;
          m.logicalBlock = i;
          m.poolBlock = blockIds[i];
          m.byteInBlock = b;
          m.expected = expectedByte(seed, b);
          m.actual = block[b];
          return m;
        }
      }
  return {};
}

std::uint64_t blockChecksumHost(const void* block, std::uint64_t bytes) {
  const auto* p = static_cast<const std::uint8_t*>(block);
  const std::uint64_t words = bytes / 8;
  std::uint64_t sum = 0;
  for (std::uint64_t j = 0; j < words; ++j) {
    std::uint64_t w;
    std::memcpy(&w, p + 8 * j, 8);
    sum += checksumTerm(w, j);
  }
  if (bytes % 8 != 0) sum += checksumTerm(loadPartialWord(p + 8 * words, bytes % 8), words);
  return checksumFinish(sum, bytes);
}

std::uint64_t expectedKvBlockChecksum(std::uint64_t requestId, std::uint32_t layer, std::uint32_t plane,
                                      std::uint64_t logicalBlock, std::uint64_t blockBytes) {
  const std::uint64_t seed = kvBlockSeed(requestId, layer, plane, logicalBlock);
  const std::uint64_t words = blockBytes / 8;
  std::uint64_t sum = 0;
  for (std::uint64_t j = 0; j < words; ++j) sum += checksumTerm(kvPatternWord(seed, j), j);
  if (const std::uint64_t tail = blockBytes % 8; tail != 0) {
    const std::uint64_t mask = (std::uint64_t{1} << (8 * tail)) - 1;
    sum += checksumTerm(kvPatternWord(seed, words) & mask, words);
  }
  return checksumFinish(sum, blockBytes);
}

void checksumKvBlocksHost(const void* pool, const KvCopyGeometry& g, std::span<const std::uint32_t> blockIds,
                          KvLayerRange range, std::span<std::uint64_t> checksums) {
  checkKvCopyArguments(g, blockIds.data(), blockIds.size(), range);
  const std::uint64_t n = blockIds.size();
  if (checksums.size() != std::uint64_t{range.count()} * g.planes * n)
    throw std::invalid_argument("checksumKvBlocksHost: output holds " + std::to_string(checksums.size()) +
                                " checksums, expected " + std::to_string(std::uint64_t{range.count()} * g.planes * n));
  const auto* base = static_cast<const std::uint8_t*>(pool);
  for (std::uint32_t layer = range.begin; layer < range.end; ++layer)
    for (std::uint32_t plane = 0; plane < g.planes; ++plane)
      for (std::uint64_t i = 0; i < n; ++i)
        checksums[(std::uint64_t{layer - range.begin} * g.planes + plane) * n + i] =
            blockChecksumHost(base + g.poolOffset(layer, plane, blockIds[i]), g.blockBytes);
}

}  // namespace fabscope::kernels
