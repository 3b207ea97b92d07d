#pragma once
// Where a rank's tokens go in an MoE layer's expert-parallel all-to-all:
// each token picks top_k distinct experts (uniformly, or with Zipf-skewed
// popularity), experts live in contiguous blocks on the ranks (expert e on
// rank e * ranks / experts), and a token is sent once to every rank holding at
// least one of its experts (the dispatch de-duplicates per rank, as DeepEP's
// normal kernels do; the combine returns one result per copy). Pure and
// seeded: the same inputs give the same routing with any standard library.
#include <cstdint>
#include <vector>

namespace fabscope::suite::moe {

enum class Popularity { uniform, zipf };

struct RoutingSpec {
  int experts = 0;
  int topK = 0;
  Popularity popularity = Popularity::uniform;
  double zipfExponent = 1.0;  // weight of the k-th most popular expert ~ 1 / k^s
};

// One rank's dispatch: for each destination rank, the tokens it sends there
// (ascending token index), and how many token copies that makes.
struct RankRouting {
  std::vector<std::vector<std::int32_t>> tokensTo;  // [destination rank] -> token indices
  std::int64_t copies() const;
};

// Routes `tokens` tokens of rank `me` among `ranks` ranks. `seed` is the
// instance's: the popularity order of the experts depends on it alone (every
// rank agrees on which experts are hot), each rank's draws on it and `me`.
// Throws std::invalid_argument for an impossible spec (top_k > experts, ...).
RankRouting routeTokens(const RoutingSpec& spec, int tokens, int ranks, int me, std::uint64_t seed);

// The rank holding expert `e` of `experts` spread over `ranks` ranks.
inline int rankOfExpert(int e, int experts, int ranks) {
  return static_cast<int>(static_cast<std::int64_t>(e) * ranks / experts);
}

const char* popularityName(Popularity p);

}  // namespace fabscope::suite::moe
