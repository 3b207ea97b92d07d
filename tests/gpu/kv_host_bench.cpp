// fabscope_kv_host_bench: host KV gather/scatter vs one memcpy of the same
// total bytes, per block size, as a ratio (>= 1 would mean "as fast as one
// contiguous copy"; scattered blocks cost TLB misses and lost prefetch, so
// expect somewhat below 1 for small blocks).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "host/KvGatherScatterHost.hpp"
#include "host/PatternFill.hpp"

namespace fk = fabscope::kernels;

namespace {

template <class Op>
double bestSeconds(int reps, Op op) {
  op();  // warm: page faults, caches
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    op();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  // Total bytes per gather; larger than the last-level cache so the numbers
  // are memory bandwidth, not cache bandwidth.
  const std::uint64_t total = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 128) << 20;
  std::printf("fabscope_kv_host_bench: %llu MiB per gather, best of 5\n", static_cast<unsigned long long>(total >> 20));
  std::printf("%-12s %8s %12s %12s %7s %12s %7s\n", "block_bytes", "blocks", "memcpy_GB/s", "gather_GB/s", "ratio",
              "scatter_GB/s", "ratio");
  const std::uint64_t sizes[] = {2048, 4096, 8192, 9216, 16384, 18432, 32768, 65536};
  constexpr std::uint32_t layers = 8, planes = 2;
  for (const std::uint64_t blockBytes : sizes) {
    const std::uint64_t n = total / (layers * planes * blockBytes);
    const fk::KvCopyGeometry g{layers, planes, 2 * n, blockBytes};
    std::vector<std::uint32_t> ids(g.poolBlocks);
    std::iota(ids.begin(), ids.end(), 0u);
    std::shuffle(ids.begin(), ids.end(), std::mt19937_64(blockBytes));
    ids.resize(n);
    const std::uint64_t bytes = g.stagingBytes(n, g.allLayers());
    std::vector<std::uint8_t> pool(g.poolBytes()), staging(bytes), copyDst(bytes);
    fk::fillPatternHost(pool.data(), pool.size(), 1);
    fk::fillPatternHost(staging.data(), staging.size(), 2);
    fk::fillPatternHost(copyDst.data(), copyDst.size(), 3);
    const double tMemcpy = bestSeconds(5, [&] { std::memcpy(copyDst.data(), staging.data(), bytes); });
    const double tGather =
        bestSeconds(5, [&] { fk::gatherKvBlocksHost(pool.data(), staging.data(), g, ids, g.allLayers()); });
    const double tScatter =
        bestSeconds(5, [&] { fk::scatterKvBlocksHost(staging.data(), pool.data(), g, ids, g.allLayers()); });
    std::printf("%-12llu %8llu %12.2f %12.2f %7.2f %12.2f %7.2f\n", static_cast<unsigned long long>(blockBytes),
                static_cast<unsigned long long>(n * layers * planes), bytes / tMemcpy / 1e9, bytes / tGather / 1e9,
                tMemcpy / tGather, bytes / tScatter / 1e9, tMemcpy / tScatter);
  }
  return 0;
}
