#pragma once
// Factories of the test kinds; Registry.cpp lists them.
#include <memory>

#include "suite/TestKind.hpp"

namespace fabscope::suite {

std::unique_ptr<TestKind> makeLatencyTest();
std::unique_ptr<TestKind> makeBandwidthTest();
std::unique_ptr<TestKind> makeBidirectionalBandwidthTest();
std::unique_ptr<TestKind> makeAllReduceTest();
std::unique_ptr<TestKind> makeIncastTest();
std::unique_ptr<TestKind> makeKvPushTest();
std::unique_ptr<TestKind> makeFaultDrillTest();

}  // namespace fabscope::suite
