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
}

TEST(SelfTestHooks, ReadsEachHook) {
  const auto hooks = suite::parseSelfTestHooks({"corrupt-rank=2", "kv-corrupt", "kv-in-order"});
  EXPECT_EQ(hooks.corruptRank, 2);
  EXPECT_TRUE(hooks.kvCorruptFirstRequest);
  EXPECT_TRUE(hooks.kvInOrder);
  EXPECT_EQ(suite::parseSelfTestHooks({"corrupt-rank=0"}).corruptRank, 0);
}

TEST(SelfTestHooks, RefusesWhatItDoesNotKnow) {
  for (const char* bad : {"corrupt-rank=", "corrupt-rank=-1", "corrupt-rank=2x", "corrupt-rank=two", "kv-corrupt=1",
                          "corrupt", ""}) {
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
