#include "suite/FaultDrillConfig.hpp"

#include <algorithm>
#include <stdexcept>

#include "scenario/Units.hpp"

namespace fabscope::suite {
namespace {

double durationKey(const scenario::TestSpec& spec, const std::string& file, const std::string& key, double fallback,
                   double min, double max) {
  const auto node = spec.node[key];
  if (!node) return fallback;
  const std::string where = scenario::positionOf(file, node) + ": test '" + spec.name + "': " + key;
  double seconds = 0;
  try {
    seconds = scenario::parseDurationSeconds(node.Scalar());
  } catch (const std::exception& e) {
    throw scenario::ScenarioError(where + ": expected a duration such as 500ms or 2s, got '" + node.Scalar() +
                                  "' (" + e.what() + ")");
  }
  if (seconds < min || seconds > max)
    throw scenario::ScenarioError(where + ": " + node.Scalar() + " is outside " + std::to_string(min) + " .. " +
                                  std::to_string(max) + " s");
  return seconds;
}

[[noreturn]] void refuse(const scenario::TestSpec& spec, const std::string& file, const std::string& key,
                         const std::string& message) {
  const auto node = spec.node[key] ? spec.node[key] : spec.node;
  throw scenario::ScenarioError(scenario::positionOf(file, node) + ": test '" + spec.name + "': " + message);
}

}  // namespace

FaultDrillConfig readFaultDrillConfig(const scenario::TestSpec& spec, const std::string& file, int ranks) {
  scenario::ParamReader p(spec, file);
  FaultDrillConfig c;
  c.fault = p.choice("fault", {"kill", "hang"}, "kill");
  if (c.fault == "hang")
    refuse(spec, file, "fault",
           "fault: hang is not implemented yet (only kill); a hung victim is caught by the missed-reply path, "
           "but the victim side is not written");
  if (spec.transport != "ucx")
    refuse(spec, file, "transport",
           "a fault drill needs transport: ucx (got '" + spec.transport +
               "'): the MPI data path cannot survive the loss of a peer (Open MPI aborts or hangs the "
               "communicator), UCX reports it through its endpoint error callback");
  if (spec.memory != "host") refuse(spec, file, "memory", "a fault drill runs with memory: host");
  if (spec.sizes.size() != 1) refuse(spec, file, "sizes", "a fault drill takes exactly one size (the reply size)");
  c.replyBytes = spec.sizes.front();
  if (c.replyBytes < 8 || c.replyBytes > (std::int64_t{1} << 20))
    refuse(spec, file, "sizes", "the reply size must be 8B .. 1MiB");
  c.victim = static_cast<int>(p.integer("victim", 1, 1, 1 << 20));
  c.atSeconds = durationKey(spec, file, "at", 1.0, 0.001, 3600);
  c.detectWithinSeconds = durationKey(spec, file, "detect_within", 2.0, 0.001, 600);
  c.heartbeatSeconds = durationKey(spec, file, "heartbeat", 0.1, 0.001, 60);
  c.requests = p.integer("requests", 4000, 1, 1000000);
  c.rate = static_cast<double>(p.integer("rate", 1000, 1, 1000000));
  const double issueSeconds = static_cast<double>(c.requests) / c.rate;
  if (c.atSeconds >= issueSeconds)
    refuse(spec, file, "at",
           "the fault at " + std::to_string(c.atSeconds) + " s would come after the last request (" +
               std::to_string(c.requests) + " requests at " + std::to_string(static_cast<long long>(c.rate)) +
               "/s take " + std::to_string(issueSeconds) + " s): raise requests or lower at");
  // The client's loop ends at workloadSeconds; stopping the workers and
  // writing the file need the rest of the test's timeout.
  if (spec.timeoutSeconds < c.workloadSeconds() + 10)
    refuse(spec, file, "timeout",
           "timeout must be at least the workload (" + std::to_string(c.workloadSeconds()) + " s) + 10 s");
  if (ranks > 0 && ranks < 4)
    refuse(spec, file, "ranks", "a fault drill needs at least 4 ranks (client, victim, another worker, spare); it has " +
                                    std::to_string(ranks));
  if (ranks > 0 && c.victim > ranks - 2)
    refuse(spec, file, "victim",
           "victim must be a worker, 1 .. " + std::to_string(ranks - 2) + " (0 is the client, " +
               std::to_string(ranks - 1) + " the spare)");
  return c;
}

RecoveryResult findRecovery(const std::vector<runtime::Nanoseconds>& completions, runtime::Nanoseconds start,
                            runtime::Nanoseconds faultAt, runtime::Nanoseconds detectedAt,
                            runtime::Nanoseconds window) {
  RecoveryResult r;
  if (faultAt <= start || window <= 0) return r;
  const auto before = std::count_if(completions.begin(), completions.end(),
                                    [&](runtime::Nanoseconds t) { return t >= start && t < faultAt; });
  const double perNs = static_cast<double>(before) / static_cast<double>(faultAt - start);
  r.preFaultPerSecond = perNs * 1e9;
  if (before == 0) return r;
  const double needed = 0.9 * perNs * static_cast<double>(window);
  std::size_t low = 0;
  for (std::size_t high = 0; high < completions.size(); ++high) {
    const auto t = completions[high];
    while (completions[low] <= t - window) ++low;
    // Only windows that start after the detection count: earlier completions
    // were served before the re-route and say nothing about recovery.
    if (t - window < detectedAt) continue;
    if (static_cast<double>(high - low + 1) >= needed) {
      r.recoveredAt = t;
      return r;
    }
  }
  return r;
}

}  // namespace fabscope::suite
