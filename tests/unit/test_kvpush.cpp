// kvpush: request routing, Poisson arrivals, and the scenario keys (through
// the real loader, so the derived sizes and the kind's checks meet).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>
#include <tuple>

#include "fabscope/BuildConfig.hpp"
#include "kinds/Registry.hpp"
#include "kinds/kvpush/KvPushConfig.hpp"
#include "kinds/kvpush/KvPushSchedule.hpp"
#include "kinds/kvpush/KvPushWorkers.hpp"
#include "scenario/Matrix.hpp"

namespace fabscope {
namespace {

using namespace suite::kvpush;

scenario::Scenario load(const std::string& tests, int ranks = 4) {
  static const suite::Registry registry;
  const std::string text = "name: t\nseed: 1\nmodel: llama3-70b\nparallel: {tp: 8}\ntests:\n" + tests;
  return scenario::loadScenarioText(text, "t.yaml", {}, registry.scenarioRules(ranks));
}

std::string loadError(const std::string& tests, int ranks = 4) {
  try {
    (void)load(tests, ranks);
  } catch (const scenario::ScenarioError& e) {
    return e.what();
  }
  return "";
}

const std::string perBlock =
    "  - kind: kvpush\n    strategy: per-block\n"
    "    sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [1024, 2048]}\n";

TEST(KvPushSchedule, ManyPrefillToOneDecodeSendsEverythingThere) {
  for (int p = 0; p < 3; ++p)
    for (int k = 0; k < 10; ++k) EXPECT_EQ(decodeIndexOf(p, k, 1), 0);
  EXPECT_EQ(requestsFromPrefill(2, 0, 1, 5), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(KvPushSchedule, RequestsRotateOverDecodeRanksAndEachGoesToExactlyOne) {
  const int decodes = 3, perPrefill = 7;
  for (int p = 0; p < 4; ++p) {
    std::vector<int> all;
    std::vector<int> perDecode(decodes);
    for (int d = 0; d < decodes; ++d) {
      const auto mine = requestsFromPrefill(p, d, decodes, perPrefill);
      EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
      perDecode[static_cast<std::size_t>(d)] = static_cast<int>(mine.size());
      all.insert(all.end(), mine.begin(), mine.end());
    }
    std::sort(all.begin(), all.end());
    std::vector<int> expected(perPrefill);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(all, expected) << "prefill " << p;
    // Balanced to within one request.
    const auto [lo, hi] = std::minmax_element(perDecode.begin(), perDecode.end());
    EXPECT_LE(*hi - *lo, 1);
  }
  // Different prefill ranks start on different decode ranks.
  EXPECT_EQ(decodeIndexOf(0, 0, 2), 0);
  EXPECT_EQ(decodeIndexOf(1, 0, 2), 1);
  EXPECT_THROW(decodeIndexOf(0, 0, 0), std::invalid_argument);
}

TEST(KvPushSchedule, RingRotationMakesEveryRankPrefillOnceAndDecodeOncePerCycleWithNewPartners) {
  // One node's ranks per worker (P = D = 2 over 8 ranks: 4 rounds a cycle).
  for (const auto& [prefill, decode, ranks] :
       {std::tuple{1, 1, 8}, std::tuple{2, 2, 8}, std::tuple{1, 1, 2}, std::tuple{3, 3, 9}, std::tuple{1, 1, 5}}) {
    const int rounds = ringRoundsOf(prefill, ranks);
    EXPECT_EQ(rounds, ranks / prefill) << prefill << " over " << ranks;
    const int partnersPossible = (ranks - decode) / prefill;
    const int cycles = 3;
    std::vector<std::set<int>> sendersTo(static_cast<std::size_t>(ranks));
    for (int c = 0; c < cycles; ++c) {
      std::vector<int> prefills(static_cast<std::size_t>(ranks)), decodes(static_cast<std::size_t>(ranks));
      for (int r = c * rounds; r < (c + 1) * rounds; ++r) {
        const auto order = rotatedPositionsOf(r, prefill, decode, ranks);
        ASSERT_EQ(static_cast<int>(order.size()), ranks);
        EXPECT_EQ(std::set<int>(order.begin(), order.end()).size(), order.size()) << "round " << r;
        for (int role = 0; role < ranks; ++role) {
          const int at = order[static_cast<std::size_t>(role)];
          EXPECT_EQ(roleInRoundOf(at, r, prefill, decode, ranks), role);
          if (role < prefill) ++prefills[static_cast<std::size_t>(at)];
          if (role >= prefill && role < prefill + decode) {
            ++decodes[static_cast<std::size_t>(at)];
            sendersTo[static_cast<std::size_t>(at)].insert(order[static_cast<std::size_t>(role - prefill)]);
          }
        }
      }
      for (int k = 0; k < ranks; ++k) {
        EXPECT_EQ(prefills[static_cast<std::size_t>(k)], 1) << "rank " << k << " of " << ranks << ", cycle " << c;
        EXPECT_EQ(decodes[static_cast<std::size_t>(k)], 1) << "rank " << k << " of " << ranks << ", cycle " << c;
      }
    }
    // Each cycle a new sender for every decode rank, while there are partners left.
    for (int k = 0; k < ranks; ++k)
      EXPECT_EQ(static_cast<int>(sendersTo[static_cast<std::size_t>(k)].size()), std::min(cycles, partnersPossible))
          << "rank " << k << " of " << ranks;
  }
  // Round 0 is the fixed roles, round 1 moves them on by P, round 4 (the second cycle) puts decode 2 x P on.
  EXPECT_EQ(rotatedPositionsOf(0, 2, 2, 8), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(rotatedPositionsOf(1, 2, 2, 8), (std::vector<int>{2, 3, 4, 5, 6, 7, 0, 1}));
  EXPECT_EQ(rotatedPositionsOf(4, 2, 2, 8), (std::vector<int>{0, 1, 4, 5, 2, 3, 6, 7}));
  EXPECT_THROW(ringRoundsOf(2, 2), std::invalid_argument);
  EXPECT_THROW(rotatedPositionsOf(0, 2, 2, 3), std::invalid_argument);
}

TEST(KvPushSchedule, RequestIdsAreUniqueAcrossPrefillRanks) {
  std::set<std::uint64_t> ids;
  for (int p = 0; p < 4; ++p)
    for (int k = 0; k < 9; ++k) EXPECT_TRUE(ids.insert(requestIdOf(p, k, 9)).second);
}

TEST(KvPushSchedule, PoissonArrivalsAreSeededAscendingAndHaveTheRate) {
  const auto a = poissonArrivalOffsetsNs(20000, 1000.0, 42);
  EXPECT_EQ(a, poissonArrivalOffsetsNs(20000, 1000.0, 42));
  EXPECT_NE(a, poissonArrivalOffsetsNs(20000, 1000.0, 43));
  EXPECT_GT(a.front(), 0);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  // Mean gap 1 ms; the standard error over 20000 gaps is 0.7 %.
  const double meanGapNs = static_cast<double>(a.back()) / 20000.0;
  EXPECT_NEAR(meanGapNs, 1e6, 0.03e6);
  // Exponential gaps: about 1/e of them exceed the mean.
  int longer = 0;
  for (std::size_t i = 1; i < a.size(); ++i) longer += (a[i] - a[i - 1]) > 1'000'000;
  EXPECT_NEAR(longer / 20000.0, 0.3679, 0.02);
  EXPECT_NE(arrivalSeedOf(7, 0), arrivalSeedOf(7, 1));
  EXPECT_THROW(poissonArrivalOffsetsNs(3, 0.0, 1), std::invalid_argument);
}

TEST(KvPushSchedule, TagsOfRequestsInFlightNeverCollide) {
  std::set<int> tags;
  for (int s = 0; s < 64; ++s) {
    EXPECT_TRUE(tags.insert(headerTagOf(s)).second);
    EXPECT_TRUE(tags.insert(dataTagOf(s)).second);
    EXPECT_TRUE(tags.insert(controlTagOf(s)).second);
    EXPECT_TRUE(tags.insert(releaseTagOf(s)).second);
  }
  EXPECT_LT(releaseTagOf(tagCycle - 1), 32767);  // MPI guarantees tags up to 32767
  EXPECT_EQ(headerTagOf(tagCycle), headerTagOf(0));
}

TEST(KvPushSchedule, InOrderReceivesFollowIndexThenPrefillAndEachSendersOrder) {
  const int prefills = 3, decodes = 2, perPrefill = 9;
  for (int d = 0; d < decodes; ++d) {
    const auto order = inOrderReceivesOf(d, prefills, decodes, perPrefill);
    for (std::size_t i = 1; i < order.size(); ++i) {
      const auto& a = order[i - 1];
      const auto& b = order[i];
      EXPECT_TRUE(a.index < b.index || (a.index == b.index && a.prefill < b.prefill)) << "position " << i;
    }
    // Exactly the requests this decode rank receives, each sender's in its order.
    for (int p = 0; p < prefills; ++p) {
      std::vector<int> fromP;
      for (const auto& r : order)
        if (r.prefill == p) fromP.push_back(r.index);
      EXPECT_EQ(fromP, requestsFromPrefill(p, d, decodes, perPrefill)) << "decode " << d << " prefill " << p;
    }
  }
  // Many to one: index-major over all prefill ranks.
  const auto one = inOrderReceivesOf(0, 2, 1, 2);
  ASSERT_EQ(one.size(), 4u);
  EXPECT_EQ(one[1].prefill, 1);
  EXPECT_EQ(one[1].index, 0);
  EXPECT_EQ(one[2].prefill, 0);
  EXPECT_EQ(one[2].index, 1);
}

TEST(KvPushWorkers, LaneSlotsHoldControlMessagesThenEveryDataOperation) {
  Shape s;
  s.geometry.layers = 80;
  s.messages = 80 * 2 * 16;
  s.config.strategy = Strategy::layerStream;
  s.config.direction = Direction::pull;
  const auto pullStream = laneSlotsOf(s);
  EXPECT_EQ(pullStream.layers, 80);  // one "layer ready" message slot per layer
  EXPECT_EQ(pullStream.data(), LaneSlots::layerReady + 80);
  EXPECT_EQ(pullStream.perLane(), LaneSlots::layerReady + 80 + 80 * 2 * 16);
  s.config.direction = Direction::pushPut;
  EXPECT_EQ(laneSlotsOf(s).layers, 0);
  EXPECT_EQ(laneSlotsOf(s).perLane(), LaneSlots::layerReady + 80 * 2 * 16);
  EXPECT_LT(LaneSlots::header, LaneSlots::layerReady);
  EXPECT_LT(LaneSlots::control, LaneSlots::layerReady);
  EXPECT_LT(LaneSlots::extra, LaneSlots::layerReady);
}

TEST(KvPushConfig, Llama70bTp8BytesAndMessagesFollowTheLayout) {
  const auto s = load(perBlock);
  const auto c = scenario::configOf<KvPushConfig>(s.tests[0]);
  // 80 layers x (K,V) x 1 kv head per rank x 128 x 2 B = 40 KiB per token.
  EXPECT_EQ(requestBytesPerRank(c, 1024), 1024 * 40 * 1024);
  EXPECT_EQ(s.tests[0].sizes, (std::vector<std::int64_t>{1024 * 40 * 1024, 2048 * 40 * 1024}));
  EXPECT_EQ(messagesPerRequest(c, 1024), 80u * 2u * 64u);
  EXPECT_EQ(blocksForTokens(c, 1000), 63u);  // partial last block counts
  EXPECT_EQ(c.prefillRanks, 2);
  EXPECT_EQ(c.decodeRanks, 2);
  EXPECT_EQ(promptTokensForBytes(c, 2048 * 40 * 1024), 2048);
  // Decode rank: in_flight (1) per prefill rank (2) x 128 blocks.
  EXPECT_EQ(poolBlocksNeeded(c, 2048), 256u);
}

TEST(KvPushConfig, StagedIsOneMessageAndManyToOneIsAllowed) {
  const auto s = load(
      "  - kind: kvpush\n    strategy: staged\n    prefill_ranks: 3\n    decode_ranks: 1\n"
      "    loop: {mode: open, rate: 50, in_flight: 2}\n"
      "    sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [512]}\n");
  const auto c = scenario::configOf<KvPushConfig>(s.tests[0]);
  EXPECT_EQ(messagesPerRequest(c, 512), 1u);
  EXPECT_EQ(c.loop, LoopMode::open);
  EXPECT_DOUBLE_EQ(c.ratePerSecond, 50);
  EXPECT_EQ(poolBlocksNeeded(c, 512), 32u * 2u * 3u);
}

TEST(KvPushConfig, LiteralSizesMustBeTheDerivedBytesAndTheErrorSaysThem) {
  const auto e = loadError("  - kind: kvpush\n    prompt_tokens: [1024]\n    sizes: [1MiB]\n");
  EXPECT_NE(e.find("t.yaml:8:12:"), std::string::npos) << e;
  EXPECT_NE(e.find("[41943040]"), std::string::npos) << e;
  EXPECT_NE(e.find("derive: kv-request"), std::string::npos) << e;
  EXPECT_EQ(loadError("  - kind: kvpush\n    prompt_tokens: [1024]\n    sizes: [41943040]\n"), "");
}

TEST(KvPushConfig, BadKeysAreScenarioErrorsWithPositions) {
  EXPECT_NE(loadError(perBlock + "    direction: pull\n").find("one-sided get"), std::string::npos);
  EXPECT_NE(loadError(perBlock + "    loop: {mode: open}\n").find("needs 'rate'"), std::string::npos);
  EXPECT_NE(loadError(perBlock + "    loop: {mode: closed, rate: 3}\n").find("'mode: open' only"), std::string::npos);
  EXPECT_NE(loadError(perBlock + "    compute_per_layer: 1ms\n").find("applies to 'strategy: layer-stream' only"),
            std::string::npos);
  EXPECT_NE(loadError(perBlock + "    prefill_ranks: 4\n    decode_ranks: 1\n").find("at least one prefill"),
            std::string::npos);
  EXPECT_NE(loadError(perBlock + "    pool_blocks: 10\n").find("too small"), std::string::npos);
  EXPECT_NE(loadError(perBlock + "    prompt_tokens: [8]\n").find("one place"), std::string::npos);
  EXPECT_NE(loadError("  - kind: kvpush\n    sizes: {derive: kv-block, block_tokens: 16}\n").find("kv-request"),
            std::string::npos);
  // kv_heads 8 cannot be split 16 ways.
  const auto e = loadError("  - kind: kvpush\n    parallel: {tp: 16}\n    prompt_tokens: [64]\n    sizes: [1]\n");
  EXPECT_NE(e.find("t.yaml:"), std::string::npos) << e;
}

TEST(KvPushConfig, BlockTokensFromOneTo4096InBothFormsAsTheDocsSay) {
  const auto derived = [](const std::string& n) {
    return "  - kind: kvpush\n    strategy: per-block\n"
           "    sizes: {derive: kv-request, block_tokens: " +
           n + ", prompt_tokens: [8192]}\n";
  };
  const auto given = [](const std::string& n) {
    return "  - kind: kvpush\n    block_tokens: " + n + "\n    prompt_tokens: [8192]\n    sizes: [335544320]\n";
  };
  for (const auto& form : {std::function<std::string(const std::string&)>(derived),
                           std::function<std::string(const std::string&)>(given)}) {
    EXPECT_EQ(loadError(form("4096")), "") << form("4096");
    EXPECT_NE(loadError(form("4097")).find("block_tokens"), std::string::npos) << form("4097");
    EXPECT_NE(loadError(form("0")).find("block_tokens"), std::string::npos) << form("0");
  }
}

TEST(KvPushConfig, RoleRotationIsReadOnceAndRefusedWhereItCannotRun) {
  const auto fixed = scenario::configOf<KvPushConfig>(load(perBlock, 8).tests[0]);
  EXPECT_EQ(fixed.rotation, RoleRotation::fixed);
  EXPECT_EQ(fixed.rounds(), 1);
  // One prefill and one decode rank rotating over the 8 ranks: 8 rounds, the
  // 20 requests spread over them (3 a round, rounded up).
  const auto ring = scenario::configOf<KvPushConfig>(
      load(perBlock + "    role_rotation: ring\n    prefill_ranks: 1\n    decode_ranks: 1\n    requests: 20\n", 8)
          .tests[0]);
  EXPECT_EQ(ring.rotation, RoleRotation::ring);
  EXPECT_EQ(ring.measuringRanks, 8);
  EXPECT_EQ(ring.rounds(), 8);
  EXPECT_EQ(ring.requestsPerRound(), 3);
  EXPECT_STREQ(rotationName(ring.rotation), "ring");
  // The ring run 4 times: 32 rounds of one request each.
  const auto cycles = scenario::configOf<KvPushConfig>(
      load(perBlock + "    role_rotation: ring\n    rotation_cycles: 4\n    prefill_ranks: 1\n    decode_ranks: 1\n"
                      "    requests: 20\n",
           8)
          .tests[0]);
  EXPECT_EQ(cycles.rounds(), 32);
  EXPECT_EQ(cycles.requestsPerRound(), 1);
  EXPECT_NE(loadError(perBlock + "    rotation_cycles: 2\n").find("'role_rotation: ring' only"), std::string::npos);
  const auto bad = loadError(perBlock + "    role_rotation: spiral\n");
  EXPECT_NE(bad.find("t.yaml:9:20:"), std::string::npos) << bad;
  if (FABSCOPE_HAVE_UCX) {
    const auto pull = loadError(perBlock + "    transport: ucx\n    direction: pull\n    role_rotation: ring\n");
    EXPECT_NE(pull.find("two-sided push only"), std::string::npos) << pull;
  }
}

TEST(KvPushConfig, DeviceMemoryRunsTheStagedStrategyOnly) {
  if (!FABSCOPE_HAVE_CUDA) GTEST_SKIP() << "built without CUDA: the loader refuses memory: cuda";
  EXPECT_NE(loadError(perBlock + "    memory: cuda\n").find("staged strategy only"), std::string::npos);
  EXPECT_EQ(loadError("  - kind: kvpush\n    strategy: staged\n    memory: cuda\n"
                      "    sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [64]}\n"),
            "");
  EXPECT_EQ(loadError(perBlock + "    memory: cuda-host\n"), "");
}

TEST(KvPushConfig, OneSidedDirectionsNeedATransportWithPutOrGet) {
  const std::string ucx = perBlock + "    transport: ucx\n";
  if (FABSCOPE_HAVE_UCX) {
    const auto s = load(ucx + "    direction: pull\n");
    EXPECT_EQ(scenario::configOf<KvPushConfig>(s.tests[0]).direction, Direction::pull);
    const auto put = load(ucx + "    direction: push-put\n");
    EXPECT_EQ(scenario::configOf<KvPushConfig>(put.tests[0]).direction, Direction::pushPut);
    // Regions are exposed over every rank: not on part of them.
    EXPECT_NE(loadError(ucx + "    direction: pull\n    ranks: 3\n").find("exposes every rank's KV pool"),
              std::string::npos);
    EXPECT_NE(
        loadError(ucx + "    direction: push-put\n    roles: {canaries: 2}\n").find("exposes every rank's KV pool"),
        std::string::npos);
    if (FABSCOPE_HAVE_CUDA) {
      EXPECT_NE(loadError("  - kind: kvpush\n    strategy: staged\n    memory: cuda\n    transport: ucx\n"
                          "    direction: pull\n"
                          "    sizes: {derive: kv-request, block_tokens: 16, prompt_tokens: [64]}\n")
                    .find("host memory only"),
                std::string::npos);
    }
  }
  EXPECT_EQ(load(perBlock).tests.size(), 1u);
  EXPECT_EQ(scenario::configOf<KvPushConfig>(load(perBlock).tests[0]).direction, Direction::push);
  // MPI has neither: the error names the position of the direction's value.
  const auto pull = loadError(perBlock + "    direction: pull\n");
  EXPECT_NE(pull.find("t.yaml:9:16: 'direction: pull' needs one-sided get, which transport 'mpi'"), std::string::npos)
      << pull;
  EXPECT_NE(loadError(perBlock + "    direction: push-put\n").find("needs one-sided put"), std::string::npos);
  EXPECT_NE(loadError(perBlock + "    direction: sideways\n").find("t.yaml:9:16:"), std::string::npos);
  EXPECT_STREQ(directionName(Direction::pushPut), "push-put");
}

TEST(KvPushConfig, DeviceMemoryTakesEveryStrategyOverADeviceCapableTransport) {
  if (!FABSCOPE_HAVE_CUDA || !FABSCOPE_HAVE_NCCL) GTEST_SKIP() << "built without CUDA/NCCL";
  EXPECT_EQ(loadError(perBlock + "    memory: cuda\n    transport: nccl\n"), "");
  EXPECT_NE(loadError(perBlock + "    memory: cuda\n    transport: mpi\n").find("transport: nccl"), std::string::npos);
  EXPECT_NE(loadError(perBlock + "    memory: cuda\n    transport: nccl\n    direction: pull\n").find("one-sided get"),
            std::string::npos);
  // NCCL bounces small host messages only: the KV itself must be on the GPU.
  EXPECT_NE(loadError(perBlock + "    transport: nccl\n").find("give 'memory: cuda'"), std::string::npos);
  EXPECT_NE(loadError(perBlock + "    transport: nccl\n    memory: cuda-host\n").find("t.yaml:10:13:"),
            std::string::npos);
}

TEST(KvPushConfig, NeighbourConditionsSplitTheRanksIntoWorkersAndCongestors) {
  // Under a condition half the ranks measure (prefill and decode workers) and
  // the others make the load; the quiet instance keeps the same split.
  const auto loaded = load(perBlock + "    conditions: [quiet, incast, bidirectional]\n", 8);
  ASSERT_EQ(loaded.tests.size(), 1u);
  const auto& c = scenario::configOf<KvPushConfig>(loaded.tests[0]);
  EXPECT_EQ(c.prefillRanks, 2);
  EXPECT_EQ(c.decodeRanks, 2);
  EXPECT_EQ(scenario::expandMatrix(loaded).size(), 6u);  // 2 prompts x 3 conditions
  // Roles given: three workers measure, the other five load.
  const auto roles = load(perBlock + "    conditions: [quiet, copy]\n    roles: {canaries: 3}\n", 8);
  EXPECT_EQ(scenario::configOf<KvPushConfig>(roles.tests[0]).participants(), 3);
}

TEST(KvPushConfig, ConditionErrorsNameTheKeyThatCannotBeMet) {
  // More workers than the measuring half: the error is at prefill_ranks.
  const auto tooMany =
      loadError(perBlock + "    conditions: [quiet, incast]\n    prefill_ranks: 2\n    decode_ranks: 2\n");
  EXPECT_NE(tooMany.find("t.yaml:10:20: test 'kvpush-1' needs at least one prefill and one decode rank within its 2 "
                         "measuring ranks"),
            std::string::npos)
      << tooMany;
  EXPECT_NE(tooMany.find("roles: {canaries: N}"), std::string::npos) << tooMany;
  // One-sided directions expose every rank's pool: quiet only, said at 'conditions'.
  const auto pull = loadError(perBlock + "    direction: pull\n    conditions: [quiet, bidirectional]\n");
  EXPECT_NE(pull.find("t.yaml:10:17: 'direction: pull' exposes every rank's KV pool"), std::string::npos) << pull;
  EXPECT_NE(pull.find("'direction: push'"), std::string::npos) << pull;
  // Quiet alone is not a neighbour condition: a pull then fails on the transport only.
  EXPECT_NE(loadError(perBlock + "    direction: pull\n    conditions: [quiet]\n").find("needs one-sided get"),
            std::string::npos);
}

}  // namespace
}  // namespace fabscope
