#pragma once
// Factories of the test kinds; Registry.cpp lists them.
#include <memory>

#include "kinds/Kind.hpp"

namespace fabscope::suite {

std::unique_ptr<Kind> makeLatencyKind();
std::unique_ptr<Kind> makeBandwidthKind();
std::unique_ptr<Kind> makeBidirectionalBandwidthKind();
std::unique_ptr<Kind> makeAllReduceKind();
std::unique_ptr<Kind> makeAllToAllKind();
std::unique_ptr<Kind> makeApiKind();
std::unique_ptr<Kind> makeIncastKind();
std::unique_ptr<Kind> makeKvPushKind();
std::unique_ptr<Kind> makeFaultDrillKind();
std::unique_ptr<Kind> makeMixKind();
std::unique_ptr<Kind> makeReferenceKind();

}  // namespace fabscope::suite
