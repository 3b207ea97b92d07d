// The --self-test hooks: parsed once from the command line, nothing set unless asked.
#include <gtest/gtest.h>

#include "kinds/SelfTest.hpp"
#include "runtime/Errors.hpp"

namespace fabscope {
namespace {

TEST(SelfTestHooks, NoneUnlessAsked) {
  const auto hooks = suite::parseSelfTestHooks({});
  EXPECT_EQ(hooks.corruptRank, -1);
  EXPECT_FALSE(hooks.kvCorruptFirstRequest);
  EXPECT_FALSE(hooks.kvInOrder);
  EXPECT_FALSE(hooks.apiCorruptRequest);
  EXPECT_FALSE(hooks.apiCorruptChunk);
  EXPECT_EQ(hooks.lateDetectionRank, -1);
}

TEST(SelfTestHooks, ReadsEachHook) {
  const auto hooks = suite::parseSelfTestHooks({"corrupt-rank=2", "kv-corrupt", "kv-in-order"});
  EXPECT_EQ(hooks.corruptRank, 2);
  EXPECT_TRUE(hooks.kvCorruptFirstRequest);
  EXPECT_TRUE(hooks.kvInOrder);
  EXPECT_EQ(suite::parseSelfTestHooks({"corrupt-rank=0"}).corruptRank, 0);
  const auto api = suite::parseSelfTestHooks({"api-corrupt-request", "api-corrupt-chunk", "detect-late=2:1500"});
  EXPECT_TRUE(api.apiCorruptRequest);
  EXPECT_TRUE(api.apiCorruptChunk);
  EXPECT_EQ(api.lateDetectionRank, 2);
  EXPECT_EQ(api.lateDetectionMs, 1500);
}

TEST(SelfTestHooks, RefusesWhatItDoesNotKnow) {
  for (const char* bad : {"corrupt-rank=", "corrupt-rank=-1", "corrupt-rank=2x", "corrupt-rank=two", "kv-corrupt=1",
                          "corrupt", "", "corrupt-rank=+2", "detect-late=2", "detect-late=2:", "detect-late=:5",
                          "detect-late=2:0", "detect-late=x:5", "api-corrupt"}) {
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
