#include "kinds/SelfTest.hpp"

#include <cctype>
#include <csignal>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

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

// "A:B" as two whole numbers; either is -1 when it is not one (or no colon).
std::pair<long, long> twoWholeNumbers(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return {-1, -1};
  return {wholeNumber(text.substr(0, colon)), wholeNumber(text.substr(colon + 1))};
}

// The "A:B" after `prefix` in the hook `value`, both whole numbers, else a
// UsageError naming the value and `expected`.
std::pair<int, int> twoIndexesOf(const std::string& value, const std::string& prefix, const char* expected) {
  const auto [a, b] = twoWholeNumbers(value.substr(prefix.size()));
  if (a < 0 || b < 0) throw UsageError("--self-test " + value + ": expected " + expected);
  return {static_cast<int>(a), static_cast<int>(b)};
}

}  // namespace

SelfTestHooks parseSelfTestHooks(const std::vector<std::string>& values) {
  SelfTestHooks hooks;
  const std::string known =
      "corrupt-rank=N, corrupt-sender=N, kv-corrupt, kv-corrupt=P:K, kv-in-order, api-corrupt-request, "
      "api-corrupt-request=C:K, api-corrupt-chunk, api-corrupt-chunk=K:J, detect-late=R:MS, "
      "stop=R:header, stop=R:after-test, stop=R:closing";
  const std::string corruptRank = "corrupt-rank=", corruptSender = "corrupt-sender=", detectLate = "detect-late=",
                    kvCorrupt = "kv-corrupt=", apiRequest = "api-corrupt-request=", apiChunk = "api-corrupt-chunk=",
                    stop = "stop=";
  for (const auto& value : values) {
    if (value == "kv-corrupt") {
      hooks.kvCorrupt = true;
    } else if (value.rfind(kvCorrupt, 0) == 0) {
      std::tie(hooks.kvCorruptPrefill, hooks.kvCorruptRequest) =
          twoIndexesOf(value, kvCorrupt,
                       "kv-corrupt=P:K with P a prefill rank's index (0, 1, ...) and K a request index counting "
                       "warm-up requests from 0 (e.g. kv-corrupt=1:0)");
      hooks.kvCorrupt = true;
    } else if (value == "kv-in-order") {
      hooks.kvInOrder = true;
    } else if (value == "api-corrupt-request") {
      hooks.apiCorruptRequest = true;
    } else if (value.rfind(apiRequest, 0) == 0) {
      std::tie(hooks.apiCorruptRequestClient, hooks.apiCorruptRequestIndex) =
          twoIndexesOf(value, apiRequest,
                       "api-corrupt-request=C:K with C an api client's index (0, 1, ...) and K a request index "
                       "counting warm-up requests from 0 (e.g. api-corrupt-request=1:0)");
      hooks.apiCorruptRequest = true;
    } else if (value == "api-corrupt-chunk") {
      hooks.apiCorruptChunk = true;
    } else if (value.rfind(apiChunk, 0) == 0) {
      std::tie(hooks.apiCorruptChunkRequest, hooks.apiCorruptChunkIndex) =
          twoIndexesOf(value, apiChunk,
                       "api-corrupt-chunk=K:J with K a request index counting warm-up requests from 0 and J a "
                       "chunk index (0, 1, ...), e.g. api-corrupt-chunk=0:2");
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
      const auto [rank, ms] = twoWholeNumbers(value.substr(detectLate.size()));
      if (rank < 0 || ms <= 0)
        throw UsageError("--self-test " + value +
                         ": expected detect-late=R:MS with R a rank number and MS whole milliseconds > 0 "
                         "(e.g. detect-late=2:1500)");
      hooks.lateDetectionRank = static_cast<int>(rank);
      hooks.lateDetectionMs = static_cast<double>(ms);
    } else if (value.rfind(stop, 0) == 0) {
      const auto colon = value.find(':');
      const long rank = colon == std::string::npos ? -1 : wholeNumber(value.substr(stop.size(), colon - stop.size()));
      const std::string point = colon == std::string::npos ? "" : value.substr(colon + 1);
      using enum SelfTestHooks::StopPoint;
      const auto at = point == "header"       ? header
                      : point == "after-test" ? afterTest
                      : point == "closing"    ? closing
                                              : none;
      if (rank < 0 || at == none)
        throw UsageError("--self-test " + value +
                         ": expected stop=R:header, stop=R:after-test or stop=R:closing with R a rank number "
                         "(e.g. stop=1:closing)");
      hooks.stopRank = static_cast<int>(rank);
      hooks.stopAt = at;
    } else {
      throw UsageError("--self-test " + value + ": unknown hook; known: " + known);
    }
  }
  return hooks;
}

void stopIfAsked(const SelfTestHooks& hooks, int rank, SelfTestHooks::StopPoint point) {
  if (hooks.stopRank == rank && hooks.stopAt == point) std::raise(SIGSTOP);
}

}  // namespace fabscope::suite
