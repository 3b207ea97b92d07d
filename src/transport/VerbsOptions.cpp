#include "transport/VerbsOptions.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "runtime/Errors.hpp"

namespace fabscope::transport::verbs {
namespace {

int integerOption(const std::function<const char*(const char*)>& lookup, const char* name, int fallback, int lo,
                  int hi) {
  const char* text = lookup(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (*end != '\0' || v < lo || v > hi)
    throw UsageError(std::string(name) + "='" + text + "': expected an integer from " + std::to_string(lo) + " to " +
                     std::to_string(hi));
  return static_cast<int>(v);
}

}  // namespace

VerbsOptions verbsOptionsFrom(const std::function<const char*(const char*)>& lookup) {
  VerbsOptions o;
  if (const char* d = lookup("FABSCOPE_VERBS_DEVICE")) o.device = d;
  o.port = integerOption(lookup, "FABSCOPE_VERBS_PORT", o.port, 1, 255);
  const char* gid = lookup("FABSCOPE_VERBS_GID_INDEX");
  if (gid && std::string(gid) != "auto") o.gidIndex = integerOption(lookup, "FABSCOPE_VERBS_GID_INDEX", -1, 0, 255);
  o.timeout = integerOption(lookup, "FABSCOPE_VERBS_TIMEOUT", o.timeout, 0, 31);
  o.retryCount = integerOption(lookup, "FABSCOPE_VERBS_RETRY_CNT", o.retryCount, 0, 7);
  o.maxReadsInFlight = integerOption(lookup, "FABSCOPE_VERBS_MAX_RD_ATOMIC", o.maxReadsInFlight, 1, 255);
  if (o.maxReadsInFlight > 0) o.maxReadsInFlightFrom = "FABSCOPE_VERBS_MAX_RD_ATOMIC";
  return o;
}

void lowerReadsInFlight(VerbsOptions& options, int limit, const std::string& from) {
  if (limit <= 0) return;
  if (options.maxReadsInFlight > 0 && options.maxReadsInFlight <= limit) return;
  options.maxReadsInFlight = limit;
  options.maxReadsInFlightFrom = from;
}

VerbsOptions verbsOptionsFromEnvironment() {
  return verbsOptionsFrom([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
}

double lostPeerSeconds(int timeout, int retryCount) {
  if (timeout == 0) return std::numeric_limits<double>::infinity();
  return 4.096e-6 * std::ldexp(1.0, timeout) * static_cast<double>(retryCount + 1);
}

}  // namespace fabscope::transport::verbs
