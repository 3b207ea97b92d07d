#include "kinds/SelfTest.hpp"

#include <cctype>
#include <cstdint>
#include <string>

#include "runtime/Errors.hpp"

namespace fabscope::suite {
namespace {

// `text` as a whole number in [0, INT32_MAX]; -1 when it is not one.
long wholeNumber(const std::string& text) {
  std::size_t used = 0;
  long value = -1;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    return -1;
  }
  const bool digitsOnly = used == text.size() && std::isdigit(static_cast<unsigned char>(text[0]));
  if (used == 0 || !digitsOnly || value < 0 || value > INT32_MAX) return -1;
  return value;
}

}  // namespace

SelfTestHooks parseSelfTestHooks(const std::vector<std::string>& values) {
  SelfTestHooks hooks;
  const std::string known =
      "corrupt-rank=N, corrupt-sender=N, kv-corrupt, kv-corrupt=P:K, kv-in-order, api-corrupt-request, "
      "api-corrupt-chunk, "
      "detect-late=R:MS";
  const std::string corruptRank = "corrupt-rank=", corruptSender = "corrupt-sender=", detectLate = "detect-late=",
                    kvCorrupt = "kv-corrupt=";
  for (const auto& value : values) {
    if (value == "kv-corrupt") {
      hooks.kvCorrupt = true;
    } else if (value.rfind(kvCorrupt, 0) == 0) {
      const std::string rest = value.substr(kvCorrupt.size());
      const auto colon = rest.find(':');
      const long prefill = colon == std::string::npos ? -1 : wholeNumber(rest.substr(0, colon));
      const long request = colon == std::string::npos ? -1 : wholeNumber(rest.substr(colon + 1));
      if (prefill < 0 || request < 0)
        throw UsageError("--self-test " + value +
                         ": expected kv-corrupt=P:K with P a prefill rank's index (0, 1, ...) and K a request "
                         "index counting warm-up requests from 0 (e.g. kv-corrupt=1:0)");
      hooks.kvCorrupt = true;
      hooks.kvCorruptPrefill = static_cast<int>(prefill);
      hooks.kvCorruptRequest = static_cast<int>(request);
    } else if (value == "kv-in-order") {
      hooks.kvInOrder = true;
    } else if (value == "api-corrupt-request") {
      hooks.apiCorruptRequest = true;
    } else if (value == "api-corrupt-chunk") {
      hooks.apiCorruptChunk = true;
    } else if (value.rfind(corruptRank, 0) == 0) {
      const long rank = wholeNumber(value.substr(corruptRank.size()));
      if (rank < 0)
        throw UsageError("--self-test " + value + ": expected corrupt-rank=N with N a rank number (0, 1, ...)");
      hooks.corruptRank = static_cast<int>(rank);
    } else if (value.rfind(corruptSender, 0) == 0) {
      const long rank = wholeNumber(value.substr(corruptSender.size()));
      if (rank < 0)
        throw UsageError("--self-test " + value + ": expected corrupt-sender=N with N a rank number (0, 1, ...)");
      hooks.corruptSender = static_cast<int>(rank);
    } else if (value.rfind(detectLate, 0) == 0) {
      const std::string rest = value.substr(detectLate.size());
      const auto colon = rest.find(':');
      const long rank = colon == std::string::npos ? -1 : wholeNumber(rest.substr(0, colon));
      const long ms = colon == std::string::npos ? -1 : wholeNumber(rest.substr(colon + 1));
      if (rank < 0 || ms <= 0)
        throw UsageError("--self-test " + value +
                         ": expected detect-late=R:MS with R a rank number and MS whole milliseconds > 0 "
                         "(e.g. detect-late=2:1500)");
      hooks.lateDetectionRank = static_cast<int>(rank);
      hooks.lateDetectionMs = static_cast<double>(ms);
    } else {
      throw UsageError("--self-test " + value + ": unknown hook; known: " + known);
    }
  }
  return hooks;
}

}  // namespace fabscope::suite
