#include "kinds/api/ApiConfig.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "kinds/Kind.hpp"
#include "kinds/Roles.hpp"
#include "scenario/TestSource.hpp"
#include "scenario/Units.hpp"

namespace fabscope::suite::api {
namespace {

using scenario::ScenarioError;

std::string seconds(double s) {
  std::ostringstream out;
  out << s << " s";
  return out.str();
}

std::string perSecond(double r) {
  std::ostringstream out;
  out << r << "/s";
  return out.str();
}

double secondsOf(const scenario::ParamReader& p, const scenario::TestSpec& spec, const scenario::TestSource& source,
                 const std::string& key, double fallback, double min, double max) {
  if (!p.has(key)) return fallback;
  const YAML::Node n = source.test[key];
  double v = 0;
  try {
    v = scenario::parseDurationSeconds(n.Scalar());
  } catch (const std::invalid_argument& e) {
    p.fail(key, "'" + key + "' in test '" + spec.name + "': " + e.what());
  }
  if (v < min || v > max)
    p.fail(key, "'" + key + "' in test '" + spec.name + "' is " + n.Scalar() + "; expected " + seconds(min) + " to " +
                    seconds(max));
  return v;
}

std::int64_t bytesOf(const scenario::ParamReader& p, const scenario::TestSpec& spec, const scenario::TestSource& source,
                     const std::string& key, std::int64_t fallback, std::int64_t min, std::int64_t max) {
  if (!p.has(key)) return fallback;
  const YAML::Node n = source.test[key];
  std::int64_t v = 0;
  try {
    v = scenario::parseSize(n.Scalar());  // a message size (parseMemorySize is for budgets of 1MiB and up)
  } catch (const std::invalid_argument& e) {
    p.fail(key, "'" + key + "' in test '" + spec.name + "': " + e.what());
  }
  if (v < min || v > max)
    p.fail(key, "'" + key + "' in test '" + spec.name + "' is " + n.Scalar() + "; expected " +
                    scenario::formatSize(min) + " to " + scenario::formatSize(max));
  return v;
}

}  // namespace

ApiConfig readApiConfig(const scenario::TestSpec& spec, const scenario::TestSource& source) {
  scenario::ParamReader p(spec, source);
  ApiConfig c;
  // The measuring ranks (canaries when the test has congested conditions) split
  // into clients and servers; congestors make the neighbour traffic.
  const int ranks = measuringRanksOf(spec, source.worldSize, 2);
  c.clients = static_cast<int>(p.integer("clients", ranks / 2, 1, 1'000'000));
  if (c.clients >= ranks)
    p.fail("clients", "test '" + spec.name + "' has " + std::to_string(ranks) + " measuring ranks: 'clients: " +
                          std::to_string(c.clients) + "' leaves none to serve (give fewer clients or more ranks)");
  c.ratePerSecond = p.number("rate", 100, 0.001, 1e6);
  c.maxInFlight = static_cast<int>(p.integer("max_in_flight", 8, 1, 10'000));
  c.requests = static_cast<int>(p.integer("requests", 200, 1, 10'000'000));
  c.warmupRequests = static_cast<int>(p.integer("warmup_requests", 10, 0, 10'000'000));
  c.requestBytes = bytesOf(p, spec, source, "request_bytes", 2048, 16, std::int64_t{64} << 20);
  c.chunks = static_cast<int>(p.integer("chunks", 32, 1, 1'000'000));
  // The test's sizes are the chunk sizes (one instance each); run() sets chunkBytes.
  for (const auto bytes : spec.sizes)
    if (bytes > (std::int64_t{16} << 20))
      p.fail("sizes", "test '" + spec.name + "' (api): a size is the bytes of one answer chunk; " +
                          scenario::formatSize(bytes) + " is more than 16MiB");
  c.chunkBytes = spec.sizes.empty() ? 1 : *std::max_element(spec.sizes.begin(), spec.sizes.end());
  c.serviceSeconds = secondsOf(p, spec, source, "service_time", 0.005, 0, 60);
  c.chunkIntervalSeconds = secondsOf(p, spec, source, "chunk_interval", 0.001, 0, 10);
  c.requestTimeoutSeconds = secondsOf(p, spec, source, "request_timeout", 10, 0.001, 3600);
  c.maxConnections = static_cast<int>(p.integer("max_connections", 1024, 1, 100'000));
  const double streamSeconds = c.serviceSeconds + c.chunkIntervalSeconds * (c.chunks - 1);
  if (streamSeconds >= c.requestTimeoutSeconds)
    p.fail(p.has("request_timeout") ? "request_timeout" : "chunks",
           "test '" + spec.name + "': one answer takes " + seconds(streamSeconds) +
               " (service_time + chunk_interval x (chunks - 1)), not less than request_timeout " +
               seconds(c.requestTimeoutSeconds) + ": every request would time out");
  const double planned = (c.totalRequestsPerClient() / c.ratePerSecond) + streamSeconds;
  if (planned >= spec.timeoutSeconds)
    p.fail(p.has("requests") ? "requests" : "rate",
           "test '" + spec.name + "': " + std::to_string(c.totalRequestsPerClient()) + " requests at " +
               perSecond(c.ratePerSecond) + " per client take about " + seconds(planned) +
               ", not less than the test's timeout " + seconds(spec.timeoutSeconds) +
               " (lower requests, raise rate or timeout)");
  if (p.has("interface")) {
    const YAML::Node n = source.test["interface"];
    if (!n.IsScalar() || n.Scalar().empty() || n.Scalar().size() > 15 || n.Scalar().find('/') != std::string::npos)
      p.fail("interface", "'interface' in test '" + spec.name + "' must be a network interface name such as eth1");
    c.interface = n.Scalar();
  }
  c.network = p.choice("network", {"fabric", "frontend"}, "fabric");
  return c;
}

}  // namespace fabscope::suite::api
