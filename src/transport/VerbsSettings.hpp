#pragma once
// The verbs transport's settings under the scenario's 'transports: {verbs: ...}':
// the struct, its keys and its parse step, all here, so a new key of the verbs
// transport touches this file (and VerbsTransport.cpp, which acts on it) only.
// The opener (TransportFactory.cpp) hands the struct on whole. Read in every
// build, with libibverbs or without, so a scenario loads the same everywhere.
#include <memory>
#include <string>

#include "scenario/TestSource.hpp"

namespace fabscope::transport {

// transports: {verbs: {max_rd_atomic: N}} (1..255): RDMA reads in flight per
// queue pair; 0 = the limit the two devices agree on.
struct VerbsSettings : scenario::TransportSettings {
  int maxReadsInFlight = 0;
  std::string maxReadsInFlightFrom;  // "file:line:column" that set it

  // Its keys and parse step, for the scenario loader (errors name file:line:column).
  static scenario::TransportRules rules() { return {{"max_rd_atomic"}, "{max_rd_atomic: 4}", parse}; }

  static std::shared_ptr<const scenario::TransportSettings> parse(const scenario::TransportSource& source) {
    auto settings = std::make_shared<VerbsSettings>();
    if (source.has("max_rd_atomic")) {
      settings->maxReadsInFlight = static_cast<int>(source.integer("max_rd_atomic", 1, 255));
      settings->maxReadsInFlightFrom = source.where("max_rd_atomic");
    }
    return settings;
  }
};

}  // namespace fabscope::transport
