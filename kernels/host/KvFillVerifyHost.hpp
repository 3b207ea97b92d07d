#pragma once
// Host fill / verify / checksum of a request's KV blocks in a paged pool.
// Contents and checksum are defined in KvPattern.hpp; logical block i of the
// request lives at pool block blockIds[i].
#include <cstdint>
#include <span>
#include <string>

#include "host/KvCopyGeometry.hpp"

namespace fabscope::kernels {

void fillKvBlocksHost(void* pool, const KvCopyGeometry& geometry, std::span<const std::uint32_t> blockIds,
                      std::uint64_t requestId, KvLayerRange range);

struct KvMismatch {
  bool found = false;
  std::uint32_t layer = 0;
  std::uint32_t plane = 0;
  bool planeIsLatent = false;  // MLA pool: plane 0 is the latent, not K
  std::uint64_t logicalBlock = 0;
  std::uint64_t poolBlock = 0;
  std::uint64_t byteInBlock = 0;
  std::uint8_t expected = 0;
  std::uint8_t actual = 0;
  std::string describe() const;  // "layer 3 V block 7 (pool 1234) byte 99: expected 0x12, got 0x13"
};

// Scans in (layer, plane, logical block, byte) order and reports the first
// byte that differs from the fill pattern of `requestId`.
KvMismatch verifyKvBlocksHost(const void* pool, const KvCopyGeometry& geometry, std::span<const std::uint32_t> blockIds,
                              std::uint64_t requestId, KvLayerRange range);

// Checksum of one block of `bytes` bytes (KvPattern.hpp).
std::uint64_t blockChecksumHost(const void* block, std::uint64_t bytes);
// The checksum a block filled for (requestId, layer, plane, logicalBlock)
// must have; computed without materialising the block.
std::uint64_t expectedKvBlockChecksum(std::uint64_t requestId, std::uint32_t layer, std::uint32_t plane,
                                      std::uint64_t logicalBlock, std::uint64_t blockBytes);

// One checksum per (layer in range, plane, logical block), written to
// checksums[((layer - begin) * planes + plane) * n + i] (the staging order).
// checksums.size() must be range.count() * planes * blockIds.size().
void checksumKvBlocksHost(const void* pool, const KvCopyGeometry& geometry, std::span<const std::uint32_t> blockIds,
                          KvLayerRange range, std::span<std::uint64_t> checksums);

}  // namespace fabscope::kernels
