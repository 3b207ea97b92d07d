// The --self-test hooks: parsed once from the command line, nothing set unless asked.
#include <gtest/gtest.h>

#include "kinds/SelfTest.hpp"
#include "runtime/Errors.hpp"

namespace fabscope {
namespace {

TEST(SelfTestHooks, NoneUnlessAsked) {
  const auto hooks = suite::parseSelfTestHooks({});
  EXPECT_EQ(hooks.corruptRank, -1);
  EXPECT_EQ(hooks.corruptSender, -1);
  EXPECT_FALSE(hooks.kvCorrupt);
  EXPECT_FALSE(hooks.kvInOrder);
  EXPECT_FALSE(hooks.apiCorruptRequest);
  EXPECT_FALSE(hooks.apiCorruptChunk);
  EXPECT_EQ(hooks.lateDetectionRank, -1);
  EXPECT_EQ(hooks.stopRank, -1);
  EXPECT_EQ(hooks.stopAt, suite::SelfTestHooks::StopPoint::none);
}

TEST(SelfTestHooks, StopNamesOneRankAndOneMoment) {
  const auto afterTest = suite::parseSelfTestHooks({"stop=1:after-test"});
  EXPECT_EQ(afterTest.stopRank, 1);
  EXPECT_EQ(afterTest.stopAt, suite::SelfTestHooks::StopPoint::afterTest);
  const auto closing = suite::parseSelfTestHooks({"stop=0:closing"});
  EXPECT_EQ(closing.stopRank, 0);
  EXPECT_EQ(closing.stopAt, suite::SelfTestHooks::StopPoint::closing);
  const auto header = suite::parseSelfTestHooks({"stop=2:header"});
  EXPECT_EQ(header.stopRank, 2);
  EXPECT_EQ(header.stopAt, suite::SelfTestHooks::StopPoint::header);
}

TEST(SelfTestHooks, ReadsEachHook) {
  const auto hooks = suite::parseSelfTestHooks({"corrupt-rank=2", "kv-corrupt", "kv-in-order"});
  EXPECT_EQ(hooks.corruptRank, 2);
  EXPECT_TRUE(hooks.kvCorrupt);
  EXPECT_EQ(hooks.kvCorruptPrefill, 0);
  EXPECT_EQ(hooks.kvCorruptRequest, -1);  // the first measured one, whatever the warm-up
  EXPECT_TRUE(hooks.kvInOrder);
  EXPECT_EQ(suite::parseSelfTestHooks({"corrupt-rank=0"}).corruptRank, 0);
  const auto api = suite::parseSelfTestHooks({"api-corrupt-request", "api-corrupt-chunk", "detect-late=2:1500"});
  EXPECT_TRUE(api.apiCorruptRequest);
  EXPECT_TRUE(api.apiCorruptChunk);
  EXPECT_EQ(api.lateDetectionRank, 2);
  EXPECT_EQ(api.lateDetectionMs, 1500);
}

TEST(SelfTestHooks, CorruptSenderNamesOneRank) {
  EXPECT_EQ(suite::parseSelfTestHooks({"corrupt-sender=3"}).corruptSender, 3);
  EXPECT_EQ(suite::parseSelfTestHooks({"corrupt-sender=0"}).corruptSender, 0);
  EXPECT_EQ(suite::parseSelfTestHooks({"corrupt-sender=3"}).corruptRank, -1);
}

TEST(SelfTestHooks, KvCorruptTakesPrefillAndRequest) {
  const auto hooks = suite::parseSelfTestHooks({"kv-corrupt=2:0"});
  EXPECT_TRUE(hooks.kvCorrupt);
  EXPECT_EQ(hooks.kvCorruptPrefill, 2);
  EXPECT_EQ(hooks.kvCorruptRequest, 0);
  const auto later = suite::parseSelfTestHooks({"kv-corrupt=0:17"});
  EXPECT_EQ(later.kvCorruptPrefill, 0);
  EXPECT_EQ(later.kvCorruptRequest, 17);
}

TEST(SelfTestHooks, ApiHooksTakeAnIndex) {
  const auto plain = suite::parseSelfTestHooks({"api-corrupt-request", "api-corrupt-chunk"});
  EXPECT_EQ(plain.apiCorruptRequestClient, -1);  // every client
  EXPECT_EQ(plain.apiCorruptRequestIndex, -1);   // the first measured request
  EXPECT_EQ(plain.apiCorruptChunkRequest, -1);
  EXPECT_EQ(plain.apiCorruptChunkIndex, 0);
  const auto hooks = suite::parseSelfTestHooks({"api-corrupt-request=1:0", "api-corrupt-chunk=5:3"});
  EXPECT_TRUE(hooks.apiCorruptRequest);
  EXPECT_EQ(hooks.apiCorruptRequestClient, 1);
  EXPECT_EQ(hooks.apiCorruptRequestIndex, 0);
  EXPECT_TRUE(hooks.apiCorruptChunk);
  EXPECT_EQ(hooks.apiCorruptChunkRequest, 5);
  EXPECT_EQ(hooks.apiCorruptChunkIndex, 3);
}

TEST(SelfTestHooks, RefusesWhatItDoesNotKnow) {
  for (const char* bad : {"corrupt-rank=",
                          "corrupt-rank=-1",
                          "corrupt-rank=2x",
                          "corrupt-rank=two",
                          "kv-corrupt=1",
                          "corrupt",
                          "",
                          "corrupt-rank=+2",
                          "detect-late=2",
                          "detect-late=2:",
                          "detect-late=:5",
                          "detect-late=2:0",
                          "detect-late=x:5",
                          "api-corrupt",
                          "kv-corrupt=",
                          "kv-corrupt=1:",
                          "kv-corrupt=:1",
                          "kv-corrupt=-1:0",
                          "kv-corrupt=1:x",
                          "kv-corrupt=1:2:3",
                          "api-corrupt-request=",
                          "api-corrupt-request=1",
                          "api-corrupt-request=-1:0",
                          "api-corrupt-request=0:x",
                          "api-corrupt-chunk=2",
                          "api-corrupt-chunk=:1",
                          "api-corrupt-chunk=1:2:3",
                          "stop=1",
                          "stop=1:",
                          "stop=:closing",
                          "stop=-1:closing",
                          "stop=x:closing",
                          "stop=1:later",
                          "stop=1:headers",
                          "stop=1:closing:2"}) {
    try {
      (void)suite::parseSelfTestHooks({bad});
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--self-test ") + bad + ":"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace fabscope
