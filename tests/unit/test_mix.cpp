// The `mix` kind's scenario keys and role split (the serving mix in one
// instance): what the ranks are given, and what is refused at load with the
// file:line:column it comes from.
#include <gtest/gtest.h>

#include "driver/Runner.hpp"
#include "kinds/Registry.hpp"
#include "kinds/mix/MixConfig.hpp"
#include "scenario/Scenario.hpp"

using namespace fabscope;
using suite::mix::checkSplit;
using suite::mix::MixConfig;
using suite::mix::Role;
using suite::mix::RoleSplit;
using suite::mix::TrafficClass;

namespace {

const suite::Registry& registry() {
  static const suite::Registry r;
  return r;
}

scenario::Scenario load(const std::string& text, int ranks) {
  auto s = scenario::loadScenarioText(text, "t.yaml", {}, registry().scenarioRules(ranks));
  driver::planMatrix(s, registry(), ranks);
  return s;
}

std::string errorOf(const std::string& text, int ranks = 8) {
  try {
    load(text, ranks);
  } catch (const scenario::ScenarioError& e) {
    return e.what();
  }
  return "no error";
}

const std::string api = ", clients: 1, rate: 50, requests: 10, request_bytes: 2KiB";

}  // namespace

TEST(MixRoles, SplitInGroupRankOrder) {
  const RoleSplit s{.prefill = 2, .decode = 4, .tp = 2, .frontend = 2};
  EXPECT_EQ(s.used(), 8);
  EXPECT_EQ(s.roleOf(0), Role::prefill);
  EXPECT_EQ(s.roleOf(1), Role::prefill);
  EXPECT_EQ(s.roleOf(2), Role::decode);
  EXPECT_EQ(s.roleOf(5), Role::decode);
  EXPECT_EQ(s.roleOf(6), Role::frontend);
  EXPECT_EQ(s.roleOf(7), Role::frontend);
  EXPECT_EQ(s.roleOf(8), Role::idle);
  // TP groups of consecutive decode ranks.
  EXPECT_EQ(s.tpGroupOf(2), 0);
  EXPECT_EQ(s.tpGroupOf(3), 0);
  EXPECT_EQ(s.tpGroupOf(4), 1);
  EXPECT_EQ(s.tpGroupOf(5), 1);
}

TEST(MixRoles, SplitsTheRanksCannotFillAreRefused) {
  EXPECT_NO_THROW(checkSplit({2, 4, 2, 2}, 8, true, true, 1));
  EXPECT_THROW(checkSplit({2, 4, 2, 2}, 7, true, true, 1), std::invalid_argument);   // 8 ranks needed
  EXPECT_THROW(checkSplit({2, 3, 2, 2}, 8, true, true, 1), std::invalid_argument);   // 3 decode, tp 2
  EXPECT_THROW(checkSplit({0, 4, 2, 2}, 8, true, true, 1), std::invalid_argument);   // kvpush without prefill
  EXPECT_THROW(checkSplit({2, 4, 2, 1}, 8, true, true, 1), std::invalid_argument);   // no api server left
  EXPECT_THROW(checkSplit({2, 0, 1, 2}, 8, true, true, 1), std::invalid_argument);   // no decode
  EXPECT_THROW(checkSplit({2, 4, 2, 2}, 8, false, true, 1), std::invalid_argument);  // idle prefill ranks
  EXPECT_NO_THROW(checkSplit({0, 4, 4, 0}, 4, false, false, 0));
}

TEST(MixScenario, ClassesAndSizesComeFromTheModel) {
  const auto dense = load(
      "model: llama3-70b\ntests:\n  - {kind: mix, sizes: [512], layout: {prefill: 2, decode: 4, tp: 2, "
      "frontend: 2}, decode_batch: 8, kv: {prompt_tokens: 64}" +
          api + "}\n",
      8);
  const auto& c = scenario::configOf<MixConfig>(dense.tests.front());
  EXPECT_TRUE(c.has(TrafficClass::allreduce));
  EXPECT_FALSE(c.has(TrafficClass::alltoall)) << "a dense model has no all-to-all";
  EXPECT_TRUE(c.has(TrafficClass::kvpush));
  EXPECT_TRUE(c.has(TrafficClass::api));
  EXPECT_EQ(c.allreduceBytes, 8 * 8192 * 2);
  // 80 layers x (K, V) x 4 kv heads per rank (8 / tp 2) x 128 x 2 B x 64 tokens
  EXPECT_EQ(c.kvBytesPerRequest, std::int64_t{80} * 2 * 4 * 128 * 2 * 64);
  EXPECT_EQ(c.api.chunkBytes, 512);
  EXPECT_EQ(c.api.clients, 1);
  EXPECT_EQ(c.api.requestBytes, 2048);

  const auto moe = load(
      "model: deepseek-v3\ntests:\n  - {kind: mix, sizes: [512], layout: {prefill: 2, decode: 4, tp: 2, "
      "frontend: 2}" +
          api + "}\n",
      8);
  const auto& m = scenario::configOf<MixConfig>(moe.tests.front());
  EXPECT_TRUE(m.has(TrafficClass::alltoall));
  EXPECT_EQ(m.routing.experts, 256);
  EXPECT_EQ(m.routing.topK, 8);
  EXPECT_EQ(m.dispatchTokenBytes, 7408);
  EXPECT_EQ(m.combineTokenBytes, 7168 * 2);
}

TEST(MixScenario, BadInputIsRefusedAtLoadWithItsPosition) {
  // A model without experts asked for the all-to-all: the class's own position.
  const std::string noExperts =
      "model: llama3-70b\ntests:\n  - {kind: mix, sizes: [512], classes: [allreduce, alltoall], "
      "layout: {decode: 4, tp: 2}}\n";
  EXPECT_NE(errorOf(noExperts).find("t.yaml:3:52: test 'mix-1' (mix): class alltoall routes tokens to experts, but "
                                    "model 'llama3-70b' has no MoE layers"),
            std::string::npos)
      << errorOf(noExperts);
  // A split the ranks cannot fill: 10 ranks asked on 8.
  const std::string tooMany =
      "model: llama3-70b\ntests:\n  - {kind: mix, sizes: [512], layout: {prefill: 4, decode: 4, "
      "tp: 2, frontend: 2}" +
      api + "}\n";
  EXPECT_NE(errorOf(tooMany).find("t.yaml:3:39: test 'mix-1' (mix): the layout needs 4 prefill + 4 decode + 2 "
                                  "front-end = 10 ranks, but the test has 8"),
            std::string::npos)
      << errorOf(tooMany);
  const std::string badTp =
      "model: llama3-70b\ntests:\n  - {kind: mix, sizes: [512], layout: {decode: 3, tp: 2}, "
      "classes: [allreduce]}\n";
  EXPECT_NE(errorOf(badTp).find("3 decode ranks do not split into TP groups of 2"), std::string::npos)
      << errorOf(badTp);
  EXPECT_NE(errorOf("model: llama3-70b\ntests:\n  - {kind: mix, sizes: [512], classes: [allreduce, gossip], layout: "
                    "{decode: 2}}\n")
                .find("t.yaml:3:52: test 'mix-1' (mix): unknown class 'gossip'"),
            std::string::npos);
  EXPECT_NE(errorOf("tests:\n  - {kind: mix, sizes: [512], layout: {decode: 2}}\n")
                .find("t.yaml:2:5: test 'mix-1' (mix): needs a model"),
            std::string::npos);
  EXPECT_NE(errorOf("model: llama3-70b\ntests:\n  - {kind: mix, sizes: [512], classes: [allreduce]}\n")
                .find("needs 'layout:"),
            std::string::npos);
  EXPECT_NE(
      errorOf("model: llama3-70b\ntests:\n  - {kind: mix, sizes: [512], classes: [allreduce], layout: {decode: 2}, "
              "conditions: [quiet, incast]}\n")
          .find("the mix is its own congestion"),
      std::string::npos);
  EXPECT_NE(
      errorOf(
          "model: llama3-70b\ntests:\n  - {kind: mix, sizes: [512, 1KiB], classes: [allreduce], layout: {decode: 2}}\n")
          .find("takes one size"),
      std::string::npos);
}
