// Bus factors: nccl-tests' rule for every number of ranks, 0 for one rank.
#include <gtest/gtest.h>

#include <stdexcept>

#include "kinds/collectives/BusFactor.hpp"

namespace fabscope {
namespace {

TEST(BusFactor, AllReduceIsTwoNMinusOneOverN) {
  EXPECT_EQ(suite::allReduceBusFactor(1), 0.0);  // one rank: nothing crosses a link
  EXPECT_EQ(suite::allReduceBusFactor(2), 1.0);
  EXPECT_EQ(suite::allReduceBusFactor(4), 1.5);
  EXPECT_EQ(suite::allReduceBusFactor(8), 1.75);
  EXPECT_THROW(suite::allReduceBusFactor(0), std::invalid_argument);
}

TEST(BusFactor, AllToAllIsNMinusOneOverN) {
  EXPECT_EQ(suite::allToAllBusFactor(1), 0.0);
  EXPECT_EQ(suite::allToAllBusFactor(4), 0.75);
  EXPECT_THROW(suite::allToAllBusFactor(-1), std::invalid_argument);
}

}  // namespace
}  // namespace fabscope
