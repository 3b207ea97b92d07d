#include "kinds/SelfTest.hpp"

#include <cstdint>
#include <string>

#include "runtime/Errors.hpp"

namespace fabscope::suite {

SelfTestHooks parseSelfTestHooks(const std::vector<std::string>& values) {
  SelfTestHooks hooks;
  const std::string known = "corrupt-rank=N, kv-corrupt, kv-in-order";
  for (const auto& value : values) {
    const std::string prefix = "corrupt-rank=";
    if (value == "kv-corrupt") {
      hooks.kvCorruptFirstRequest = true;
    } else if (value == "kv-in-order") {
      hooks.kvInOrder = true;
    } else if (value.rfind(prefix, 0) == 0) {
      const std::string number = value.substr(prefix.size());
      std::size_t used = 0;
      long rank = -1;
      try {
        rank = std::stol(number, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != number.size() || rank < 0 || rank > INT32_MAX)
        throw UsageError("--self-test " + value + ": expected corrupt-rank=N with N a rank number (0, 1, ...)");
      hooks.corruptRank = static_cast<int>(rank);
    } else {
      throw UsageError("--self-test " + value + ": unknown hook; known: " + known);
    }
  }
  return hooks;
}

}  // namespace fabscope::suite
