#include "kinds/collectives/MoeRouting.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

namespace fabscope::suite::moe {
namespace {

// Uniform double in [0, 1) from the generator's bits (the standard's
// distributions differ between libraries; this does not).
double unit(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

// Unbiased integer in [0, n) by rejection (same on every library).
std::uint64_t below(std::mt19937_64& g, std::uint64_t n) {
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::uint64_t x = 0;
  do x = g();
  while (x >= limit);
  return x % n;
}

constexpr std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  // splitmix64 step over a ^ b: independent streams per (seed, purpose).
  std::uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::int64_t RankRouting::copies() const {
  std::int64_t n = 0;
  for (const auto& t : tokensTo) n += static_cast<std::int64_t>(t.size());
  return n;
}

const char* popularityName(Popularity p) { return p == Popularity::zipf ? "zipf" : "uniform"; }

RankRouting routeTokens(const RoutingSpec& spec, int tokens, int ranks, int me, std::uint64_t seed) {
  if (spec.experts < 1 || spec.topK < 1 || spec.topK > spec.experts)
    throw std::invalid_argument("MoE routing needs 1 <= top_k <= experts; got top_k " + std::to_string(spec.topK) +
                                " of " + std::to_string(spec.experts) + " experts");
  if (ranks < 1 || me < 0 || me >= ranks || tokens < 0)
    throw std::invalid_argument("MoE routing: rank " + std::to_string(me) + " of " + std::to_string(ranks));
  if (spec.popularity == Popularity::zipf && !(spec.zipfExponent > 0))
    throw std::invalid_argument("MoE routing: the Zipf exponent must be above 0");
  const auto experts = static_cast<std::size_t>(spec.experts);
  // Popularity weights: uniform, or 1/k^s for the expert of popularity rank k,
  // the order shuffled with the instance's seed so hot experts fall on any rank.
  std::vector<double> weight(experts, 1.0);
  if (spec.popularity == Popularity::zipf) {
    std::vector<std::size_t> order(experts);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::mt19937_64 shuffle(mix(seed, 0x6d6f652d6f72646eULL));
    for (std::size_t i = experts; i > 1; --i) std::swap(order[i - 1], order[below(shuffle, i)]);
    for (std::size_t k = 0; k < experts; ++k)
      weight[order[k]] = 1.0 / std::pow(static_cast<double>(k + 1), spec.zipfExponent);
  }
  RankRouting out;
  out.tokensTo.assign(static_cast<std::size_t>(ranks), {});
  std::mt19937_64 g(mix(seed, 0x72616e6b00000000ULL + static_cast<std::uint64_t>(me)));
  std::vector<double> w(experts);
  std::vector<bool> toRank(static_cast<std::size_t>(ranks));
  for (int t = 0; t < tokens; ++t) {
    // top_k distinct experts, each drawn in proportion to its weight among
    // those not yet chosen (sampling without replacement).
    w = weight;
    double total = std::accumulate(w.begin(), w.end(), 0.0);
    std::fill(toRank.begin(), toRank.end(), false);
    for (int k = 0; k < spec.topK; ++k) {
      double x = unit(g) * total;
      std::size_t e = 0;
      while (e + 1 < experts && (w[e] == 0 || x >= w[e])) {
        x -= w[e];
        ++e;
      }
      while (w[e] == 0) --e;  // rounding at the top end: the last expert still open
      total -= w[e];
      w[e] = 0;
      toRank[static_cast<std::size_t>(rankOfExpert(static_cast<int>(e), spec.experts, ranks))] = true;
    }
    for (int r = 0; r < ranks; ++r)
      if (toRank[static_cast<std::size_t>(r)]) out.tokensTo[static_cast<std::size_t>(r)].push_back(t);
  }
  return out;
}

}  // namespace fabscope::suite::moe
