#include "kinds/fault/FaultDrillConfig.hpp"

#include "runtime/ShellQuote.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "scenario/TestSource.hpp"
#include "scenario/Units.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::suite {
namespace {

double durationKey(const scenario::TestSpec& spec, const scenario::TestSource& source, const std::string& key,
                   double fallback, double min, double max) {
  const auto node = source.test[key];
  if (!node) return fallback;
  const std::string where = scenario::positionOf(source.file, node) + ": test '" + spec.name + "': " + key;
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

[[noreturn]] void refuse(const scenario::TestSpec& spec, const std::string& key, const std::string& message) {
  throw scenario::ScenarioError(spec.where(key) + ": test '" + spec.name + "': " + message);
}

std::string stringKey(const scenario::TestSpec& spec, const scenario::TestSource& source, const std::string& key) {
  const auto node = source.test[key];
  if (!node) return {};
  if (!node.IsScalar() || node.Scalar().empty())
    throw scenario::ScenarioError(scenario::positionOf(source.file, node) + ": test '" + spec.name + "': " + key +
                                  ": expected a shell command (a non-empty string)");
  return node.Scalar();
}

}  // namespace

std::string expandFaultCommand(const std::string& command, const std::map<std::string, std::string>& values) {
  std::string out;
  for (std::size_t i = 0; i < command.size(); ++i) {
    if (command[i] != '{') {
      out += command[i];
      continue;
    }
    const auto close = command.find('}', i);
    if (close == std::string::npos)
      throw std::invalid_argument("'{' at column " + std::to_string(i + 1) + " is not closed by '}'");
    const auto name = command.substr(i + 1, close - i - 1);
    const auto it = values.find(name);
    if (it == values.end()) {
      std::string known;
      for (const auto& [k, v] : values) known += (known.empty() ? "{" : ", {") + k + "}";
      throw std::invalid_argument("unknown placeholder {" + name + "}; known: " + known);
    }
    // Quoted: a value (a host name, a rank) is one word and can never add shell syntax.
    out += runtime::shellQuoted(it->second);
    i = close;
  }
  return out;
}

FaultDrillConfig readFaultDrillConfig(const scenario::TestSpec& spec, const scenario::TestSource& source) {
  scenario::ParamReader p(spec, source);
  FaultDrillConfig c;
  c.fault = p.choice("fault", {"kill", "hang", "link-down", "loss"}, "kill");
  if (!transport::transportCapabilities(spec.transport).survivesPeerLoss)
    refuse(spec, "transport",
           "a fault drill needs transport: " +
               transport::transportsWith(&transport::TransportCapabilities::survivesPeerLoss) + " (got '" +
               spec.transport +
               "'): the MPI data path cannot survive the loss of a peer (Open MPI aborts or hangs the "
               "communicator), UCX reports it through its endpoint error callback");
  if (spec.memory != "host") refuse(spec, "memory", "a fault drill runs with memory: host");
  if (spec.sizes.size() != 1) refuse(spec, "sizes", "a fault drill takes exactly one size (the reply size)");
  c.replyBytes = spec.sizes.front();
  if (c.replyBytes < 8 || c.replyBytes > (std::int64_t{1} << 20))
    refuse(spec, "sizes", "the reply size must be 8B .. 1MiB");
  c.victim = static_cast<int>(p.integer("victim", 1, 1, 1 << 20));
  c.atSeconds = durationKey(spec, source, "at", 1.0, 0.001, 3600);
  c.detectWithinSeconds = durationKey(spec, source, "detect_within", 2.0, 0.001, 600);
  c.heartbeatSeconds = durationKey(spec, source, "heartbeat", 0.1, 0.001, 60);
  c.heartbeatDeadlineSeconds = durationKey(spec, source, "heartbeat_deadline", 3 * c.heartbeatSeconds, 0.002, 600);
  if (c.heartbeatDeadlineSeconds < 2 * c.heartbeatSeconds)
    refuse(spec, "heartbeat_deadline",
           "heartbeat_deadline must be at least 2 heartbeats (" + std::to_string(2 * c.heartbeatSeconds) +
               " s): one late heartbeat would declare a live peer lost");
  if (c.heartbeatDeadlineSeconds >= c.detectWithinSeconds)
    refuse(spec, "heartbeat_deadline",
           "heartbeat_deadline (" + std::to_string(c.heartbeatDeadlineSeconds) +
               " s) must be shorter than detect_within (" + std::to_string(c.detectWithinSeconds) +
               " s): a hung peer or a dead link is only noticed through missed heartbeats");
  c.requestTimeoutSeconds = durationKey(spec, source, "request_timeout", 2 * c.heartbeatDeadlineSeconds, 0.001, 600);
  c.requests = p.integer("requests", 4000, 1, 1000000);
  c.rate = static_cast<double>(p.integer("rate", 1000, 1, 1000000));
  c.faultCommand = stringKey(spec, source, "fault_command");
  c.restoreCommand = stringKey(spec, source, "restore_command");
  c.commandTimeoutSeconds = durationKey(spec, source, "command_timeout", 10, 0.1, 600);
  if (p.has("loss_percent")) {
    if (c.fault != "loss") refuse(spec, "loss_percent", "loss_percent is for fault: loss");
    c.lossPercent = static_cast<double>(p.integer("loss_percent", 100, 1, 100));
  }
  if (c.usesCommand() && c.faultCommand.empty())
    refuse(spec, "fault",
           "fault: " + c.fault + " needs fault_command: the command that " +
               (c.fault == "loss" ? "makes the victim's link lossy" : "takes the victim's link down") +
               " (e.g. on the emulated cluster 'launch/emulated-cluster " +
               (c.fault == "loss" ? "loss {victim_host} {percent}'" : "link {victim_host} down'") +
               "; on a real cluster a site command such as 'ssh {victim_host} sudo ip link set ib0 down')");
  if (!c.usesCommand() && (!c.faultCommand.empty() || !c.restoreCommand.empty()))
    refuse(spec, c.faultCommand.empty() ? "restore_command" : "fault_command",
           "fault_command and restore_command are for fault: link-down and loss (fault: " + c.fault +
               " acts on the victim process itself)");
  for (const auto* key : {"fault_command", "restore_command"}) {
    const auto& command = std::string(key) == "fault_command" ? c.faultCommand : c.restoreCommand;
    try {
      (void)expandFaultCommand(command, {{"victim_host", "h"}, {"victim_rank", "1"}, {"percent", "1"}});
    } catch (const std::invalid_argument& e) {
      refuse(spec, key, std::string(key) + ": " + e.what());
    }
  }
  const double issueSeconds = static_cast<double>(c.requests) / c.rate;
  if (c.atSeconds >= issueSeconds)
    refuse(spec, "at",
           "the fault at " + std::to_string(c.atSeconds) + " s would come after the last request (" +
               std::to_string(c.requests) + " requests at " + std::to_string(static_cast<long long>(c.rate)) +
               "/s take " + std::to_string(issueSeconds) + " s): raise requests or lower at");
  // The client's loop ends at workloadSeconds; the victim leaves after it,
  // and stopping the workers and writing the file need the rest of the timeout.
  const double needed = c.victimLeavesAfterSeconds() + (c.usesCommand() ? c.commandTimeoutSeconds : 0) + 10;
  if (spec.timeoutSeconds < needed)
    refuse(spec, "timeout",
           "timeout must be at least " + std::to_string(needed) + " s (workload " + std::to_string(c.workloadSeconds()) +
               " s, commands, + 10 s)");
  return c;
}

void checkFaultDrillRanks(const FaultDrillConfig& c, const scenario::TestSpec& spec, int ranks) {
  if (ranks < 4)
    refuse(spec, "ranks", "a fault drill needs at least 4 ranks (client, victim, another worker, spare); it has " +
                                    std::to_string(ranks));
  if (c.victim > ranks - 2)
    refuse(spec, "victim",
           "victim must be a worker, 1 .. " + std::to_string(ranks - 2) + " (0 is the client, " +
               std::to_string(ranks - 1) + " the spare)");
}

std::string mechanismOf(const std::string& path) { return path.substr(0, path.find(':')); }

DetectionJudgement judgeDetections(const std::vector<SurvivorDetection>& survivors, std::int64_t faultNs,
                                   double detectWithinMs, bool detectionRequired) {
  DetectionJudgement j;
  auto ms = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", v);
    return std::string(text);
  };
  for (const auto& s : survivors) {
    const std::string who = "rank " + std::to_string(s.rank);
    if (!j.perSurvivor.empty()) j.perSurvivor += "; ";
    if (s.detectedNs < 0) {
      j.perSurvivor += who + ": not detected";
      if (detectionRequired) j.late += (j.late.empty() ? "" : ", ") + who + " never detected it";
      continue;
    }
    ++j.detected;
    const double after = static_cast<double>(s.detectedNs - faultNs) / 1e6;
    j.slowestMs = std::max(j.slowestMs, after);
    j.perSurvivor += who + ": " + ms(after) + " ms via " + mechanismOf(s.path);
    if (detectionRequired && after > detectWithinMs) j.late += (j.late.empty() ? "" : ", ") + who + " after " + ms(after) + " ms";
  }
  return j;
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
