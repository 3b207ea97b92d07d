// The serving-mix kinds: the MoE all-to-all's routing (pure, seeded) and scenario keys, and
// the front-end api kind's scenario keys.
#include <gtest/gtest.h>

#include "fabscope/BuildConfig.hpp"

#include <algorithm>
#include <numeric>
#include <set>

#include "driver/Runner.hpp"
#include "kinds/Registry.hpp"
#include "kinds/collectives/AllToAllConfig.hpp"
#include "kinds/collectives/ExchangeLayout.hpp"
#include "kinds/collectives/MoeRouting.hpp"
#include "runtime/Errors.hpp"
#include "scenario/Scenario.hpp"

using namespace fabscope;
using suite::moe::Popularity;
using suite::moe::routeTokens;
using suite::moe::RoutingSpec;

namespace {

// Copies each rank receives (its experts' load) when every rank routes `tokens`.
std::vector<std::int64_t> loadPerRank(const RoutingSpec& spec, int tokens, int ranks, std::uint64_t seed) {
  std::vector<std::int64_t> load(static_cast<std::size_t>(ranks), 0);
  for (int me = 0; me < ranks; ++me) {
    const auto r = routeTokens(spec, tokens, ranks, me, seed);
    for (int d = 0; d < ranks; ++d)
      load[static_cast<std::size_t>(d)] += static_cast<std::int64_t>(r.tokensTo[static_cast<std::size_t>(d)].size());
  }
  return load;
}

double imbalance(const std::vector<std::int64_t>& load) {
  const double mean = static_cast<double>(std::accumulate(load.begin(), load.end(), std::int64_t{0})) /
                      static_cast<double>(load.size());
  return static_cast<double>(*std::max_element(load.begin(), load.end())) / mean;
}

}  // namespace

TEST(MoeRouting, EachTokenGoesOnceToEveryRankOfItsTopKExperts) {
  const RoutingSpec spec{.experts = 32, .topK = 4};
  const auto r = routeTokens(spec, 500, 8, 3, 42);
  ASSERT_EQ(r.tokensTo.size(), 8u);
  std::vector<int> destinations(500, 0);
  for (const auto& tokens : r.tokensTo) {
    EXPECT_TRUE(std::is_sorted(tokens.begin(), tokens.end()));
    EXPECT_EQ(std::set<std::int32_t>(tokens.begin(), tokens.end()).size(), tokens.size())
        << "a token twice to one rank";
    for (const auto t : tokens) ++destinations[static_cast<std::size_t>(t)];
  }
  // 4 distinct experts of 32 on 8 ranks (4 per rank): 1 to 4 ranks per token,
  // and with 4 picks among 8 ranks mostly more than one.
  for (const int d : destinations) EXPECT_TRUE(d >= 1 && d <= 4) << d;
  EXPECT_GT(r.copies(), 500 * 2);
  EXPECT_EQ(r.copies(), std::accumulate(destinations.begin(), destinations.end(), std::int64_t{0}));
}

TEST(MoeRouting, SameInputsSameRoutingAndRanksDiffer) {
  const RoutingSpec spec{.experts = 16, .topK = 2, .popularity = Popularity::zipf, .zipfExponent = 1.0};
  const auto a = routeTokens(spec, 64, 4, 1, 7), b = routeTokens(spec, 64, 4, 1, 7);
  EXPECT_EQ(a.tokensTo, b.tokensTo);
  EXPECT_NE(a.tokensTo, routeTokens(spec, 64, 4, 2, 7).tokensTo);
  EXPECT_NE(a.tokensTo, routeTokens(spec, 64, 4, 1, 8).tokensTo);
}

TEST(MoeRouting, ZipfLoadsSomeRanksMoreThanUniform) {
  const RoutingSpec uniform{.experts = 16, .topK = 2};
  const RoutingSpec skewed{.experts = 16, .topK = 2, .popularity = Popularity::zipf, .zipfExponent = 2.0};
  const double even = imbalance(loadPerRank(uniform, 2000, 4, 11));
  const double skew = imbalance(loadPerRank(skewed, 2000, 4, 11));
  EXPECT_LT(even, 1.05);
  // Every rank agrees on the hot experts (the order depends on the seed only),
  // so their rank's load adds up across sources.
  EXPECT_GT(skew, 1.5);
}

TEST(MoeRouting, ImpossibleSpecsAreRefused) {
  EXPECT_THROW(routeTokens({.experts = 4, .topK = 5}, 1, 2, 0, 1), std::invalid_argument);
  EXPECT_THROW(routeTokens({.experts = 4, .topK = 2}, 1, 2, 2, 1), std::invalid_argument);
  EXPECT_EQ(suite::moe::rankOfExpert(255, 256, 8), 7);
  EXPECT_EQ(suite::moe::rankOfExpert(0, 256, 8), 0);
  EXPECT_EQ(suite::moe::rankOfExpert(31, 256, 8), 0);
  EXPECT_EQ(suite::moe::rankOfExpert(32, 256, 8), 1);
}

namespace {

std::string errorOf(const std::string& text, int ranks = 4) {
  static const suite::Registry registry;
  try {
    auto s = scenario::loadScenarioText(text, "t.yaml", {}, registry.scenarioRules(ranks));
    driver::planMatrix(s, registry, ranks);
  } catch (const scenario::ScenarioError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(MoeAllToAllScenario, SizesAndRoutingComeFromTheModelOrTheTest) {
  EXPECT_EQ(
      errorOf("model: deepseek-v3\ntests:\n  - {kind: alltoall, sizes: {derive: moe-dispatch, tokens: [1, 128]}}\n"),
      "no error");
  EXPECT_EQ(errorOf("tests:\n  - {kind: alltoall, experts: 8, top_k: 2, token_bytes: {dispatch: 64, combine: 32}, "
                    "sizes: [640]}\n"),
            "no error");
  // a model without experts
  EXPECT_NE(errorOf("model: llama3-70b\ntests:\n  - {kind: alltoall, sizes: {derive: moe-dispatch, tokens: [8]}}\n")
                .find("t.yaml:3:29: model 'llama3-70b' has no MoE layers"),
            std::string::npos)
      << errorOf("model: llama3-70b\ntests:\n  - {kind: alltoall, sizes: {derive: moe-dispatch, tokens: [8]}}\n");
  // no model and no sizes of a token
  EXPECT_NE(errorOf("tests:\n  - {kind: alltoall, experts: 8, top_k: 2, sizes: [640]}\n")
                .find("t.yaml:2:5: test 'alltoall-1' (alltoall) needs the bytes of one token"),
            std::string::npos)
      << errorOf("tests:\n  - {kind: alltoall, experts: 8, top_k: 2, sizes: [640]}\n");
  // a literal size that is not whole tokens
  EXPECT_NE(errorOf("tests:\n  - {kind: alltoall, experts: 8, top_k: 2, token_bytes: {dispatch: 64, combine: 32}, "
                    "sizes: [100]}\n")
                .find("size 100 B is not a whole number of 64 B token copies"),
            std::string::npos);
  EXPECT_NE(
      errorOf(
          "model: deepseek-v3\ntests:\n  - {kind: alltoall, top_k: 300, sizes: {derive: moe-dispatch, tokens: [8]}}\n")
          .find("t.yaml:3:29: 'top_k' in test 'alltoall-1' is 300, more than its 256 experts"),
      std::string::npos)
      << errorOf(
             "model: deepseek-v3\ntests:\n  - {kind: alltoall, top_k: 300, sizes: {derive: moe-dispatch, tokens: "
             "[8]}}\n");
  EXPECT_NE(errorOf("model: deepseek-v3\ntests:\n  - {kind: alltoall, routing: {popularity: hot}, sizes: {derive: "
                    "moe-dispatch, tokens: [8]}}\n")
                .find("'routing.popularity' in test 'alltoall-1' is 'hot'; expected one of: uniform, zipf"),
            std::string::npos);
  EXPECT_NE(errorOf("model: deepseek-v3\ntests:\n  - {kind: alltoall, routing: {exponent: 2}, sizes: {derive: "
                    "moe-dispatch, tokens: [8]}}\n")
                .find("'routing.exponent' applies to 'popularity: zipf' only"),
            std::string::npos);
  EXPECT_NE(errorOf("model: deepseek-v3\ntests:\n  - {kind: alltoall, transport: ucx, sizes: {derive: moe-dispatch, "
                    "tokens: [8]}}\n")
                .find("t.yaml:3:5: test 'alltoall-1': alltoall runs over transport mpi on memory: host, or transport "
                      "nccl on memory: cuda"),
            std::string::npos)
      << errorOf(
             "model: deepseek-v3\ntests:\n  - {kind: alltoall, transport: ucx, sizes: {derive: moe-dispatch, tokens: "
             "[8]}}\n");
#if FABSCOPE_HAVE_NCCL
  // NCCL on GPU memory loads; NCCL on host memory and MPI on GPU memory do not
  EXPECT_EQ(errorOf("model: deepseek-v3\ntests:\n  - {kind: alltoall, transport: nccl, memory: cuda, sizes: {derive: "
                    "moe-dispatch, tokens: [8]}}\n"),
            "no error");
  EXPECT_NE(errorOf("model: deepseek-v3\ntests:\n  - {kind: alltoall, transport: nccl, sizes: {derive: moe-dispatch, "
                    "tokens: [8]}}\n")
                .find("transport nccl on memory: cuda"),
            std::string::npos);
  EXPECT_NE(errorOf("model: deepseek-v3\ntests:\n  - {kind: alltoall, memory: cuda, sizes: {derive: moe-dispatch, "
                    "tokens: [8]}}\n")
                .find("transport nccl on memory: cuda"),
            std::string::npos);
#else
  // A build without CUDA/NCCL (the sanitizer build) refuses both at load, saying why.
  EXPECT_NE(errorOf("model: deepseek-v3\ntests:\n  - {kind: alltoall, transport: nccl, memory: cuda, sizes: {derive: "
                    "moe-dispatch, tokens: [8]}}\n")
                .find("built without"),
            std::string::npos);
#endif
  EXPECT_NE(errorOf("model: deepseek-v3\ntests:\n  - {kind: alltoall, sizes: {derive: moe-dispatch, tokens: [8]}}\n", 1)
                .find("needs at least 2 ranks"),
            std::string::npos);
}

// The per-peer blocks both all-to-all paths (MPI_Ialltoallv, grouped
// ncclSend/ncclRecv) move: built from the counts the ranks exchange, so what
// rank a sends to b is exactly what b expects from a, block by block.
TEST(AllToAllExchangeLayout, BlocksAreContiguousInPeerOrderAndMatchAcrossRanks) {
  const RoutingSpec spec{16, 4, Popularity::zipf, 1.2};
  const int ranks = 5, tokens = 37;
  const std::int64_t dispatchBytes = 48, combineBytes = 32;
  std::vector<std::vector<std::int64_t>> copies(ranks, std::vector<std::int64_t>(ranks));  // [from][to]
  for (int a = 0; a < ranks; ++a) {
    const auto r = routeTokens(spec, tokens, ranks, a, 99);
    for (int b = 0; b < ranks; ++b) copies[a][b] = static_cast<std::int64_t>(r.tokensTo[b].size());
  }
  std::vector<suite::ExchangeLayout> dispatch, combine;
  for (int me = 0; me < ranks; ++me) {
    std::vector<std::int64_t> sendTo(ranks), recvFrom(ranks);
    for (int p = 0; p < ranks; ++p) sendTo[p] = copies[me][p], recvFrom[p] = copies[p][me];
    dispatch.push_back(suite::ExchangeLayout::of(sendTo, recvFrom, dispatchBytes));
    combine.push_back(suite::ExchangeLayout::of(recvFrom, sendTo, combineBytes));
  }
  for (int me = 0; me < ranks; ++me) {
    const auto& d = dispatch[me];
    std::int64_t offset = 0;
    for (int p = 0; p < ranks; ++p) {
      EXPECT_EQ(d.sendDispls[p], offset) << "rank " << me << " peer " << p;
      offset += d.sendCounts[p];
      EXPECT_EQ(d.sendCounts[p], copies[me][p] * dispatchBytes);
      // what I send to p is what p receives from me, in both phases
      EXPECT_EQ(d.sendCounts[p], dispatch[p].recvCounts[me]);
      EXPECT_EQ(combine[p].sendCounts[me], combine[me].recvCounts[p]);
      EXPECT_EQ(combine[me].recvCounts[p], copies[me][p] * combineBytes);
    }
    EXPECT_EQ(d.sendBytes, offset);
    EXPECT_EQ(d.recvDispls.back() + d.recvCounts.back(), d.recvBytes);
  }
  const auto mpi = suite::MpiExchangeCounts::of(dispatch[0]);
  EXPECT_EQ(std::vector<std::int64_t>(mpi.recvDispls.begin(), mpi.recvDispls.end()), dispatch[0].recvDispls);
}

TEST(AllToAllExchangeLayout, MpiCountsBeyondIntAreRefusedNcclCountsAreNot) {
  // 3 peers of 1 Gi items of 1 B: blocks fit in int, the last offset (2 GiB) does not
  const auto big = suite::ExchangeLayout::of({1 << 30, 1 << 30, 1 << 30}, {1, 1, 1}, 1);
  EXPECT_EQ(big.sendDispls[2], std::int64_t{2} << 30);
  EXPECT_EQ(big.sendBytes, std::int64_t{3} << 30);
  try {
    (void)suite::MpiExchangeCounts::of(big);
    ADD_FAILURE() << "a 2 GiB offset was given to MPI in int";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("2147483648 bytes"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW((void)suite::MpiExchangeCounts::of(suite::ExchangeLayout::of({1 << 20, 3}, {5, 1 << 20}, 1024)));
}

TEST(ApiScenario, KeysAreCheckedAtLoad) {
  const std::string ok = "tests:\n  - {kind: api, sizes: [256], clients: 1, rate: 100, requests: 10}\n";
  EXPECT_EQ(errorOf(ok), "no error");
  EXPECT_NE(errorOf("tests:\n  - {kind: api, sizes: [256], clients: 4}\n")
                .find("t.yaml:2:40: test 'api-1' has 4 measuring ranks: 'clients: 4' leaves none to serve"),
            std::string::npos)
      << errorOf("tests:\n  - {kind: api, sizes: [256], clients: 4}\n");
  EXPECT_NE(errorOf("tests:\n  - {kind: api, sizes: [256], chunks: 100, chunk_interval: 1s, request_timeout: 5s}\n")
                .find("every request would time out"),
            std::string::npos);
  EXPECT_NE(errorOf("tests:\n  - {kind: api, sizes: [256], rate: 1, requests: 1000, timeout: 60s}\n")
                .find("(lower requests, raise rate or timeout)"),
            std::string::npos);
  EXPECT_NE(errorOf("tests:\n  - {kind: api, sizes: [256], network: wan}\n")
                .find("'network' in test 'api-1' is 'wan'; expected one of: fabric, frontend"),
            std::string::npos);
  EXPECT_NE(errorOf("tests:\n  - {kind: api, sizes: [256], transport: ucx}\n").find("runs over its own TCP sockets"),
            std::string::npos);
  EXPECT_NE(
      errorOf("tests:\n  - {kind: api, sizes: [256], service_time: soon}\n").find("'service_time' in test 'api-1'"),
      std::string::npos);
  EXPECT_NE(errorOf("tests:\n  - {kind: api, sizes: [32MiB]}\n").find("more than 16MiB"), std::string::npos);
}
