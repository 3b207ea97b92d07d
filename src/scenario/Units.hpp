#pragma once
// Sizes and durations as people write them in scenario files.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fabscope::scenario {

// The message size limit: MPI counts are int, and no single message of a
// serving workload comes near it.
inline constexpr std::int64_t maxMessageBytes = std::int64_t{1} << 30;

// "8", "4KiB", "1MiB", "2GiB", "4k"/"4K" (binary), "4kB"/"4MB" (decimal), "512B".
// Throws std::invalid_argument with what was expected.
std::int64_t parseSize(std::string_view text);

// A memory budget: like parseSize but without the message limit.
std::int64_t parseMemorySize(std::string_view text);

// One size or a geometric range: "8..4MiB x2" (factor defaults to 2), "1KiB".
std::vector<std::int64_t> parseSizeList(std::string_view text);

// "500ms", "30s", "2m", "1h", or a plain number of seconds.
double parseDurationSeconds(std::string_view text);

// 8 -> "8B", 4096 -> "4KiB", 1536 -> "1536B", 3*2^20 -> "3MiB".
std::string formatSize(std::int64_t bytes);

}  // namespace fabscope::scenario
