#pragma once
// The MPI transport's settings under the scenario's 'transports: {mpi: ...}':
// the struct, its keys and its parse step, all here, so a new key of the MPI
// transport touches this file (and MpiTransport.cpp, which acts on it) only.
// The opener (TransportFactory.cpp) hands the struct on whole.
#include <memory>
#include <string>

#include "scenario/TestSource.hpp"

namespace fabscope::transport {

// transports: {mpi: {wait: polled|blocking}}: blocking waits in MPI_Wait
// (osu_latency's way, the reply seen sooner) with the watchdog as their only
// deadline; polled (the default) waits in MPI_Test loops that end at the
// test's deadline and let the run go on (docs/transports.md).
struct MpiSettings : scenario::TransportSettings {
  bool blockingWaits = false;
  std::string waitFrom;  // "file:line:column" that set it

  // Its keys and parse step, for the scenario loader (errors name file:line:column).
  static scenario::TransportRules rules() { return {{"wait"}, "{wait: blocking}", parse}; }

  static std::shared_ptr<const scenario::TransportSettings> parse(const scenario::TransportSource& source) {
    auto settings = std::make_shared<MpiSettings>();
    if (source.has("wait")) {
      const std::string wait = source.text("wait");
      if (wait != "polled" && wait != "blocking")
        source.fail("wait", "'wait' is '" + wait + "'; expected polled or blocking");
      settings->blockingWaits = wait == "blocking";
      settings->waitFrom = source.where("wait");
    }
    return settings;
  }
};

}  // namespace fabscope::transport
