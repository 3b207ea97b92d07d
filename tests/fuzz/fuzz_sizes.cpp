// libFuzzer target: the size, size-range and duration parsers behind every
// `sizes:` and `timeout:` of a scenario.
//
// Contract: a result within the documented limits, or std::invalid_argument
// (which the loader turns into a file:line:column message). Anything else is a bug.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "scenario/Units.hpp"

namespace {

[[noreturn]] void bug(const std::string& what, std::string_view input) {
  std::fprintf(stderr, "fuzz_sizes: BUG: %s (input '%.*s')\n", what.c_str(), static_cast<int>(input.size()),
               input.data());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fabscope::scenario;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto bytes = parseSize(text);
    if (bytes < 1 || bytes > maxMessageBytes) bug("parseSize returned " + std::to_string(bytes), text);
    if (parseSize(formatSize(bytes)) != bytes) bug("formatSize does not round-trip " + std::to_string(bytes), text);
  } catch (const std::invalid_argument&) {
  } catch (const std::exception& e) {
    bug(std::string("parseSize threw ") + e.what(), text);
  }
  try {
    const auto sizes = parseSizeList(text);
    if (sizes.empty() || sizes.size() > 65)
      bug("parseSizeList returned " + std::to_string(sizes.size()) + " sizes", text);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] < 1 || sizes[i] > maxMessageBytes)
        bug("parseSizeList returned size " + std::to_string(sizes[i]), text);
      if (i > 0 && sizes[i] <= sizes[i - 1]) bug("parseSizeList is not strictly increasing", text);
    }
  } catch (const std::invalid_argument&) {
  } catch (const std::exception& e) {
    bug(std::string("parseSizeList threw ") + e.what(), text);
  }
  try {
    const double seconds = parseDurationSeconds(text);
    if (!(seconds > 0) || !std::isfinite(seconds))
      bug("parseDurationSeconds returned " + std::to_string(seconds), text);
  } catch (const std::invalid_argument&) {
  } catch (const std::exception& e) {
    bug(std::string("parseDurationSeconds threw ") + e.what(), text);
  }
  return 0;
}
